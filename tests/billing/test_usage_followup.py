"""The coalesced follow-up of recorded usage (billing/followup.py): one task per book for many batches,
which catches the analytics rollup up and settles the credit pools of the customers the batches named."""
import threading
from contextlib import contextmanager

import pytest
from django.db import connection, connections

from billing.followup import CLOCK_MARGIN_SECONDS, DELAY_SECONDS, usage_followup_schedule, usage_followup_take
from billing.tasks import usage_followup_task
from core.redis_client import redis_client
from customers.models import RollupBacklog
from tests.analytics.support import models, rec, record, scanned, stored  # noqa: F401


def test_batches_of_a_book_arm_one_follow_up_until_the_task_takes_their_customers(book, other_book, monkeypatch):
    published = []
    monkeypatch.setattr(usage_followup_task, "apply_async", lambda args, countdown, retry: published.append(args))
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c1"])
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c2", "c1"])
    usage_followup_schedule(book_id=str(other_book.pk), customer_ids=["x"])
    assert published == [(str(book.pk),), (str(other_book.pk),)]  # one per book, however many batches
    assert usage_followup_take(book_id=str(book.pk)) == ["c1", "c2"]
    assert usage_followup_take(book_id=str(book.pk)) == []
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c3"])  # after the take: armed again
    assert published[-1] == (str(book.pk),) and len(published) == 3
    assert usage_followup_take(book_id=str(book.pk)) == ["c3"]
    assert usage_followup_take(book_id=str(other_book.pk)) == ["x"]


def test_the_first_batch_after_a_broker_outage_hands_its_follow_up_over_at_once(book, monkeypatch):
    """A failed publish pauses publishing in the process (core/background.py); Redis, the broker, answering the
    batch's arming ends the pause, or the follow-up it armed would wait for the scheduled sweep."""
    from kombu.exceptions import OperationalError

    published = []

    def broker_down(args, countdown, retry):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    monkeypatch.setattr(usage_followup_task, "apply_async", broker_down)
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c1"])  # armed, not published: the pause starts
    redis_client().delete(f"usage-followup:{book.pk}:armed")  # the outage lost the key with everything else
    monkeypatch.setattr(usage_followup_task, "apply_async", lambda args, countdown, retry: published.append(args))
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c2"])
    assert published == [(str(book.pk),)]
    assert usage_followup_take(book_id=str(book.pk)) == ["c1", "c2"]


def test_a_mark_armed_with_no_task_behind_it_is_taken_back_so_the_next_batch_arms_one(book, monkeypatch):
    """Redis took the mark but the broker refused the task: left for ARMED_SECONDS, the mark kept every later batch
    of the book from publishing a follow-up (pool alerts and the balance cache waited for the sweeps)."""
    from kombu.exceptions import OperationalError

    from core import background
    published = []

    def broker_down(args, countdown, retry):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    monkeypatch.setattr(usage_followup_task, "apply_async", broker_down)
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c1"])
    assert redis_client().get(f"usage-followup:{book.pk}:armed") is None
    background.broker_pause_end()
    monkeypatch.setattr(usage_followup_task, "apply_async", lambda args, countdown, retry: published.append(args))
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c2"])
    assert published == [(str(book.pk),)]
    assert usage_followup_take(book_id=str(book.pk)) == ["c1", "c2"]


def test_a_committed_batch_is_in_the_rollup_once_its_follow_up_ran(api, book, models, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # Celery is eager in the suite: the task runs here
        record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"),
               rec("beta", "writer", "pages", "2025-04-01T11:00:00Z"))
    assert not RollupBacklog.objects.filter(book=book).exists()
    assert usage_followup_take(book_id=str(book.pk)) == []  # the task took the customers and disarmed
    assert stored(book) == scanned(book)


def test_the_follow_up_task_is_idempotent(api, book, models):
    record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"))
    assert usage_followup_task(str(book.pk)) == 1
    assert usage_followup_task(str(book.pk)) == 0
    assert stored(book) == scanned(book)


class _CountingRedis:
    """The real client, counting the round trips a schedule makes."""

    def __init__(self, client):
        self.client, self.round_trips = client, 0

    def pipeline(self, **kwargs):
        self.round_trips += 1
        return self.client.pipeline(**kwargs)


@pytest.fixture
def remembering(monkeypatch):
    """A web process as in production: the follow-up task is published with its delay, not run eagerly.
    Yields the counting client and a settable clock."""
    from billing import followup

    counting = _CountingRedis(followup.redis_client())
    clock = {"now": 1_800_000_000.0}
    monkeypatch.setattr(followup, "redis_client", lambda: counting)
    monkeypatch.setattr(followup.time, "time", lambda: clock["now"])
    monkeypatch.setitem(usage_followup_task.app.conf, "task_always_eager", False)
    monkeypatch.setattr(followup, "_armed_here", {})
    published = []
    monkeypatch.setattr(usage_followup_task, "apply_async", lambda args, countdown, retry: published.append(args))
    yield counting, clock, published


