"""Sending deliveries: one attempt at a time, retried with exponential back-off, and the sweep that finds what
is due.

An attempt (`delivery_attempt`) first claims the delivery with one conditional update (pending and due at
`now`: its due time moves a lease ahead and its attempt count up), so two runners handed the same delivery (the
on-commit dispatch and the sweep, a message delivered twice) send it once; a runner killed mid-attempt leaves it
due again when the lease ends. The POST happens outside any transaction; its outcome is then written: a 2xx is
delivered; anything else (another status, a refused target, no answer within WEBHOOKS_TIMEOUT_SECONDS) is due
again after the next delay of RETRY_DELAYS, or failed once they are used up (about three days). Every attempt
of a delivery carries the event's id as `webhook-id`.

An endpoint whose attempts have all failed for ENDPOINT_DISABLE_AFTER is disabled (its pending deliveries
fail) and the owners of its organization are emailed; one success clears its failing streak, and so does a silence
longer than any back-off (STREAK_GAP: nothing was attempted, so nothing was learned of the endpoint).
"""
import http.client
import logging
import time
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Q, Value, When
from django.db.models.functions import Coalesce, Greatest
from rest_framework import serializers

from accounts.models import Membership, Role
from core import clock, exact_json
from core.emails import send_templated
from webhooks import signing, targets
from webhooks.dispatch import dispatch_now
from webhooks.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent

logger = logging.getLogger("billing.webhooks")

# After the n-th failed attempt of a delivery the next one waits RETRY_DELAYS[n - 1]: ten attempts over about
# three days (5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, 24 h, 24 h after the first).
RETRY_DELAYS = (timedelta(seconds=5), timedelta(minutes=5), timedelta(minutes=30), timedelta(hours=2),
                timedelta(hours=5), timedelta(hours=10), timedelta(hours=10), timedelta(hours=24),
                timedelta(hours=24))
ENDPOINT_DISABLE_AFTER = timedelta(days=3)
# A failing endpoint with deliveries pending is attempted at least this often (the longest back-off, and an hour's
# margin). A longer silence since its last failure is no evidence against it: nothing was attempted (none was due,
# or this service's own worker or broker was down), so its failing streak starts again at the next failure.
STREAK_GAP = max(RETRY_DELAYS) + timedelta(hours=1)
ROTATED_SECRET_VALID_FOR = timedelta(hours=24)
SWEEP_BATCH = 1000
ERROR_MAX_CHARS = 500


def lease() -> timedelta:
    """How long a claimed attempt holds its delivery: the timeout plus a margin for writing the outcome."""
    return timedelta(seconds=settings.WEBHOOKS_TIMEOUT_SECONDS + 50)


def message_id(event: WebhookEvent) -> str:
    return f"evt_{event.pk.hex}"


def envelope_body(event: WebhookEvent) -> bytes:
    """`{id, type, createdAt, data}` as sent: `data` is the event's stored JSON text, unchanged."""
    head = exact_json.dumps({"id": message_id(event), "type": event.type,
                             "createdAt": serializers.DateTimeField().to_representation(event.created_at)})
    return head[:-1] + b',"data":' + event.data_json.encode() + b"}"


