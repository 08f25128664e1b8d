"""Webhook endpoints of a book: create, update, delete, rotate the secret, test send, resend one delivery,
replay every event since an instant (docs/webhooks.md)."""
from datetime import datetime

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Q

from core.errors import BadRequest, Conflict
from core.scoping import get_owned, owned
from webhooks import signing
from webhooks.delivery import ROTATED_SECRET_VALID_FOR, lease, replaced_secrets_in_force
from webhooks.dispatch import dispatch_on_commit
from webhooks.events import emit_to
from webhooks.models import (DeliveryStatus, EventType, WebhookAttempt, WebhookDelivery, WebhookEndpoint,
                                   WebhookEvent)
from webhooks.targets import resolved_problems, url_problems

# Replaced secrets still inside their 24 hours that sign beside the current and the previous one (rotated again
# within the window): a header of up to five signatures.
EARLIER_SECRETS_KEPT = 3

REPLAY_MAX_EVENTS = 10_000


def _check_url(book, url: str) -> None:
    """The URL's own rules, then what its host name resolves to now: called before any transaction or row lock is
    taken, since a resolver may take seconds."""
    problems = url_problems(url, livemode=book.livemode) or resolved_problems(url)
    if problems:
        raise BadRequest([f"url: {problem}" for problem in problems])


def webhook_endpoint_create(*, book, url: str, event_types: list[str], description: str = "", enabled: bool = True,
                            created_by: str = "") -> WebhookEndpoint:
    """A new endpoint with a new signing secret (the caller shows it once)."""
    _check_url(book, url)
    endpoint = WebhookEndpoint(book=book, url=url, event_types=list(dict.fromkeys(event_types)),
                               description=description, enabled=enabled, secret=signing.secret_new(),
                               created_by=created_by[:64])
    with transaction.atomic():  # a commit whose answer is lost is asked about (core/postgresql), never redone
        endpoint.save(force_insert=True)
    return endpoint


def webhook_endpoint_update(*, book, endpoint_id, now: datetime, **changes) -> WebhookEndpoint:
    """URL, event types, description, enabled. Enabling a disabled endpoint starts it afresh (healthy); the
    deliveries it missed come back with a replay. A URL is checked only when it changes: a client sending the
    endpoint back whole can still disable an endpoint whose name now resolves to a refused address."""
    if "url" in changes and changes["url"] != get_owned(WebhookEndpoint, book, endpoint_id).url:
        _check_url(book, changes["url"])
    return _endpoint_update(book=book, endpoint_id=endpoint_id, now=now, **changes)


@transaction.atomic
def _endpoint_update(*, book, endpoint_id, now: datetime, **changes) -> WebhookEndpoint:
    # FOR NO KEY UPDATE: a change to the endpoint's settings does not wait for the transactions delivering to it
    # (they hold it FOR KEY SHARE, webhooks/events.py), as a delete must.
    endpoint = get_owned(WebhookEndpoint, book, endpoint_id,
                         queryset=owned(WebhookEndpoint, book).select_for_update(no_key=True))
    if "event_types" in changes:
        changes["event_types"] = list(dict.fromkeys(changes["event_types"]))
    if changes.get("enabled") and not endpoint.enabled:
        endpoint.failing_since, endpoint.disabled_at, endpoint.disabled_reason = None, None, ""
    elif changes.get("enabled") is False and endpoint.enabled:
        endpoint.disabled_at, endpoint.disabled_reason = now, "Disabled by an operator."
    for field, value in changes.items():
        setattr(endpoint, field, value)
    endpoint.save()
    return endpoint


@transaction.atomic
def webhook_endpoint_delete(*, book, endpoint_id) -> str:
    """The endpoint and its delivery log; nothing more is sent to it. The endpoint is locked first: a change whose
    transaction is creating deliveries to it (webhooks/events.py `_endpoints_kept`) commits before the deliveries
    are collected for deletion."""
    endpoint = get_owned(WebhookEndpoint, book, endpoint_id,
                         queryset=owned(WebhookEndpoint, book).select_for_update())
    endpoint_id = str(endpoint.pk)
    endpoint.delete()
    return endpoint_id


@transaction.atomic
def webhook_endpoint_rotate_secret(*, book, endpoint_id, now: datetime) -> WebhookEndpoint:
    """A new secret signs from now on; the one it replaces signs too for ROTATED_SECRET_VALID_FOR (every delivery
    meanwhile carries both signatures)."""
    endpoint = get_owned(WebhookEndpoint, book, endpoint_id,
                         queryset=owned(WebhookEndpoint, book).select_for_update(no_key=True))
    # Every replaced secret still inside its window keeps signing until its own expiry (a second rotation within
    # 24 hours, say after the new secret leaked, must not break receivers still on the first one).
    # At most a few (the newest): every one is a signature in each delivery's header, which receivers bound.
    endpoint.earlier_secrets = replaced_secrets_in_force(endpoint, now)[-EARLIER_SECRETS_KEPT:]
    endpoint.previous_secret, endpoint.previous_secret_expires_at = endpoint.secret, now + ROTATED_SECRET_VALID_FOR
    endpoint.secret = signing.secret_new()
    endpoint.save()
    return endpoint


