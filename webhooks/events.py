"""Writing events: the one way any app reports something to the book's webhook endpoints.

`emit(book, type, data)` is called inside the transaction that makes the change, with `data` the API's
representation of the object at that moment (what its GET answers). It writes the event and one pending
delivery per enabled endpoint of the book that receives the type (the outbox), and asks for the first attempt
of each once the transaction commits. A change that rolls back takes its event with it; a process that dies
after the commit leaves pending deliveries that the sweep (`webhook_deliveries_sweep`) sends.
"""
from datetime import date, datetime
from decimal import Decimal
from uuid import UUID

import orjson

from core import exact_json
from core.database import key_share_locked
from core.scoping import owned
from webhooks.dispatch import dispatch_on_commit
from webhooks.models import DeliveryStatus, EventType, WebhookDelivery, WebhookEndpoint, WebhookEvent

# The types an endpoint may ask for (a test send is not one: it always goes to the endpoint it tests).
SUBSCRIBABLE_TYPES = tuple(value for value in EventType.values if value != EventType.ENDPOINT_TEST)


def emit(book, event_type: str, data: dict, *, now: datetime | None = None) -> WebhookEvent:
    """Record that `event_type` happened in `book`, with `data` as the API shows the object now; returns the
    event. Call it inside the change's transaction. `now`: when it happened (a scheduled job's `--now`)."""
    return emit_to(book, event_type, data, endpoints=None, now=now)


def emit_to(book, event_type: str, data: dict, *, endpoints: list[WebhookEndpoint] | None,
            now: datetime | None = None) -> WebhookEvent:
    """`emit`, delivered to `endpoints` (None: every enabled endpoint of the book that receives the type)."""
    if event_type not in EventType.values:
        raise ValueError(f"unknown webhook event type {event_type!r}")
    book_id = getattr(book, "pk", book)  # a Book or its id
    event = WebhookEvent(book_id=book_id, type=event_type, data_json=json_text(data))
    event.save(force_insert=True)
    if now is None:
        now = event.created_at
    elif now != event.created_at:
        # created_at is auto_now_add; a scheduled job run `--now` dates its events at that instant.
        WebhookEvent.objects.filter(pk=event.pk).update(created_at=now)
        event.created_at = now
    if endpoints is None:
        endpoints = [endpoint for endpoint in owned(WebhookEndpoint, book_id).filter(enabled=True)
                     if endpoint.receives(event_type)]
    deliveries_create(event, endpoints, now=now)
    return event


def _json_default(value):
    if isinstance(value, Decimal):
        return exact_json.decimal_fragment(value)
    if isinstance(value, (UUID, date)):  # datetimes included
        return value.isoformat() if isinstance(value, date) else str(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_text(data) -> str:
    """A serializer's output as JSON text, numbers exact and instants in UTC written with `Z`, as the API's
    renderer writes them (a payload may also hold instants of its own, such as an alert's window)."""
    return exact_json.dumps(data, default=_json_default, option=orjson.OPT_UTC_Z).decode()


def _endpoints_kept(endpoints) -> list:
    """The endpoints still there, each held until the caller's transaction ends (`FOR KEY SHARE`): a concurrent
    delete (which locks its endpoint first, webhooks/services.py) waits for this transaction and then deletes its
    deliveries too, or went first and the endpoint is left out. Before, a delete committed between the read of the
    endpoints and this transaction's commit failed the change itself (its deliveries named a deleted endpoint).
    The lock holds back nothing else: emitters share it, and an attempt's outcome, an endpoint's update and a
    secret's rotation lock it without its key (FOR NO KEY UPDATE)."""
    kept = key_share_locked(WebhookEndpoint, [endpoint.pk for endpoint in endpoints])
    return [endpoint for endpoint in endpoints if endpoint.pk in kept]


def deliveries_create(event: WebhookEvent, endpoints, *, now: datetime) -> list[WebhookDelivery]:
    """Pending deliveries of `event` to `endpoints`, each attempted once the caller's transaction commits."""
    deliveries = WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(book_id=event.book_id, endpoint=endpoint, event=event, status=DeliveryStatus.PENDING,
                         next_attempt_at=now) for endpoint in _endpoints_kept(endpoints)])
    if deliveries:
        dispatch_on_commit([delivery.pk for delivery in deliveries], now=now)
    return deliveries


def emit_subscription_plan_changed(book, subscription_data: dict, *, now: datetime | None = None) -> WebhookEvent:
    """`subscription.plan_changed`: the plan change's new subscription as `GET /v1/subscriptions/{id}` shows
    it (its `previousSubscriptionId` names the one it replaced). Call it in the change's transaction."""
    return emit(book, EventType.SUBSCRIPTION_PLAN_CHANGED, subscription_data, now=now)
