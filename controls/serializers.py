from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import clock
from core.errors import ApiError
from core.fields import DecimalIn, DecimalNumber, Flag, Text, UuidIn
from controls.models import (DEFAULT_ALERT_THRESHOLDS, PROVIDER_SCOPE_ALL, AlertMetric, CapMode, CapPeriod,
                             CapScope, WindowMode)

MAX_ALERT_THRESHOLDS = 5
MAX_THRESHOLD_PERCENT = 1000
MAX_COOL_OFF_HOURS = 24 * 365


class OnlyListedFields(serializers.Serializer):
    """Refuses body keys that are not fields (PATCH bodies whose other fields are fixed)."""

    fixed_message = "Cannot be changed"

    def validate(self, attrs):
        allowed = ", ".join(self.fields)
        unknown = [key for key in self.initial_data if key not in self.fields]
        if unknown:
            raise serializers.ValidationError(
                {key: f"{self.fixed_message}; only {allowed} can be sent." for key in unknown})
        return super().validate(attrs)


def positive(value):
    if value <= 0:
        raise serializers.ValidationError("Must be a positive number.")
    return value


class ThresholdsIn(serializers.ListField):
    def __init__(self, **kwargs):
        super().__init__(child=serializers.IntegerField(min_value=1, max_value=MAX_THRESHOLD_PERCENT),
                         max_length=MAX_ALERT_THRESHOLDS, **kwargs)

    def to_internal_value(self, data):
        thresholds = super().to_internal_value(data)
        if any(later <= earlier for earlier, later in zip(thresholds, thresholds[1:])):
            raise serializers.ValidationError("Whole percents must be strictly increasing, e.g. [50, 80, 100].")
        return thresholds


# --------------------------------------------------------------------------- spend caps

class SpendCapCreateIn(serializers.Serializer):
    scope = serializers.ChoiceField(choices=CapScope.choices)
    scopeValue = serializers.EmailField(source="scope_value", max_length=255, required=False, allow_null=True)
    providerScope = Text(source="provider_scope")
    amountUsd = DecimalIn(source="amount_usd", validators=[positive])
    period = serializers.ChoiceField(choices=CapPeriod.choices)
    mode = serializers.ChoiceField(choices=CapMode.choices)
    coolOffHours = serializers.IntegerField(source="cool_off_hours", required=False, allow_null=True, min_value=0,
                                            max_value=MAX_COOL_OFF_HOURS)
    alertThresholds = ThresholdsIn(source="alert_thresholds", required=False,
                                   help_text=f"Default {list(DEFAULT_ALERT_THRESHOLDS)}.")

    def validate(self, attrs):
        if attrs["scope"] == CapScope.DEV and not attrs.get("scope_value"):
            raise serializers.ValidationError({"scopeValue": "Required for a dev cap: the developer's email."})
        if attrs["scope"] == CapScope.ORG and attrs.get("scope_value") is not None:
            raise serializers.ValidationError({"scopeValue": "Must be omitted for an org cap (it covers everyone)."})
        if attrs["provider_scope"] != PROVIDER_SCOPE_ALL:
            raise serializers.ValidationError({"providerScope": "Must be all: caps cover all AI tools for now."})
        return attrs


class SpendCapUpdateIn(OnlyListedFields):
    fixed_message = "Fixed at create (delete the cap and create another to change it)"

    amountUsd = DecimalIn(source="amount_usd", validators=[positive])
    period = serializers.ChoiceField(choices=CapPeriod.choices)
    mode = serializers.ChoiceField(choices=CapMode.choices)
    coolOffHours = serializers.IntegerField(source="cool_off_hours", allow_null=True, min_value=0,
                                            max_value=MAX_COOL_OFF_HOURS)
    alertThresholds = ThresholdsIn(source="alert_thresholds")


class SpendCapOut(serializers.Serializer):
    id = serializers.UUIDField()
    scope = serializers.CharField()
    scopeValue = serializers.CharField(source="scope_value", allow_null=True)
    providerScope = serializers.CharField(source="provider_scope")
    amountUsd = DecimalNumber(source="amount_usd")
    period = serializers.CharField()
    mode = serializers.CharField()
    coolOffHours = serializers.IntegerField(source="cool_off_hours", allow_null=True)
    alertThresholds = serializers.ListField(source="alert_thresholds", child=serializers.IntegerField())
    createdByUserId = serializers.CharField(source="created_by_user_id")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
    sentence = serializers.CharField()


class SpendCapDeletedOut(serializers.Serializer):
    deleted = serializers.BooleanField()
    sentence = serializers.CharField()


# --------------------------------------------------------------------------- spend, devices, coverage, check

class SpendQueryIn(serializers.Serializer):
    period = serializers.ChoiceField(choices=CapPeriod.choices, default=CapPeriod.MONTH)
    customerExternalId = Text(source="customer_external_id", max_length=255, required=False)


