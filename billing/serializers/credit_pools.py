from rest_framework import serializers

from core.fields import DecimalIn, DecimalNumber, Flag, Text, UuidIn

MAX_PERCENT = 100


class CreditBalanceQueryIn(serializers.Serializer):
    customerId = UuidIn(source="customer_id", required=False)
    agentId = UuidIn(source="agent_id", required=False)
    belowPercent = DecimalIn(source="below_percent", required=False, min_value=-MAX_PERCENT, max_value=MAX_PERCENT,
                             help_text="-100 to 100: pools with this percent or less left (0: at or past zero)")


class CreditBalanceOut(serializers.Serializer):
    subscriptionId = serializers.UUIDField(source="subscription.id")
    subscriptionName = serializers.CharField(source="subscription.name")
    customerId = serializers.UUIDField(source="subscription.customer_id")
    customerName = serializers.CharField(source="subscription.customer.name", allow_null=True)
    customerExternalId = serializers.CharField(source="subscription.customer.external_id", allow_null=True)
    agentId = serializers.UUIDField(source="subscription.agent_id")
    planId = serializers.UUIDField(source="subscription.plan_id")
    planName = serializers.CharField(source="subscription.plan.name", allow_null=True)
    poolSizeUnits = DecimalNumber(source="pool.size")
    consumedUnits = DecimalNumber(source="consumed_units")
    remainingUnits = DecimalNumber(source="remaining_units")
    overageInProgressUnits = DecimalNumber(source="overage_in_progress_units")
    remainingPercent = DecimalNumber(source="remaining_percent")
    overageRatePerUnit = DecimalNumber(source="pool.overage_rate", allow_null=True)
    periodStart = serializers.DateTimeField(source="period_start", allow_null=True)
    periodEnd = serializers.DateTimeField(source="period_end", allow_null=True)
    alertsPaused = serializers.BooleanField(source="subscription.pool_alerts_paused")
    noActivePeriod = serializers.BooleanField(source="no_active_period")
    implicitFullPool = serializers.BooleanField(source="implicit_full_pool")


class CreditBalanceListOut(serializers.Serializer):
    balances = CreditBalanceOut(many=True)
    asOf = serializers.DateTimeField(source="as_of")


class CreditTopupIn(serializers.Serializer):
    units = DecimalIn(help_text="units to add, greater than 0")
    idempotencyKey = Text(source="idempotency_key", max_length=255, trim_whitespace=False)
    note = Text(max_length=1000, required=False, allow_blank=True, allow_null=True, default="",
                trim_whitespace=False)

    def validate_units(self, value):
        if value <= 0:
            raise serializers.ValidationError("Must be greater than 0.")
        return value

    def validate_idempotencyKey(self, value):
        if not value.strip():
            raise serializers.ValidationError("Must not be blank.")
        return value

    def validate_note(self, value):
        return value or ""


class CreditTopupOut(serializers.Serializer):
    grantId = serializers.UUIDField(source="grant.id")
    subscriptionId = serializers.UUIDField(source="grant.subscription_id")
    unitsAdded = DecimalNumber(source="grant.units")
    idempotencyKey = serializers.CharField(source="grant.idempotency_key")
    note = serializers.CharField(source="grant.note")
    createdBy = serializers.CharField(source="grant.created_by")
    createdAt = serializers.DateTimeField(source="grant.created_at")
    created = serializers.BooleanField()
    remainingUnits = DecimalNumber(source="remaining_units")


class CreditAlertsPauseIn(serializers.Serializer):
    paused = Flag(help_text="true silences the pool's alert emails, false resumes them")


class CreditAlertsPauseOut(serializers.Serializer):
    subscriptionId = serializers.UUIDField(source="id")
    alertsPaused = serializers.BooleanField(source="pool_alerts_paused")
    updatedAt = serializers.DateTimeField(source="updated_at")