def _enabled_endpoint(book, endpoint_id) -> WebhookEndpoint:
    """The endpoint, held until the caller's transaction ends (its deliveries are created in it): a concurrent
    delete waits, rather than failing the caller's commit or leaving it without its endpoint."""
    endpoint = get_owned(WebhookEndpoint, book, endpoint_id,
                         queryset=owned(WebhookEndpoint, book).select_for_update(no_key=True))
    if not endpoint.enabled:
        raise Conflict("The endpoint is disabled; enable it first (PATCH with \"enabled\": true).",
                       code="endpoint_disabled")
    return endpoint


@transaction.atomic
def webhook_endpoint_test(*, book, endpoint_id, now: datetime) -> WebhookDelivery:
    """A `webhook.test` event delivered to this endpoint only, signed and retried like any other."""
    endpoint = _enabled_endpoint(book, endpoint_id)
    event = emit_to(book, EventType.ENDPOINT_TEST, {
        "endpointId": str(endpoint.pk), "url": endpoint.url,
        "message": "A test event asked for from the API or the console."}, endpoints=[endpoint], now=now)
    return owned(WebhookDelivery, book).select_related("event").get(event=event, endpoint=endpoint)


@transaction.atomic
def webhook_delivery_resend(*, book, endpoint_id, delivery_id, now: datetime) -> WebhookDelivery:
    """Send one delivery again now (delivered or failed ones too), with the same `webhook-id`; a pending one is
    attempted now instead of at its due time. Its retries start again from the first delay."""
    endpoint = _enabled_endpoint(book, endpoint_id)
    delivery = get_owned(WebhookDelivery, book, delivery_id,
                         queryset=owned(WebhookDelivery, book).filter(endpoint=endpoint).select_for_update())
    if delivery.attempts >= MOST_ATTEMPTS:
        raise Conflict(f"This delivery was attempted {delivery.attempts:,} times, the most one delivery takes; it is "
                       "not sent again.", code="delivery_attempts_exhausted")
    _rearm([delivery.pk], now=now)
    delivery.refresh_from_db()
    return delivery


# Attempts are counted in a small integer: resends and replays of one delivery stop here, far past any retry schedule.
MOST_ATTEMPTS = 30000


def _rearm(delivery_ids: list, *, now: datetime) -> int:
    # A delivery a runner holds (claimed within the lease, its attempt not yet written) is left to it: its
    # outcome decides.
    attempt_written = WebhookAttempt.objects.filter(delivery=OuterRef("pk"), number=OuterRef("attempts"))
    held = (Q(status=DeliveryStatus.PENDING, attempts__gt=0, last_attempt_at__gt=now - lease())
            & ~Exists(attempt_written))
    count = WebhookDelivery.objects.filter(pk__in=delivery_ids, attempts__lt=MOST_ATTEMPTS).exclude(held).update(
        status=DeliveryStatus.PENDING, next_attempt_at=now, schedule_start=F("attempts"), updated_at=now)
    dispatch_on_commit(delivery_ids, now=now)
    return count


@transaction.atomic
def webhook_endpoint_replay(*, book, endpoint_id, since: datetime, now: datetime) -> int:
    """Every event of the book at or after `since` that the endpoint receives, delivered (again) with its
    original `webhook-id`, oldest first; returns how many. At most REPLAY_MAX_EVENTS at once (400 beyond)."""
    endpoint = _enabled_endpoint(book, endpoint_id)
    events = owned(WebhookEvent, book).filter(created_at__gte=since).exclude(type=EventType.ENDPOINT_TEST)
    if endpoint.event_types:
        events = events.filter(type__in=endpoint.event_types)
    event_ids = list(events.order_by("created_at", "id").values_list("pk", flat=True)[:REPLAY_MAX_EVENTS + 1])
    if len(event_ids) > REPLAY_MAX_EVENTS:
        raise BadRequest([f"since: More than {REPLAY_MAX_EVENTS} events since then; replay a later instant first."])
    existing = dict(owned(WebhookDelivery, book).filter(endpoint=endpoint, event_id__in=event_ids)
                    .values_list("event_id", "pk"))
    missing = [event_id for event_id in event_ids if event_id not in existing]
    WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(book=book, endpoint=endpoint, event_id=event_id, status=DeliveryStatus.PENDING,
                         next_attempt_at=now) for event_id in missing], ignore_conflicts=True)
    delivery_ids = list(owned(WebhookDelivery, book).filter(endpoint=endpoint, event_id__in=event_ids)
                        .order_by("event__created_at", "event_id").values_list("pk", flat=True))
    _rearm(delivery_ids, now=now)
    return len(event_ids)
