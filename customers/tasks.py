from celery import shared_task

from config.accounts.models import Book
from customers.backfill import events_backfill_cost, events_reprice_unpriced
from customers.partitions import ledger_partitions_settle


@shared_task(name="customers.backfill_event_costs", acks_late=True)
def backfill_event_costs_task(book_id: str, model: str, model_provider: str) -> int:
    """Price the unpriced events of a newly mapped model (safe to run twice: priced events are skipped)."""
    return events_backfill_cost(book=Book.objects.get(pk=book_id), model=model, model_provider=model_provider)


@shared_task(name="customers.reprice_unpriced_events", acks_late=True)
def reprice_unpriced_events_task(book_id: str) -> int:
    """Price what the catalog can price now among a book's unpriced events (after a catalog load; safe to run
    twice: priced events are skipped)."""
    book = Book.objects.filter(pk=book_id).first()
    return events_reprice_unpriced(book=book) if book is not None else 0


@shared_task(name="customers.ledger_partitions_settle", acks_late=True)
def ledger_partitions_settle_task() -> list[str]:
    """Give the months of rows waiting in the ledger's default partition their partitions (after a batch
    landed some there; safe to run twice: a settled default partition is one empty read)."""
    return ledger_partitions_settle()