class SpendTotalsOut(serializers.Serializer):
    spentUsd = DecimalNumber(source="spent_usd", allow_null=True)
    eventCount = serializers.IntegerField(source="event_count")
    unpricedEventCount = serializers.IntegerField(source="unpriced_event_count")


class DevSpendOut(SpendTotalsOut):
    customerExternalId = serializers.CharField(source="customer_external_id")


class WindowOut(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField()


class SpendOut(serializers.Serializer):
    period = serializers.CharField()
    window = WindowOut()
    asOf = serializers.DateTimeField(source="as_of")
    org = SpendTotalsOut()
    dev = DevSpendOut(required=False, help_text="Present when customerExternalId is given.")

    def to_representation(self, instance):
        body = super().to_representation(instance)
        if body.get("dev") is None:
            body.pop("dev", None)
        return body


class HeartbeatIn(serializers.Serializer):
    customerExternalId = serializers.EmailField(source="customer_external_id", max_length=255)
    deviceId = Text(source="device_id", max_length=255)
    armed = Flag()


class DeviceOut(serializers.Serializer):
    customerExternalId = serializers.CharField(source="customer_external_id")
    deviceId = serializers.CharField(source="device_id")
    armed = serializers.BooleanField()
    lastSeenAt = serializers.DateTimeField(source="last_seen_at")


class CoverageOut(serializers.Serializer):
    armed = serializers.IntegerField()
    total = serializers.IntegerField()
    asOf = serializers.DateTimeField(source="as_of", allow_null=True)


class CheckQueryIn(serializers.Serializer):
    customerExternalId = Text(source="customer_external_id", max_length=255)


class CheckOut(serializers.Serializer):
    allowed = serializers.BooleanField()
    reason = serializers.CharField(allow_null=True)
    capId = serializers.CharField(source="cap_id", allow_null=True)
    coolOffUntil = serializers.DateTimeField(source="cool_off_until", allow_null=True)


# --------------------------------------------------------------------------- customer alerts

@extend_schema_field(OpenApiTypes.DATETIME)
class InstantIn(serializers.Field):
    """An ISO 8601 date or timestamp as an aware UTC instant (no offset means UTC)."""

    def to_internal_value(self, data):
        try:
            return clock.parse_instant(data, field=self.field_name)
        except ApiError:
            raise serializers.ValidationError("Not a valid ISO 8601 date or timestamp.")


class WindowEndIn(InstantIn):
    """The exclusive end of a window: a bare date is inclusive (the window runs to the next midnight) and
    `...T23:59:59` means the following midnight."""

    def to_internal_value(self, data):
        end = super().to_internal_value(data)  # refuses what is not a date or timestamp
        # Read as every window end is: the last second of a day in the offset it was written in.
        return clock.parse_window_end(data, field=self.field_name) if isinstance(data, str) else end


class CustomerAlertCreateIn(serializers.Serializer):
    customerId = UuidIn(source="customer_id")
    metric = serializers.ChoiceField(choices=AlertMetric.choices)
    thresholdUsd = DecimalIn(source="threshold_usd", validators=[positive])
    windowMode = serializers.ChoiceField(source="window_mode", choices=WindowMode.choices)
    customStartDate = InstantIn(source="custom_start", required=False, allow_null=True)
    customEndDate = WindowEndIn(source="custom_end", required=False, allow_null=True)
    notifyEmail = serializers.EmailField(source="notify_email", max_length=255)


class CustomerAlertUpdateIn(OnlyListedFields):
    fixed_message = "Fixed at create (customer and recipient cannot change)"

    metric = serializers.ChoiceField(choices=AlertMetric.choices)
    thresholdUsd = DecimalIn(source="threshold_usd", validators=[positive])
    windowMode = serializers.ChoiceField(source="window_mode", choices=WindowMode.choices)
    customStartDate = InstantIn(source="custom_start", allow_null=True)
    customEndDate = WindowEndIn(source="custom_end", allow_null=True)


class CustomerAlertOut(serializers.Serializer):
    id = serializers.UUIDField()
    customerId = serializers.UUIDField(source="customer_id")
    customerName = serializers.CharField(source="customer.name")
    customerExternalId = serializers.CharField(source="customer.external_id", allow_null=True)
    metric = serializers.CharField()
    thresholdUsd = DecimalNumber(source="threshold_usd")
    windowMode = serializers.CharField(source="window_mode")
    customStartDate = serializers.DateTimeField(source="custom_start", allow_null=True)
    customEndDate = serializers.DateTimeField(source="custom_end", allow_null=True)
    recipientEmail = serializers.CharField(source="recipient_email")
    createdByUserId = serializers.CharField(source="created_by_user_id")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class CustomerAlertDeletedOut(serializers.Serializer):
    deleted = serializers.BooleanField()
    id = serializers.UUIDField()
