from datetime import datetime

from celery import shared_task

from accounts.models import Book
from core import clock
from jobs.services import job_run
from customers.backfill import backfill_work, reprice_work
from customers.ledger import settle_asked_take
from customers.partitions import ledger_partitions_settle
from customers.price_overrides import Target, override_reprice_work


@shared_task(name="customers.backfill_event_costs", acks_late=True)
def backfill_event_costs_task(book_id: str, model: str, model_provider: str, job_id: str | None = None) -> int:
    """Price the unpriced events of a newly mapped model, as the job `job_id`; returns how many got a cost (0
    when the job was finished already: safe to run twice, priced events are skipped)."""
    book = Book.objects.filter(pk=book_id).first()
    result = job_run(job_id, backfill_work(book, model, model_provider)) if book is not None else None
    return result["eventsPriced"] if result else 0


@shared_task(name="customers.reprice_unpriced_events", acks_late=True)
def reprice_unpriced_events_task(book_id: str, job_id: str | None = None) -> int:
    """Price what the catalog can price now among a book's unpriced events, as the job `job_id` (after a catalog
    load or the console's action); returns how many got a cost (0 when the job was finished already: safe to run
    twice, priced events are skipped)."""
    book = Book.objects.filter(pk=book_id).first()
    result = job_run(job_id, reprice_work(book)) if book is not None else None
    return result["eventsPriced"] if result else 0


@shared_task(name="customers.reprice_for_price_override", acks_late=True)
def reprice_for_price_override_task(book_id: str, kind: str, first: str, second: str, effective_from: str | None,
                                    job_id: str | None = None) -> int:
    """Price again the events a created or deleted price override touches, as the job `job_id`; returns how many
    changed cost (safe to run twice: an event whose cost is already right is not written). `effective_from`: the
    override's, ISO 8601, or None for an override of every date."""
    book = Book.objects.filter(pk=book_id).first()
    # "None": the text a job made before None was kept as such stored for an override of every date.
    since = datetime.fromisoformat(effective_from) if effective_from not in (None, "", "None") else None
    work = override_reprice_work(book, Target(kind, first, second), since)
    result = job_run(job_id, work) if book is not None else None
    return result["eventsRepriced"] if result else 0


@shared_task(name="customers.reprice_month_for_price_override", acks_late=True)
def reprice_month_for_price_override_task(book_id: str, kind: str, first: str, second: str, since: str, until: str,
                                          job_id: str | None = None) -> int:
    """Price again the events dated in [since, until) that a price override touches (a month restored from its
    archive), as the job `job_id`; returns how many changed cost. Safe to run twice."""
    book = Book.objects.filter(pk=book_id).first()
    work = override_reprice_work(book, Target(kind, first, second), datetime.fromisoformat(since),
                                 until=datetime.fromisoformat(until))
    result = job_run(job_id, work) if book is not None else None
    return result["eventsRepriced"] if result else 0


@shared_task(name="customers.ledger_partitions_settle", acks_late=True)
def ledger_partitions_settle_task() -> list[str]:
    """Give the months of the settle window with rows waiting in the ledger's default partition their
    partitions (after a batch landed some there; safe to run twice: a settled default partition is one
    empty read)."""
    settle_asked_take()  # before reading: a batch committed from now on asks for a run of its own
    return ledger_partitions_settle(now=clock.now())
