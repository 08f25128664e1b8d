from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from billing.models import BillingFrequency, ChargeType, PricingModel
from billing.serializers.common import AllOptional
from core.fields import DecimalIn, DecimalNumber, Flag, Text, UuidIn
from core.serialization import decimal_number

ZERO = Decimal(0)


class TierIn(serializers.Serializer):
    lower = DecimalIn(min_value=ZERO)
    upper = DecimalIn(min_value=ZERO, required=False, allow_null=True, default=None)  # null: open-ended
    rate = DecimalIn(min_value=ZERO)


class StrategyIn(serializers.Serializer):
    name = Text(max_length=255)
    agentId = UuidIn(source="agent_id")
    chargeType = serializers.ChoiceField(source="charge_type", choices=ChargeType.choices)
    signalId = UuidIn(source="signal_id", required=False, allow_null=True, default=None)
    pricingModel = serializers.ChoiceField(source="pricing_model", choices=PricingModel.choices, required=False,
                                           allow_null=True, default=None)
    billingFrequency = serializers.ChoiceField(source="billing_frequency", choices=BillingFrequency.choices,
                                               required=False, default=BillingFrequency.MONTHLY)
    # The list may be null (no tiers), a tier in it may not: `TierIn(many=True, allow_null=True)` passed allow_null
    # on to each tier, and a null tier reached the tier rules.
    tiers = serializers.ListSerializer(child=TierIn(), required=False, allow_null=True, default=list)
    rate = DecimalIn(min_value=ZERO, required=False, allow_null=True, default=None)
    minimumCommitment = DecimalIn(source="minimum_commitment", min_value=ZERO, required=False, allow_null=True,
                                  default=None)
    active = Flag(required=False, default=True)
    tags = serializers.ListField(child=Text(max_length=255), required=False, default=list)


class StrategyPatchIn(AllOptional, StrategyIn):
    """Any strategy field; the merged strategy is checked again as a whole."""


class StrategyBatchUpdateIn(StrategyPatchIn):
    still_required = ("id",)

    id = UuidIn()


class StrategyBatchChangesIn(serializers.Serializer):
    new = StrategyIn(many=True, required=False, default=list)
    update = StrategyBatchUpdateIn(many=True, required=False, default=list)


class StrategyBatchIn(serializers.Serializer):
    strategies = StrategyBatchChangesIn()


@extend_schema_field({"type": "array", "items": {"type": "object", "properties": {
    "lower": {"type": "number"}, "upper": {"type": "number", "nullable": True}, "rate": {"type": "number"}}}})
class TiersOut(serializers.Field):
    """Stored tiers (decimal strings, exact) as JSON numbers."""

    def __init__(self, **kwargs):
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, tiers):
        return [{"lower": decimal_number(Decimal(tier["lower"])),
                 "upper": None if tier["upper"] is None else decimal_number(Decimal(tier["upper"])),
                 "rate": decimal_number(Decimal(tier["rate"]))} for tier in tiers]


class StrategyOut(serializers.Serializer):
    id = serializers.UUIDField()
    planId = serializers.UUIDField(source="plan_id")
    name = serializers.CharField()
    agentId = serializers.UUIDField(source="agent_id")
    chargeType = serializers.CharField(source="charge_type")
    signalId = serializers.UUIDField(source="signal_id", allow_null=True)
    pricingModel = serializers.CharField(source="pricing_model", allow_null=True)
    billingFrequency = serializers.CharField(source="billing_frequency")
    tiers = TiersOut()
    rate = DecimalNumber(allow_null=True)
    minimumCommitment = DecimalNumber(source="minimum_commitment", allow_null=True)
    active = serializers.BooleanField()
    tags = serializers.ListField(child=serializers.CharField())
    deletedAt = serializers.DateTimeField(source="deleted_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class StrategyBatchOut(serializers.Serializer):
    created = StrategyOut(many=True)
    updated = StrategyOut(many=True)
