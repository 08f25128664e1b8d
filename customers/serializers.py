from rest_framework import serializers

from config.core.serialization import DecimalText


class UsageEventOut(serializers.Serializer):
    """A row of `GET /v1/events`: `usageCost` and `quantity` are decimal strings (spec §2)."""

    id = serializers.UUIDField()
    rawEventId = serializers.UUIDField(source="raw_event_id")
    customerId = serializers.UUIDField(source="customer_id")
    customerExternalId = serializers.CharField(source="customer_external_id")
    agentId = serializers.UUIDField(source="agent_id", allow_null=True)
    agentCode = serializers.CharField(source="agent_code")
    signalId = serializers.UUIDField(source="signal_id", allow_null=True)
    signalName = serializers.CharField(source="signal_name")
    model = serializers.CharField(allow_null=True)
    modelProvider = serializers.CharField(source="model_provider", allow_null=True)
    serviceId = serializers.UUIDField(source="service_id", allow_null=True)
    services = serializers.JSONField(allow_null=True)
    inputTokens = serializers.IntegerField(source="input_tokens", allow_null=True)
    outputTokens = serializers.IntegerField(source="output_tokens", allow_null=True)
    cacheReadTokens = serializers.IntegerField(source="cache_read_tokens", allow_null=True)
    cacheWriteTokens = serializers.IntegerField(source="cache_write_tokens", allow_null=True)
    quantity = DecimalText()
    usageCost = DecimalText(source="usage_cost", allow_null=True)
    eventStatus = serializers.CharField(source="event_status")
    usageDate = serializers.DateTimeField(source="usage_date")
    environment = serializers.CharField(allow_null=True)
    idempotencyKey = serializers.CharField(source="idempotency_key", allow_null=True)
    metadata = serializers.JSONField()
    createdAt = serializers.DateTimeField(source="created_at")


class ModelMapIn(serializers.Serializer):
    model = serializers.CharField(max_length=255, help_text="the unknown model name, as events send it")
    modelProvider = serializers.CharField(source="model_provider", max_length=100)
    serviceId = serializers.UUIDField(source="service_id", help_text="an active catalog entry")


class ModelAliasOut(serializers.Serializer):
    id = serializers.UUIDField()
    model = serializers.CharField()
    modelProvider = serializers.CharField(source="model_provider")
    serviceId = serializers.UUIDField(source="service_id")
    serviceCanonicalName = serializers.CharField(source="service.canonical_name")
    serviceProvider = serializers.CharField(source="service.provider")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class BackfillOut(serializers.Serializer):
    eventsWaiting = serializers.IntegerField(source="events_waiting")
    eventsPriced = serializers.IntegerField(source="events_priced")
    scheduled = serializers.BooleanField()


class ModelMapOut(serializers.Serializer):
    mapping = ModelAliasOut(source="alias")
    created = serializers.BooleanField()
    backfill = BackfillOut(source="*")