def secrets_in_force(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    """The current secret, and after a rotation the previous one until it expires (and those replaced before it,
    each until its own expiry: a second rotation within the window does not cut the first one's short)."""
    return [endpoint.secret, *(secret for secret, _ in replaced_secrets_in_force(endpoint, now))]


def replaced_secrets_in_force(endpoint: WebhookEndpoint, now: datetime) -> list[list[str]]:
    """`[secret, expiry (ISO 8601)]` of each replaced secret still inside its window, oldest first."""
    replaced = [[secret, expires] for secret, expires in endpoint.earlier_secrets
                if datetime.fromisoformat(expires) > now]
    if endpoint.previous_secret and endpoint.previous_secret_expires_at and endpoint.previous_secret_expires_at > now:
        replaced.append([endpoint.previous_secret, endpoint.previous_secret_expires_at.isoformat()])
    return replaced


def delivery_attempt(delivery_id, *, now: datetime) -> WebhookAttempt | None:
    """One attempt of a pending delivery due at `now`; None when it is not (delivered, failed, not yet due or
    held by another runner). Safe to call twice."""
    claimed = WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING,
                                             next_attempt_at__lte=now).update(
        next_attempt_at=now + lease(), attempts=F("attempts") + 1, last_attempt_at=now, updated_at=clock.now())
    if not claimed:
        return None
    delivery = WebhookDelivery.objects.select_related("endpoint", "event", "book").get(pk=delivery_id)
    endpoint, event = delivery.endpoint, delivery.event
    if not endpoint.enabled:
        return _record(delivery, now=now, answer=None, error="The endpoint is disabled.", final=True)
    problems = targets.url_problems(endpoint.url, livemode=delivery.book.livemode)
    if problems:
        return _record(delivery, now=now, answer=None, error=f"Refused: {problems[0]}")
    body = envelope_body(event)
    # The signature's timestamp is the machine's real time, read here rather than through core.clock:
    # receivers check it against their own clock (Standard Webhooks: within 5 minutes), whatever `now` says.
    headers = signing.signed_headers(secrets_in_force(endpoint, now), message_id(event), int(time.time()), body)
    posted = time.monotonic()
    answer, error = None, ""
    try:
        answer = targets.post(endpoint.url, body, headers, timeout=settings.WEBHOOKS_TIMEOUT_SECONDS)
    except targets.TargetRefused as exc:
        error = f"Refused: {exc}"
    except (OSError, http.client.HTTPException) as exc:
        error = _no_answer(exc)
    except Exception as exc:  # whatever the receiver's answer broke: still an attempt on record, retried
        logger.exception("webhook delivery %s: the attempt failed unexpectedly", delivery.pk)
        error = f"Unexpected error: {type(exc).__name__}."
    # The back-off runs from the attempt's end, in whole seconds: a receiver that timed out after 10 s was otherwise
    # due again 5 s after the attempt began, before its failure was on record.
    took = timedelta(seconds=int(time.monotonic() - posted))
    return _record(delivery, now=now, answer=answer, error=error, took=took)


def _no_answer(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"No answer within {settings.WEBHOOKS_TIMEOUT_SECONDS:g} s."
    if isinstance(exc, ConnectionRefusedError):
        return "Connection refused."
    return f"No answer: {type(exc).__name__}: {exc}"[:ERROR_MAX_CHARS]


def next_delay(delivery: WebhookDelivery) -> timedelta | None:
    """The wait after this failed attempt, None when the retries are used up."""
    index = delivery.attempts - delivery.schedule_start - 1
    return RETRY_DELAYS[index] if 0 <= index < len(RETRY_DELAYS) else None


def _record(delivery: WebhookDelivery, *, now: datetime, answer: targets.Answer | None, error: str,
            final: bool = False, took: timedelta = timedelta(0)) -> WebhookAttempt | None:
    """The attempt's outcome on record; None when the endpoint was deleted meanwhile (with its deliveries)."""
    succeeded = answer is not None and 200 <= answer.status < 300
    if answer is not None and not succeeded:
        error = f"Answered {answer.status}; only a 2xx answer is a delivery (redirects are not followed)."
    endpoint = delivery.endpoint
    with transaction.atomic():
        # The endpoint's row first, as its delete locks it before its deliveries: taken after the delivery's, the
        # outcome and a delete each waited for what the other held (a deadlock, and the delete's 500).
        if not WebhookEndpoint.objects.select_for_update(no_key=True).filter(pk=endpoint.pk).exists():
            return None
        attempt = WebhookAttempt.objects.create(
            book_id=delivery.book_id, delivery=delivery, number=delivery.attempts, succeeded=succeeded,
            response_status=answer.status if answer else None, response_body=answer.body_head if answer else "",
            latency_ms=answer.latency_ms if answer else None, error=error[:ERROR_MAX_CHARS])
        pending = WebhookDelivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING)
        if succeeded:
            pending.update(status=DeliveryStatus.DELIVERED, delivered_at=now, next_attempt_at=None,
                           updated_at=clock.now())
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(failing_since=None, last_success_at=now)
            return attempt
        delay = None if final else next_delay(delivery)
        if delay is None:
            pending.update(status=DeliveryStatus.FAILED, next_attempt_at=None, updated_at=clock.now())
        else:
            pending.update(next_attempt_at=now + took + delay, updated_at=clock.now())
        if endpoint.enabled:
            # `now` is when this attempt was claimed: an attempt claimed later that succeeded first (a receiver
            # stalling this one for its timeout) leaves the endpoint healthy, not failing since this claim (which
            # then disabled it at the next failure three quiet days on).
            succeeded_since = Q(last_success_at__gte=now)
            WebhookEndpoint.objects.filter(pk=endpoint.pk).update(
                failing_since=Case(When(succeeded_since, then=F("failing_since")),
                                   When(last_failure_at__lt=now - STREAK_GAP, then=Value(now)),
                                   default=Coalesce("failing_since", Value(now))),
                last_failure_at=Greatest(Coalesce("last_failure_at", Value(now)), Value(now)))
            endpoint.refresh_from_db(fields=["failing_since", "enabled"])
            if endpoint.failing_since is not None and endpoint.failing_since <= now - ENDPOINT_DISABLE_AFTER:
                endpoint_disable_failing(endpoint, now=now)
    return attempt


