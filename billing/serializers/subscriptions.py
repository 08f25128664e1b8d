from decimal import Decimal

from rest_framework import serializers

from billing.models import BillingCycle, BillingModel, SubscriptionChange, SubscriptionStatus
from billing.pricing.periods import is_valid_timezone
from billing.serializers.common import INT32_MAX, AllOptional, InstantIn, RefusesFields
from core.fields import DecimalIn, DecimalNumber, Flag, JsonObjectIn, Text, UuidIn, refuse_unknown_fields

FIXED_AT_CREATION = ("Cannot be changed after creation; to bill on another schedule, end the subscription and "
                     "create a new one.")
COMPUTED_PERIOD = "The current billing period is computed from startDate and the billing cycle; it cannot be set."


class TimezoneIn(serializers.CharField):
    """An IANA time zone name ("Europe/Paris")."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 64)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        name = super().to_internal_value(data)
        if not is_valid_timezone(name):
            raise serializers.ValidationError(f"Unknown time zone {name!r}; use an IANA name such as Europe/Paris.")
        return name


class SubscriptionCreateIn(RefusesFields, serializers.Serializer):
    refused = {"currentPeriodStart": COMPUTED_PERIOD, "currentPeriodEnd": COMPUTED_PERIOD}

    name = Text(max_length=255)
    planId = UuidIn(source="plan_id")
    agentId = UuidIn(source="agent_id")
    customerId = UuidIn(source="customer_id")
    startDate = InstantIn(source="start_date")
    status = serializers.ChoiceField(choices=SubscriptionStatus.choices, required=False)
    billingCycle = serializers.ChoiceField(source="billing_cycle", choices=BillingCycle.choices, required=False,
                                           default=BillingCycle.MONTHLY)
    billingModel = serializers.ChoiceField(source="billing_model", choices=BillingModel.choices, required=False,
                                           default=BillingModel.SUBSCRIPTION)
    netTerms = serializers.IntegerField(source="net_terms", min_value=0, max_value=3650, required=False, default=30)
    endDate = InstantIn(source="end_date", period_end=True, required=False, allow_null=True, default=None)
    isForever = Flag(source="is_forever", required=False, default=False)
    subscriptionDetails = JsonObjectIn(source="subscription_details", required=False, default=dict)
    seatsCount = serializers.IntegerField(source="seats_count", min_value=0, max_value=INT32_MAX, required=False,
                                         default=0)
    customCycleDays = serializers.IntegerField(source="custom_cycle_days", min_value=1, max_value=3660,
                                               required=False, allow_null=True, default=None)
    proratedAmount = DecimalIn(source="prorated_amount", min_value=Decimal(0), required=False, allow_null=True,
                               default=None)
    timezone = TimezoneIn(required=False)  # default: the customer's time zone
    billingDay = serializers.IntegerField(source="billing_day", min_value=1, max_value=31, required=False,
                                          allow_null=True, default=None)
    invoiceMemo = Text(source="invoice_memo", max_length=5000, required=False, allow_blank=True,
                       default="")
    metadata = JsonObjectIn(required=False, default=dict)


class SubscriptionUpdateIn(AllOptional, SubscriptionCreateIn):
    refused = {
        "startDate": FIXED_AT_CREATION,
        "currentPeriodStart": FIXED_AT_CREATION,
        "currentPeriodEnd": FIXED_AT_CREATION,
        "billingCycle": FIXED_AT_CREATION,
        "customCycleDays": FIXED_AT_CREATION,
        "customerId": "A subscription cannot move to another customer; end it and create a new one.",
    }
    # Refused above; unset so the schema does not offer them.
    startDate = billingCycle = customCycleDays = customerId = None


class SubscriptionInvoiceDatesIn(RefusesFields, serializers.Serializer):
    """When future invoices are generated: from the next period on, never the current one."""

    # The spec's fixed fields are refused on every PATCH of a subscription, this route's included (read as a way to
    # move the period, they were dropped without a word).
    refused = {"startDate": FIXED_AT_CREATION, "currentPeriodStart": FIXED_AT_CREATION,
               "currentPeriodEnd": FIXED_AT_CREATION}

    billingDay = serializers.IntegerField(source="billing_day", min_value=1, max_value=31, required=False,
                                          allow_null=True)
    timezone = TimezoneIn(required=False)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Send billingDay, timezone or both.")
        return attrs


class SubscriptionChangePlanIn(serializers.Serializer):
    """Move a subscription to another plan of its agent at an instant (default now)."""

    planId = UuidIn(source="plan_id", help_text="The new plan; it must be linked to the subscription's agent.")
    effectiveAt = InstantIn(source="effective_at", required=False, allow_null=True, default=None,
                            help_text="When the change takes effect (default now); a bare date is local midnight "
                                      "in the subscription's time zone. May be in the past unless a finalized "
                                      "invoice bills that period.")
    seatsCount = serializers.IntegerField(source="seats_count", min_value=0, max_value=INT32_MAX, required=False,
                                         allow_null=True, default=None,
                                         help_text="Seats on the new plan (default: the current seats).")
    name = Text(max_length=255, required=False, allow_null=True, default=None,
                help_text="The new subscription's name (default: the current name).")

    def validate(self, attrs):
        refuse_unknown_fields(self)
        return attrs


class SubscriptionOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    planId = serializers.UUIDField(source="plan_id")
    agentId = serializers.UUIDField(source="agent_id")
    customerId = serializers.UUIDField(source="customer_id")
    startDate = serializers.DateTimeField(source="start_date")
    status = serializers.CharField()
    billingCycle = serializers.CharField(source="billing_cycle")
    billingModel = serializers.CharField(source="billing_model")
    netTerms = serializers.IntegerField(source="net_terms")
    endDate = serializers.DateTimeField(source="end_date", allow_null=True)
    isForever = serializers.BooleanField(source="is_forever")
    subscriptionDetails = serializers.JSONField(source="subscription_details")
    seatsCount = serializers.IntegerField(source="seats_count")
    customCycleDays = serializers.IntegerField(source="custom_cycle_days", allow_null=True)
    proratedAmount = DecimalNumber(source="prorated_amount", allow_null=True)
    timezone = serializers.CharField()
    billingDay = serializers.IntegerField(source="billing_day", allow_null=True)
    invoiceMemo = serializers.CharField(source="invoice_memo")
    metadata = serializers.JSONField()
    currentPeriodStart = serializers.DateTimeField(source="current_period_start", allow_null=True)
    currentPeriodEnd = serializers.DateTimeField(source="current_period_end", allow_null=True)
    previousSubscriptionId = serializers.UUIDField(source="previous_subscription_id", allow_null=True,
                                                   help_text="The subscription a plan change replaced with this one.")
    nextSubscriptionId = serializers.UUIDField(source="next_subscription_id", allow_null=True,
                                               help_text="The subscription a plan change continues this one as "
                                                         "(from this one's endDate).")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class SubscriptionChangeOut(serializers.Serializer):
    id = serializers.UUIDField()
    subscriptionId = serializers.UUIDField(source="subscription_id")
    kind = serializers.ChoiceField(choices=SubscriptionChange.Kind.choices)
    summary = serializers.CharField()
    changes = serializers.JSONField(help_text="{field: {before, after}}, values as the API renders them")
    strategyId = serializers.UUIDField(source="strategy_id", allow_null=True)
    actor = serializers.CharField(help_text="api-key:<id> or system")
    createdAt = serializers.DateTimeField(source="created_at")
