from celery import shared_task

from core import clock
from webhooks.delivery import delivery_attempt


@shared_task(name="webhooks.delivery_attempt", acks_late=True)
def webhook_delivery_attempt_task(delivery_id: str, now_iso: str | None = None) -> None:
    """One attempt of a delivery, as of `now_iso` (when it was handed over) or the wall clock if later."""
    now = clock.now()
    if now_iso:
        now = max(now, clock.parse_instant(now_iso, field="now"))
    delivery_attempt(delivery_id, now=now)