def endpoint_disable_failing(endpoint: WebhookEndpoint, *, now: datetime) -> bool:
    """Disable an endpoint that has failed since `failing_since`, fail its pending deliveries and email its
    organization's owners (once: a conditional update decides)."""
    reason = (f"Every delivery failed from {endpoint.failing_since.isoformat()} to {now.isoformat()}; disabled "
              "automatically. Fix the receiver, enable the endpoint again, and replay what it missed.")
    if not WebhookEndpoint.objects.filter(pk=endpoint.pk, enabled=True).update(
            enabled=False, disabled_at=now, disabled_reason=reason[:300], updated_at=clock.now()):
        return False
    WebhookDelivery.objects.filter(endpoint=endpoint, status=DeliveryStatus.PENDING).update(
        status=DeliveryStatus.FAILED, next_attempt_at=None, updated_at=clock.now())
    book = endpoint.book
    owners = sorted(Membership.objects.filter(organization_id=book.organization_id, role=Role.OWNER)
                    .values_list("user__email", flat=True))
    transaction.on_commit(partial(_disabled_email, endpoint=endpoint, owners=owners, since=endpoint.failing_since,
                                  now=now), robust=True)
    logger.warning("webhook endpoint %s of book %s disabled after failing since %s", endpoint.pk, book.pk,
                   endpoint.failing_since)
    return True


def _disabled_email(*, endpoint: WebhookEndpoint, owners: list[str], since: datetime, now: datetime) -> None:
    organization = endpoint.book.organization
    send_templated(template="webhooks/email/endpoint_disabled", to=owners,
                   subject=f"{organization.display_name}: webhook endpoint {endpoint.url} was disabled",
                   context={"url": endpoint.url, "description": endpoint.description, "since": since, "until": now,
                            "environment": endpoint.book.environment, "endpoint_id": endpoint.pk,
                            "organization": organization.display_name})


def webhook_deliveries_sweep(*, now: datetime) -> str:
    """Scheduled: hand over every pending delivery due at `now` (a retry whose time has come, an attempt whose
    message was lost or whose runner died, one never published because the broker was down). Safe to run
    twice: an attempt claims its delivery first."""
    due = list(WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
               .order_by("next_attempt_at").values_list("pk", flat=True)[:SWEEP_BATCH])
    handed = dispatch_now([str(pk) for pk in due], now=now)
    return f"{handed} handed over"


def webhook_events_housekeeping(*, now: datetime) -> str:
    """Scheduled: delete events older than WEBHOOKS_KEEP_DAYS with their deliveries and attempts, except
    deliveries still pending."""
    old = WebhookEvent.objects.filter(created_at__lt=now - timedelta(days=settings.WEBHOOKS_KEEP_DAYS)).exclude(
        Q(deliveries__status=DeliveryStatus.PENDING))
    deleted, _ = old.delete()
    return f"{deleted} rows deleted"
