"""The periodic jobs without a broker (config/in_process_schedule.py): each web process looks for due runs, the
database gives each run to one process, a failing job does not stop the others, and an unreachable database leaves
the runs for the next look. `make run` itself running them is in tests/test_zero_setup.py."""
import threading
from datetime import datetime, timedelta, timezone

import pytest
from django.db import DatabaseError, connection

import config.in_process_schedule as in_process
from billing.models import Subscription
from config.schedule import ScheduledJob
from jobs.models import PeriodicRun
from jobs.periodic import periodic_run_claim
from tests.factories import SubscriptionFactory

NOW = datetime(2025, 6, 10, 12, tzinfo=timezone.utc)
ran: list[str] = []


def record_run(*, now):
    ran.append(now)


def fail(*, now):
    raise RuntimeError("the job broke")


@pytest.fixture
def jobs(monkeypatch):
    """Three jobs of their own, every 60 and 300 seconds, the first one failing."""
    ran.clear()
    schedule = [ScheduledJob("failing", f"{__name__}.fail", 60), ScheduledJob("often", f"{__name__}.record_run", 60),
                ScheduledJob("rarely", f"{__name__}.record_run", 300)]
    monkeypatch.setattr(in_process, "SCHEDULED_JOBS", schedule)
    return schedule


@pytest.mark.django_db
def test_a_run_is_claimed_once_and_the_job_is_due_again_after_its_interval():
    assert periodic_run_claim(name="job", every_seconds=60, now=NOW)  # never run: due
    assert not periodic_run_claim(name="job", every_seconds=60, now=NOW)
    assert not periodic_run_claim(name="job", every_seconds=60, now=NOW + timedelta(seconds=59))
    assert periodic_run_claim(name="job", every_seconds=60, now=NOW + timedelta(seconds=60))
    run = PeriodicRun.objects.get(name="job")
    assert (run.due_at, run.claimed_at) == (NOW + timedelta(seconds=120), NOW + timedelta(seconds=60))


@pytest.mark.django_db(transaction=True)
def test_of_processes_claiming_the_same_run_at_once_one_gets_it():
    """Eight connections claim the run due at NOW together, twenty times over: each run goes to exactly one."""
    winners = []
    for round_number in range(20):
        now = NOW + timedelta(seconds=60 * round_number)
        start, results = threading.Barrier(8), []

        def claim():
            try:
                start.wait()
                results.append(periodic_run_claim(name="raced", every_seconds=60, now=now))
            finally:
                connection.close()
        threads = [threading.Thread(target=claim) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winners.append(results.count(True))
    assert winners == [1] * 20


@pytest.mark.django_db
def test_due_jobs_run_in_order_a_failing_one_does_not_stop_the_rest(jobs, caplog):
    assert in_process.periodic_jobs_run_due(now=NOW) == ["failing", "often", "rarely"]
    assert ran == [NOW, NOW] and "scheduled job failing failed" in caplog.text
    ran.clear()
    assert in_process.periodic_jobs_run_due(now=NOW + timedelta(seconds=30)) == []  # another process ran them
    assert in_process.periodic_jobs_run_due(now=NOW + timedelta(seconds=60)) == ["failing", "often"]
    assert ran == [NOW + timedelta(seconds=60)]


@pytest.mark.django_db
def test_without_the_database_no_run_is_claimed_and_the_next_look_runs_them(jobs, monkeypatch):
    def unreachable(**kwargs):
        raise DatabaseError("could not connect to server")
    monkeypatch.setattr(in_process, "periodic_run_claim", unreachable)
    assert in_process.periodic_jobs_run_due(now=NOW) == [] and ran == []
    monkeypatch.setattr(in_process, "periodic_run_claim", periodic_run_claim)
    assert in_process.periodic_jobs_run_due(now=NOW) == ["failing", "often", "rarely"]


@pytest.mark.django_db
def test_the_schedule_itself_moves_an_upcoming_subscription_to_active_once_it_starts(book):
    """The real schedule: a subscription stored `upcoming` whose start has come is active after one look."""
    subscription = SubscriptionFactory(book=book, status="upcoming", start_date=NOW - timedelta(minutes=1))
    assert "subscriptions_advance" in in_process.periodic_jobs_run_due(now=NOW)
    assert Subscription.objects.get(pk=subscription.pk).status == "active"


def test_with_a_broker_no_process_starts_a_scheduler(settings):
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    assert in_process.periodic_jobs_start_without_broker() is False
