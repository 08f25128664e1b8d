"""The event types in the OpenAPI document: the schema is OpenAPI 3.0 (the version its generated clients and
checks read), whose root has no `webhooks` section (3.1 added it), so each type is described under the root's
`x-webhooks` extension, which ReDoc (`/v1/redoc`) shows as a Webhooks section: one POST per type, its headers and
its body, `data` referring to the component the API's GET answers with."""
from webhooks.models import EventType

REF = "#/components/schemas/{}".format


def _ref(name: str) -> dict:
    return {"$ref": REF(name)}


def _object(properties: dict, required: list[str] | None = None) -> dict:
    return {"type": "object", "properties": properties, "required": required or list(properties)}


DECIMAL = {"type": "number", "format": "decimal"}
INSTANT = {"type": "string", "format": "date-time"}
STAGE = {"oneOf": [{"type": "integer", "enum": [50, 80, 95]}, {"type": "string", "enum": ["empty"]}]}

DATA_SCHEMAS = {
    **{event_type: _ref("InvoiceOut") for event_type in EventType.values if event_type.startswith("invoice.")},
    EventType.PAYMENT_SUCCEEDED: {"allOf": [_ref("PaymentOut"), _object({"invoiceId": {"type": "string",
                                                                                       "format": "uuid"}})]},
    EventType.PAYMENT_REFUNDED: {"allOf": [_ref("PaymentOut"), _object({"invoiceId": {"type": "string",
                                                                                      "format": "uuid"}})]},
    EventType.CREDIT_POOL_THRESHOLD_CROSSED: {"allOf": [_ref("CreditBalanceOut"), _object(
        {"stage": STAGE, "stagesPassed": {"type": "array", "items": STAGE}})]},
    EventType.SPEND_CAP_THRESHOLD_CROSSED: _object({
        "cap": _ref("SpendCapOut"), "thresholdPercent": {"type": "integer"}, "spentUsd": DECIMAL,
        "amountUsd": DECIMAL, "windowStart": INSTANT, "windowEnd": INSTANT}),
    EventType.CUSTOMER_ALERT_TRIGGERED: _object({
        "alert": _ref("CustomerAlertOut"), "valueUsd": DECIMAL, "thresholdUsd": DECIMAL, "windowStart": INSTANT,
        "windowEnd": INSTANT}),
    EventType.SUBSCRIPTION_CREATED: _ref("SubscriptionOut"),
    EventType.SUBSCRIPTION_ENDED: _ref("SubscriptionOut"),
    EventType.SUBSCRIPTION_PLAN_CHANGED: _ref("SubscriptionOut"),
    EventType.SUBSCRIPTION_DELETED: _ref("SubscriptionOut"),
    EventType.JOB_SUCCEEDED: _ref("JobOut"),
    EventType.JOB_FAILED: _ref("JobOut"),
    EventType.ENDPOINT_TEST: _object({"endpointId": {"type": "string", "format": "uuid"}, "url": {"type": "string"},
                                      "message": {"type": "string"}}),
}

HEADERS = [
    ("webhook-id", "The event's id (`evt_...`), the same on every retry: deduplicate on it."),
    ("webhook-timestamp", "Unix seconds of the attempt; refuse one more than five minutes from your clock."),
    ("webhook-signature", "`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed with the "
                          "secret's bytes; two space-separated signatures for 24 hours after a rotation."),
]


def _webhook(event_type: str) -> dict:
    envelope = _object({"id": {"type": "string", "example": "evt_500ce433fd3a4db7a145e733459b889a"},
                        "type": {"type": "string", "enum": [event_type]}, "createdAt": INSTANT,
                        "data": DATA_SCHEMAS[event_type]})
    return {"post": {
        "operationId": f"webhook_{event_type.replace('.', '_')}",
        "summary": event_type,
        "description": (f"{EventType(event_type).label}. Sent to every enabled endpoint of the book that receives "
                        "this type, signed per Standard Webhooks 1.0; answer 2xx within 10 seconds, anything else is "
                        "retried for about three days (docs/webhooks.md)."),
        "tags": ["webhooks"],
        "parameters": [{"in": "header", "name": name, "required": True, "schema": {"type": "string"},
                        "description": description} for name, description in HEADERS],
        "requestBody": {"required": True, "content": {"application/json": {"schema": envelope}}},
        "responses": {"2XX": {"description": "Delivered: the event is not sent again (unless resent or replayed)."},
                      "default": {"description": "Not delivered: retried with back-off."}},
    }}


def add_webhooks(result, **kwargs):
    """drf-spectacular postprocessing hook: `x-webhooks` with one entry per event type."""
    result["x-webhooks"] = {event_type: _webhook(event_type) for event_type in EventType.values}
    return result
