"""Scheduled jobs run each book on its own (core/jobs.py): a job that fails on one organization's data is
logged, every other book still gets its invoices issued, its alerts evaluated and its rollup caught up, every
later job still runs, and `run_scheduled_jobs` exits non-zero at the end."""
import logging

import pytest
from django.core.management import CommandError, call_command

from billing.models import Invoice
from billing.services import invoices as invoice_services
from core.jobs import BooksFailed
from config.tasks import run_scheduled_job_task
from config.schedule import SCHEDULED_JOBS
from controls.services import customer_alerts
from customers import rollup
from customers.models import RollupBacklog
from tests.reliability.world import World

pytestmark = pytest.mark.django_db

AFTER_JANUARY = "2025-02-02T06:00:00Z"  # the worlds' January drafts are due


@pytest.fixture
def worlds(client_for, other_org):
    """Two organizations, each with a January draft, a customer alert and an event waiting for the rollup."""
    bad, good = World(client_for()), World(client_for(organization=other_org))
    for world in (bad, good):
        world.invoice, world.alert, world.event  # the event waits in the backlog, as a recorded one does
        assert RollupBacklog.objects.filter(event_id=world.event.id).exists()
    return bad, good


def failing_for(book_id, real, calls: list, book_of=lambda *args, **kwargs: kwargs["book"].pk):
    """`real`, except that it raises for one book; every call's book is remembered."""
    def wrapper(*args, **kwargs):
        book = book_of(*args, **kwargs)
        calls.append(book)
        if book == book_id:
            raise RuntimeError(f"corrupt data in book {book}")
        return real(*args, **kwargs)
    return wrapper


def test_one_books_failures_leave_every_other_book_served_and_the_command_fails(worlds, monkeypatch, caplog):
    bad, good = worlds
    finalized, evaluated, caught_up = [], [], []
    monkeypatch.setattr(invoice_services, "_finalize", failing_for(
        bad.book.id, invoice_services._finalize, finalized, lambda invoice, **kwargs: invoice.book_id))
    monkeypatch.setattr(customer_alerts, "customer_alerts_evaluate", failing_for(
        bad.book.id, customer_alerts.customer_alerts_evaluate, evaluated))
    monkeypatch.setattr(rollup, "analytics_rollup_catch_up", failing_for(
        bad.book.id, rollup.analytics_rollup_catch_up, caught_up, lambda **kwargs: kwargs["book_id"]))
    output = []

    with caplog.at_level(logging.ERROR, logger="billing.jobs"), pytest.raises(CommandError) as failed:
        call_command("run_scheduled_jobs", "--now", AFTER_JANUARY, stdout=_Lines(output))

    # The good book got everything: its draft issued, its alert evaluated, its backlog caught up.
    assert Invoice.objects.get(pk=good.invoice.id).status == "issued"
    assert good.book.id in evaluated and good.book.id in caught_up
    assert not RollupBacklog.objects.filter(book_id=good.book.id).exists()
    # The bad book's work was rolled back, not half-done, and is left for the next run.
    assert Invoice.objects.get(pk=bad.invoice.id).status == "draft"
    assert RollupBacklog.objects.filter(book_id=bad.book.id).exists()
    # Every job ran; the three that failed for the bad book are named, with the book, in the log and the exit.
    assert [line.split(":")[0] for line in output] == [job.name for job in SCHEDULED_JOBS]
    for job in ("invoices_finalize_due", "customer-alerts", "usage-rollup-catch-up"):
        assert job in str(failed.value)
        assert any(job in record.getMessage() and str(bad.book.id) in record.getMessage() and record.exc_info
                   for record in caplog.records)
    assert str(good.book.id) not in str(failed.value)


def test_without_failures_the_command_succeeds(worlds):
    call_command("run_scheduled_jobs", "--now", AFTER_JANUARY, stdout=_Lines([]))
    assert {Invoice.objects.get(pk=world.invoice.id).status for world in worlds} == {"issued"}


def test_the_celery_task_runs_the_other_books_then_fails(worlds, monkeypatch):
    bad, good = worlds
    evaluated = []
    monkeypatch.setattr(customer_alerts, "customer_alerts_evaluate", failing_for(
        bad.book.id, customer_alerts.customer_alerts_evaluate, evaluated))
    with pytest.raises(BooksFailed) as failed:
        run_scheduled_job_task.delay("customer-alerts", AFTER_JANUARY)
    assert good.book.id in evaluated and failed.value.book_ids == [bad.book.id]


class _Lines:
    """A stdout that keeps each line written."""

    def __init__(self, lines: list):
        self.lines = lines

    def write(self, text: str):
        self.lines.extend(line for line in text.splitlines() if line)

    def flush(self):
        pass


def test_a_scheduled_run_not_started_within_three_intervals_expires():
    # Celery drops a message past its `expires` instead of running it: a worker back after an hour runs a few of
    # each job, not the 360 webhook sweeps beat queued meanwhile; a busy queue delays a job without starving it.
    from config.schedule import beat_schedule

    expiries = {name: entry["options"]["expires"] for name, entry in beat_schedule().items()}
    assert expiries == {job.name: float(max(3 * job.every_seconds, 300)) for job in SCHEDULED_JOBS}
    assert expiries["webhook-deliveries"] == 300 and expiries["ledger-partitions"] == 3 * 3600
