from rest_framework import serializers

from billing.record_validation import MAX_QUANTITY, MAX_TOKENS


# --- POST /v1/usage/record (documentation of the shapes; the hot path validates in record_validation.py)

class ServiceUsageIn(serializers.Serializer):
    model = serializers.CharField(max_length=255)
    modelProvider = serializers.CharField(max_length=255)
    inputTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    outputTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    cacheReadTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    cacheWriteTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    quantity = serializers.DecimalField(max_digits=28, decimal_places=12, min_value=0, max_value=MAX_QUANTITY,
                                        required=False)


class UsageRecordIn(serializers.Serializer):
    customerExternalId = serializers.CharField(max_length=255)
    agentCode = serializers.CharField(max_length=255)
    signalName = serializers.CharField(max_length=255)
    model = serializers.CharField(max_length=255, required=False, help_text="single-service shape")
    modelProvider = serializers.CharField(max_length=255, required=False, help_text="single-service shape")
    inputTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    outputTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    cacheReadTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    cacheWriteTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    quantity = serializers.DecimalField(max_digits=28, decimal_places=12, min_value=0, max_value=MAX_QUANTITY,
                                        required=False, help_text="billable count of the signal; default 1")
    usageDate = serializers.DateTimeField(required=False, help_text="ISO 8601; default now")
    metadata = serializers.DictField(required=False)
    environment = serializers.ChoiceField(choices=["production", "staging", "development", "testing"],
                                          required=False)
    idempotencyKey = serializers.CharField(max_length=255, required=False)
    services = ServiceUsageIn(many=True, required=False, help_text="multi-service shape")


class UsageRecordBatchIn(serializers.Serializer):
    records = UsageRecordIn(many=True, min_length=1, max_length=100)


class RecordSuccessOut(serializers.Serializer):
    index = serializers.IntegerField()
    customerExternalId = serializers.CharField()
    agentCode = serializers.CharField()
    signalName = serializers.CharField()
    model = serializers.CharField(allow_null=True)
    modelProvider = serializers.CharField(allow_null=True)
    totalCostUsd = serializers.CharField(help_text="decimal string")
    eventId = serializers.UUIDField()
    rawEventId = serializers.UUIDField()
    timestamp = serializers.DateTimeField()
    replayed = serializers.BooleanField(required=False, help_text="present and true on an idempotent replay")


class RecordFailureOut(serializers.Serializer):
    index = serializers.IntegerField()
    code = serializers.ChoiceField(choices=["invalid_record", "out_of_range", "unknown_model", "unpriced_usage"])
    message = serializers.ListField(child=serializers.CharField())
    stored = serializers.BooleanField()
    eventId = serializers.UUIDField(required=False)
    rawEventId = serializers.UUIDField(required=False)
    customerExternalId = serializers.CharField(required=False)
    agentCode = serializers.CharField(required=False)
    signalName = serializers.CharField(required=False)
    model = serializers.CharField(required=False, allow_null=True)
    modelProvider = serializers.CharField(required=False, allow_null=True)


class RecordResultsOut(serializers.Serializer):
    success = RecordSuccessOut(many=True)
    failed = RecordFailureOut(many=True)


class UsageRecordOut(serializers.Serializer):
    processed = serializers.IntegerField()
    successful = serializers.IntegerField()
    failed = serializers.IntegerField()
    results = RecordResultsOut()
