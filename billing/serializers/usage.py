from rest_framework import serializers

from billing.record_validation import MAX_QUANTITY, MAX_TOKENS, QUANTITY_DIGITS, QUANTITY_PLACES, SERVICE_TIERS

CACHE_WRITE_1H_HELP = ("LLM: 1-hour cache writes (cacheWriteTokens are 5-minute ones), priced at the 1-hour cache-write "
                       "rate (Anthropic: 2x the input rate)")
SERVICE_TIER_HELP = ("the provider's service tier, priced at that tier's rates (batch: the provider's published "
                     "discount where the price data has none); default standard")


# --- POST /v1/usage/record (documentation of the shapes; the hot path validates in record_validation.py)

class ServiceUsageIn(serializers.Serializer):
    model = serializers.CharField(max_length=255)
    modelProvider = serializers.CharField(max_length=255)
    inputTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    outputTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    cacheReadTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    cacheWriteTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False)
    cacheWrite1hTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False,
                                                  help_text=CACHE_WRITE_1H_HELP)
    serviceTier = serializers.ChoiceField(choices=list(SERVICE_TIERS), required=False, help_text=SERVICE_TIER_HELP)
    quantity = serializers.DecimalField(max_digits=QUANTITY_DIGITS, decimal_places=QUANTITY_PLACES, min_value=0,
                                        max_value=MAX_QUANTITY,
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
    cacheWrite1hTokens = serializers.IntegerField(min_value=0, max_value=MAX_TOKENS, required=False,
                                                  help_text=CACHE_WRITE_1H_HELP)
    serviceTier = serializers.ChoiceField(choices=list(SERVICE_TIERS), required=False, help_text=SERVICE_TIER_HELP)
    quantity = serializers.DecimalField(max_digits=QUANTITY_DIGITS, decimal_places=QUANTITY_PLACES, min_value=0,
                                        max_value=MAX_QUANTITY,
                                        required=False, help_text="billable count of the signal; default 1")
    usageDate = serializers.DateTimeField(required=False, help_text=(
        "When the usage happened (for back-filling): an ISO 8601 timestamp, or a date alone meaning that day's "
        "midnight. An offset (`Z`, `+02:00`) is honoured; a date or timestamp without one is read as UTC "
        "(`2026-01-05T09:30:00` is 09:30 UTC). Stored and answered in UTC. Default: the time of the request."))
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
    code = serializers.ChoiceField(choices=["invalid_record", "unknown_field", "out_of_range", "unknown_model",
                                            "unpriced_usage"])
    message = serializers.ListField(child=serializers.CharField())
    stored = serializers.BooleanField()
    eventId = serializers.UUIDField(required=False)
    rawEventId = serializers.UUIDField(required=False)
    customerExternalId = serializers.CharField(required=False)
    agentCode = serializers.CharField(required=False)
    signalName = serializers.CharField(required=False)
    model = serializers.CharField(required=False, allow_null=True)
    modelProvider = serializers.CharField(required=False, allow_null=True)
    # A stored failure (`stored: true`) also carries what a success does, its cost null (billing/recording.py).
    totalCostUsd = serializers.CharField(required=False, allow_null=True,
                                         help_text="stored failures: null until the event is priced")
    timestamp = serializers.DateTimeField(required=False, help_text="stored failures: the event's usageDate")
    replayed = serializers.BooleanField(required=False, help_text="present and true on an idempotent replay")


class RecordResultsOut(serializers.Serializer):
    success = RecordSuccessOut(many=True)
    failed = RecordFailureOut(many=True)


class UsageRecordOut(serializers.Serializer):
    processed = serializers.IntegerField()
    successful = serializers.IntegerField()
    failed = serializers.IntegerField()
    results = RecordResultsOut()


# --- Examples of the reference (OpenAPI): one batch of each record shape, and its answer.

USAGE_RECORD_REQUEST_EXAMPLE = {"records": [
    {"customerExternalId": "acme-corp", "agentCode": "support-bot", "signalName": "ticket_resolved",
     "model": "gpt-4o", "modelProvider": "openai", "inputTokens": 1200, "outputTokens": 350,
     "usageDate": "2025-06-01T12:00:00Z", "environment": "production", "idempotencyKey": "run-8812-step-1",
     "metadata": {"ticketId": "T-4471"}},
    {"customerExternalId": "acme-corp", "agentCode": "support-bot", "signalName": "ticket_resolved",
     "usageDate": "2025-06-01T12:01:00Z", "services": [
         {"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 800, "outputTokens": 120},
         {"model": "text-embedding-3-small", "modelProvider": "openai", "inputTokens": 4000}]},
    {"customerExternalId": "acme-corp", "agentCode": "support-bot", "signalName": "ticket_resolved",
     "model": "acme-llm-v2", "modelProvider": "acme", "inputTokens": 500, "outputTokens": 90,
     "usageDate": "2025-06-01T12:02:00Z"},
    {"customerExternalId": "acme-corp", "agentCode": "support-bot", "model": "gpt-4o", "modelProvider": "openai",
     "inputTokens": 10},
]}

USAGE_RECORD_ANSWER_EXAMPLE = {
    "processed": 4, "successful": 2, "failed": 2,
    "results": {
        "success": [
            {"index": 0, "customerExternalId": "acme-corp", "agentCode": "support-bot",
             "signalName": "ticket_resolved", "model": "gpt-4o", "modelProvider": "openai",
             "eventId": "0197291c-5a40-7c1e-9a0b-3f6d2e8c4b11", "rawEventId": "6f1c2a9e-8b47-4d3a-9e21-7c5b0d4f8a36",
             "totalCostUsd": "0.0065", "timestamp": "2025-06-01T12:00:00Z"},
            {"index": 1, "customerExternalId": "acme-corp", "agentCode": "support-bot",
             "signalName": "ticket_resolved", "model": None, "modelProvider": None,
             "eventId": "0197291c-5a40-7c1e-9a0b-3f6d2e8c4b12", "rawEventId": "0b9e4d7a-2c61-4f85-a3d0-5e8f1b7c9d42",
             "totalCostUsd": "0.00328", "timestamp": "2025-06-01T12:01:00Z"},
        ],
        "failed": [
            {"index": 2, "customerExternalId": "acme-corp", "agentCode": "support-bot",
             "signalName": "ticket_resolved", "model": "acme-llm-v2", "modelProvider": "acme",
             "eventId": "0197291c-5a40-7c1e-9a0b-3f6d2e8c4b13", "rawEventId": "c3a8f5e1-7d24-4b96-8f0a-1e6d9c2b5a77",
             "totalCostUsd": None, "timestamp": "2025-06-01T12:02:00Z", "code": "unknown_model",
             "message": ["model: 'acme-llm-v2' from provider 'acme' is not in the catalog; the event is stored with "
                         "cost null until the model is mapped (POST /v1/events/map-model)."],
             "stored": True},
            {"index": 3, "customerExternalId": "acme-corp", "agentCode": "support-bot", "model": "gpt-4o",
             "modelProvider": "openai", "code": "invalid_record", "message": ["signalName: This field is required."],
             "stored": False},
        ],
    },
}
