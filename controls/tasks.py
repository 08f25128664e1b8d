from celery import shared_task

from accounts.models import Book
from core import clock
from controls.hooks import SPEND_CAPS_TASK, spend_caps_runner
from controls.services.spend_caps import spend_caps_evaluate


@shared_task(name="controls.evaluate_spend_caps", acks_late=True)
def evaluate_spend_caps_task(book_id: str, now_iso: str | None = None) -> int:
    """Send the alert-ladder emails due in one book; ingestion enqueues it on commit. Idempotent."""
    if now_iso is None:  # a batch's evaluation: batches committed from now on ask for another one
        spend_caps_runner.taken(SPEND_CAPS_TASK, (book_id,))
    book = Book.objects.select_related("organization").filter(pk=book_id).first()
    if book is None:  # the organization went away meanwhile
        return 0
    return spend_caps_evaluate(book=book, now=clock.parse_instant(now_iso, field="now") if now_iso else clock.now())