def test_a_batch_whose_customers_the_armed_follow_up_has_makes_no_round_trip(book, remembering):
    counting, clock, published = remembering
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1", "c2"})
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c2"})  # known: nothing to tell Redis
    clock["now"] += 3
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1"})
    assert counting.round_trips == 1 and published == [(str(book.pk),)]
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1", "c3"})  # a new customer: told
    assert counting.round_trips == 2 and len(published) == 1
    assert usage_followup_take(book_id=str(book.pk)) == ["c1", "c2", "c3"]


def test_close_to_its_due_time_a_batch_tells_redis_again_and_arms_the_next_follow_up(book, remembering):
    counting, clock, published = remembering
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1"})
    clock["now"] += DELAY_SECONDS - CLOCK_MARGIN_SECONDS  # the follow-up may run before this commit is seen
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1"})
    assert counting.round_trips == 2 and len(published) == 1  # still armed: added, not armed twice
    assert usage_followup_take(book_id=str(book.pk)) == ["c1"]  # the follow-up ran
    clock["now"] += 1
    trips = counting.round_trips
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1"})
    assert counting.round_trips == trips + 1 and len(published) == 2  # armed again, the customer in it
    assert usage_followup_take(book_id=str(book.pk)) == ["c1"]


def test_a_follow_up_armed_by_another_process_is_remembered_by_its_due_time(book, remembering):
    from billing.followup import _armed_key

    counting, clock, published = remembering
    redis_client().set(_armed_key(str(book.pk)), repr(clock["now"] + 2), ex=60)  # due in 2 seconds
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1"})
    assert published == []  # armed elsewhere
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1"})
    assert counting.round_trips == 1
    clock["now"] += 1  # within the clock margin of its due time: told again
    usage_followup_schedule(book_id=str(book.pk), customer_ids={"c1"})
    assert counting.round_trips == 2 and published == []


@pytest.fixture
def without_redis(monkeypatch):
    """The zero-setup `make run`: no Redis, so no worker. Yields the in-process follow-ups, which only run
    when the test flushes them (a delay no test waits for)."""
    from billing import followup
    from core.background import Coalescer

    monkeypatch.setattr(followup, "redis_client", lambda: None)
    in_process = Coalescer("usage-followup-test", followup._run_in_process, delay=3600)
    monkeypatch.setattr(followup, "in_process", in_process)
    return in_process


def test_without_redis_the_follow_up_leaves_the_request_and_runs_in_the_process(
        api, book, models, without_redis, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"))
        record(api, rec("beta", "writer", "pages", "2025-04-01T11:00:00Z"))
    assert RollupBacklog.objects.filter(book=book).count() == 2  # the requests did not catch the rollup up
    assert without_redis._due.keys() == {str(book.pk)}  # one follow-up for both batches
    assert len(without_redis._pending[str(book.pk)]) == 2  # with both batches' customers

    without_redis.flush()
    assert not RollupBacklog.objects.filter(book=book).exists()
    assert stored(book) == scanned(book)


@contextmanager
def _rollup_lock_held_elsewhere(book):
    """Another connection holding the book's rollup lock (another web process's catch-up, a re-pricing)."""
    from customers.rollup import _LOCK_NAMESPACE

    held, release = threading.Event(), threading.Event()

    def hold():
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s, hashtext(%s))", [_LOCK_NAMESPACE, str(book.pk)])
                held.set()
                release.wait(30)
                cursor.execute("SELECT pg_advisory_unlock(%s, hashtext(%s))", [_LOCK_NAMESPACE, str(book.pk)])
        finally:
            connections.close_all()

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    try:
        yield
    finally:
        release.set()
        holder.join(10)


def test_without_redis_a_follow_up_that_finds_the_rollup_busy_runs_again_later_instead_of_queueing(
        api, book, models, without_redis, django_capture_on_commit_callbacks):
    """Each web process runs its own follow-ups, and at the same moments: one that found another's catch-up running
    waited for it, then caught up what came meanwhile, a catch-up per process each time. It leaves the backlog to
    the next run, which it arms again."""
    with django_capture_on_commit_callbacks(execute=True):
        record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"))
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '3s'")  # waiting would fail here, not hang
    with _rollup_lock_held_elsewhere(book):
        without_redis.flush()
        assert RollupBacklog.objects.filter(book=book).count() == 1
        assert without_redis._due.keys() == {str(book.pk)}  # armed again

    without_redis.flush()
    assert not RollupBacklog.objects.filter(book=book).exists()
    assert without_redis._due == {}
    assert stored(book) == scanned(book)
