"""Handing attempts to a runner: once the writing transaction commits, each delivery's attempt goes to Celery
(REDIS_URL) or, without a broker, to a thread of this process (core/background.py). Publishing never
fails the caller: the change is committed already, and a delivery whose attempt was never published stays
pending and due, so the sweep (webhooks/delivery.py) sends it."""
import logging
from datetime import datetime

from django.db import transaction

from core.background import TaskRunner

logger = logging.getLogger("billing.webhooks")

ATTEMPT_TASK = "webhooks.tasks.webhook_delivery_attempt_task"

runner = TaskRunner("webhooks")


def dispatch_on_commit(delivery_ids: list, *, now: datetime) -> None:
    ids = [str(delivery_id) for delivery_id in delivery_ids]
    transaction.on_commit(lambda: dispatch_now(ids, now=now))


def dispatch_now(delivery_ids: list[str], *, now: datetime) -> int:
    """Publish one attempt per delivery; returns how many were handed over (the rest wait for the sweep)."""
    published = 0
    for delivery_id in delivery_ids:
        try:
            runner.dispatch(ATTEMPT_TASK, [str(delivery_id), now.isoformat()])
            published += 1
        except Exception:  # a broker that does not answer: the sweep sends it
            logger.exception("webhook delivery %s could not be handed to a worker; the sweep will send it",
                             delivery_id)
    return published
