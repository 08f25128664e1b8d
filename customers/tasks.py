from celery import shared_task

from config.accounts.models import Book
from customers.backfill import events_backfill_cost


@shared_task(name="customers.backfill_event_costs", acks_late=True)
def backfill_event_costs_task(book_id: str, model: str, model_provider: str) -> int:
    """Price the unpriced events of a newly mapped model (safe to run twice: priced events are skipped)."""
    return events_backfill_cost(book=Book.objects.get(pk=book_id), model=model, model_provider=model_provider)
