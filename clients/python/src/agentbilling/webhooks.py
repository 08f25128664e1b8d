"""Receiving the service's webhooks: `verify(body, headers, secret)` checks a delivery's Standard Webhooks 1.0
signature and timestamp and returns the event, typed.

A delivery is a POST whose raw body is the event `{id, type, createdAt, data}` and whose headers are
`webhook-id`, `webhook-timestamp` (Unix seconds) and `webhook-signature`: space-separated `v1,<base64>` entries,
each HMAC-SHA256 of `{id}.{timestamp}.{body}` keyed with a secret's bytes (the base64 after `whsec_`). During
a secret rotation a delivery carries one signature per secret; either one verifies.

Verify the raw bytes as received, before any parsing; answer 2xx quickly and deduplicate on `event.id` (the same
on every retry).
"""
import base64
import binascii
import hashlib
import hmac
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentbilling._json import loads
from agentbilling.errors import AgentBillingError

SECRET_PREFIX = "whsec_"
DEFAULT_TOLERANCE_SECONDS = 300

EVENT_TYPES = (
    "invoice.created", "invoice.issued", "invoice.sent", "invoice.paid", "invoice.overdue", "invoice.voided",
    "invoice.refunded", "payment.succeeded", "payment.refunded", "credit_pool.threshold_crossed",
    "spend_cap.threshold_crossed", "customer_alert.triggered", "subscription.created", "subscription.ended",
    "subscription.plan_changed", "subscription.deleted", "job.succeeded", "job.failed", "webhook.test",
)


class WebhookVerificationError(AgentBillingError):
    """The delivery is not authentic or not fresh: missing headers, no matching signature, a timestamp outside
    the tolerance, or a body that is not an event. Answer it with a 4xx and do nothing."""


@dataclass(frozen=True)
class WebhookEvent:
    """A verified event. `data` is the object as the API's GET shows it (numbers with a fraction as `Decimal`)."""

    id: str
    type: str
    created_at: datetime
    data: dict[str, Any]


def _secret_bytes(secret: str | bytes) -> bytes:
    if isinstance(secret, bytes):
        return secret
    try:
        return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError("the secret must be the whsec_... value the service showed") from None


def sign(body: bytes, *, message_id: str, timestamp: int, secret: str | bytes) -> str:
    """The `v1,<base64>` signature of a body, as the service computes it (for tests of a receiver)."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(_secret_bytes(secret), signed, hashlib.sha256).digest()).decode()


def verify(body: bytes | str, headers: Mapping[str, str], secret: str | bytes, *,
           tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS, now: float | None = None) -> WebhookEvent:
    """The event of an authentic, fresh delivery; raises WebhookVerificationError otherwise. `headers`: the
    request's headers (any case); `now`: Unix time to judge the timestamp by (default: this machine's clock)."""
    raw = body.encode() if isinstance(body, str) else bytes(body)
    lowered = {str(name).lower(): value for name, value in headers.items()}
    message_id, timestamp_text, signatures = (lowered.get("webhook-id"), lowered.get("webhook-timestamp"),
                                              lowered.get("webhook-signature"))
    if not (message_id and timestamp_text and signatures):
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")
    try:
        timestamp = int(timestamp_text)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not a number of seconds") from None
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        raise WebhookVerificationError(f"webhook-timestamp is more than {tolerance_seconds} s from this clock")
    expected = sign(raw, message_id=message_id, timestamp=timestamp, secret=secret)
    if not any(hmac.compare_digest(expected, candidate) for candidate in signatures.split(" ")
               if candidate.startswith("v1,")):
        raise WebhookVerificationError("no signature matches the secret")
    try:
        event = loads(raw)
        created_at = datetime.fromisoformat(event["createdAt"].replace("Z", "+00:00"))
        parsed = WebhookEvent(id=event["id"], type=event["type"], created_at=created_at, data=event["data"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise WebhookVerificationError("the body is not a webhook event") from None
    if parsed.id != message_id:
        raise WebhookVerificationError("the event's id is not its webhook-id")
    return parsed
