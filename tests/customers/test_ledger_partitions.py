"""The usage ledger partitioned by UTC month of usage_date (customers/partitions.py,
customers/partition_conversion.py, docs/decisions/ledger-partitions.md), on the real PostgreSQL."""
import threading
from datetime import UTC, datetime, timedelta
from uuid import UUID
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from core import clock
from catalog.models import PriceOverride
from jobs.models import Job, JobKind
from core.background import Coalescer, TaskRunner
from config.schedule import job_named
from customers import ledger
from customers.models import (ArchivedMonth, RollupBacklog, RollupGrain, Signal, UsageDailyRollup, UsageEvent,
                              UsageEventKey)
from customers.partition_conversion import convert_ledger, unconvert_ledger
from customers.partitions import (
    DEFAULT,
    LEDGER,
    archive_name,
    archived_months,
    ledger_partition_detach,
    ledger_partition_restore,
    ledger_partitions,
    ledger_partitions_ensure,
    ledger_partitions_maintain,
    ledger_partitions_settle,
    month_start,
    next_month,
    partition_name,
    retire_transition_aids,
    settle_window,
)
from customers.rollup import analytics_rollup_catch_up
from tests.billing.invoice_support import billing_chain, event, recurring, usage
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db

D = Decimal
# The API's clock in these tests: the settle window (LEDGER_PARTITIONS_PAST_MONTHS, 36 by default, before this
# month, to the three the job keeps ahead) is 2028-06 .. 2031-09.
NOW = datetime(2031, 6, 15, 12, tzinfo=UTC)


def month(year, number):
    return datetime(year, number, 1, tzinfo=UTC)


@pytest.fixture(autouse=True)
def frozen_now(monkeypatch, settings):
    monkeypatch.setattr(clock, "now", lambda: NOW)
    settings.LEDGER_PARTITIONS_PAST_MONTHS = 36


@pytest.fixture
def llm(db):
    return ServiceEntryFactory(canonical_name="part-llm", provider="partai", input_cost=D("0.000003"),
                               output_cost=D("0.000015"))


def rec(llm, usage_date, **fields):
    return {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "calls", "model": llm.canonical_name,
            "modelProvider": llm.provider, "inputTokens": 1000, "outputTokens": 200, "usageDate": usage_date,
            **fields}


def record(api, *records) -> dict:
    resp = api.post("/v1/usage/record", {"records": list(records)})
    assert resp.status_code == 200, resp.json()
    return resp.json()


def partition_of(event_id) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT tableoid::regclass::text FROM {LEDGER} WHERE id = %s", [event_id])
        return cursor.fetchone()[0]


def names() -> list[str]:
    return [partition.name for partition in ledger_partitions()]


def listed_event_ids(api) -> set[str]:
    resp = api.get("/v1/events", {"limit": 100})
    assert resp.status_code == 200
    body = resp.json()
    rows = body["data"] if isinstance(body, dict) else body
    return {row["id"] for row in rows}


# --------------------------------------------------------------------------- where rows land


def test_a_month_with_a_partition_takes_its_events_and_a_month_without_one_lands_in_the_default(
        api, llm, django_capture_on_commit_callbacks):
    ledger_partitions_ensure(months=[month(2031, 3)])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        record(api, rec(llm, "2031-03-11T12:00:00Z"))
    assert ledger._settle_partitions not in callbacks  # every row has its partition: nothing to settle
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        body = record(api, rec(llm, "2031-03-10T12:00:00Z"), rec(llm, "2029-05-02T08:30:00Z"))
    partitioned, back_filled = (entry["eventId"] for entry in body["results"]["success"])
    assert partition_of(partitioned) == partition_name(month(2031, 3))
    assert partition_of(back_filled) == DEFAULT  # no insert fails for want of a partition
    assert callbacks.count(ledger._settle_partitions) == 1  # after commit the month is given its partition


def test_the_back_filled_month_gets_its_partition_after_commit_and_its_rows_move_there(
        api, llm, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        body = record(api, rec(llm, "2029-07-04T00:00:00Z", idempotencyKey="bf-1"), rec(llm, "2029-07-31T23:59:59Z"))
    first, second = (entry["eventId"] for entry in body["results"]["success"])
    assert partition_of(first) == partition_of(second) == partition_name(month(2029, 7))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {DEFAULT}")
        assert cursor.fetchone()[0] == 0
    # Same rows, same answers: the event listing, the key's replay, the rollup.
    assert {first, second} <= listed_event_ids(api)
    replay = record(api, rec(llm, "2029-07-04T00:00:00Z", idempotencyKey="bf-1"))["results"]["success"][0]
    assert replay["eventId"] == first and replay["replayed"] is True
    analytics_rollup_catch_up(book_id=UsageEvent.objects.get(pk=first).book_id)
    assert UsageDailyRollup.objects.filter(day="2029-07-01", grain=8).get().event_count == 2


def test_a_batch_is_answered_and_kept_when_giving_its_month_a_partition_fails(
        api, llm, monkeypatch, django_capture_on_commit_callbacks):
    import customers.tasks

    def broken():
        raise RuntimeError("the broker is down")

    monkeypatch.setattr(customers.tasks, "ledger_partitions_settle", broken)
    with django_capture_on_commit_callbacks(execute=True):
        body = record(api, rec(llm, "2029-09-09T00:00:00Z"))
    assert partition_of(body["results"]["success"][0]["eventId"]) == DEFAULT  # the hourly job settles it


def test_a_back_fill_asks_for_one_settle_run_while_one_waits_and_anew_once_it_starts(
        api, llm, monkeypatch, django_capture_on_commit_callbacks):
    import core.background

    asked = []
    monkeypatch.setattr(core.background, "publish", lambda task_path, task_args=(): asked.append(task_path) or True)
    for day in ("2029-10-01", "2029-10-02", "2029-11-03"):
        with django_capture_on_commit_callbacks(execute=True):
            record(api, rec(llm, f"{day}T00:00:00Z"))
    assert asked == ["customers.tasks.ledger_partitions_settle_task"]  # three batches, one run waiting
    ledger.settle_asked_take()  # the run starts: it reads what was committed before
    with django_capture_on_commit_callbacks(execute=True):
        record(api, rec(llm, "2029-12-04T00:00:00Z"))
    assert len(asked) == 2  # committed after the run started: asks for its own


def test_the_settle_task_takes_the_mark_before_it_reads(monkeypatch):
    from core.redis_client import redis_client
    import customers.tasks

    marks = []
    mark = ledger.settle_runner._mark((ledger.SETTLE_TASK, ()))
    monkeypatch.setattr(customers.tasks, "ledger_partitions_settle",
                        lambda now: marks.append(redis_client().exists(mark)) or [])
    redis_client().set(mark, 1, ex=60)
    customers.tasks.ledger_partitions_settle_task()
    assert marks == [0]


def test_with_redis_failing_a_batch_still_asks_for_its_run(api, llm, monkeypatch, django_capture_on_commit_callbacks):
    import core.background
    import redis

    class Down:
        def set(self, *args, **kwargs):
            raise redis.ConnectionError("Redis is stopped")

    asked = []
    monkeypatch.setattr(core.background, "redis_client", lambda: Down())
    monkeypatch.setattr(core.background, "publish", lambda task_path, task_args=(): asked.append(task_path) or True)
    for day in ("2029-10-01", "2029-10-02"):
        with django_capture_on_commit_callbacks(execute=True):
            body = record(api, rec(llm, f"{day}T00:00:00Z"))
        assert body["results"]["success"]  # the batch is answered as stored
    assert asked == [ledger.SETTLE_TASK] * 2  # without the mark every batch asks: a run too many, never none


def test_a_mark_left_by_a_lost_run_delays_nothing_the_hourly_job_settles(
        api, llm, monkeypatch, django_capture_on_commit_callbacks):
    import core.background
    from core.redis_client import redis_client

    monkeypatch.setattr(core.background, "publish", lambda task_path, task_args=(): True)  # published, then lost
    with django_capture_on_commit_callbacks(execute=True):
        body = record(api, rec(llm, "2029-10-05T00:00:00Z"))
    event_id = body["results"]["success"][0]["eventId"]
    assert redis_client().exists(ledger.settle_runner._mark((ledger.SETTLE_TASK, ())))
    assert partition_of(event_id) == DEFAULT
    ledger_partitions_maintain(now=clock.now())  # the hourly job
    assert partition_of(event_id) == partition_name(month(2029, 10))


@pytest.fixture
def without_redis(monkeypatch):
    """The zero-setup `make run`: no Redis, so no broker and no worker. Yields the in-process runner of the
    settle task, which runs only when the test flushes it (a delay no test waits for)."""
    from core import background

    monkeypatch.setattr(background, "redis_client", lambda: None)
    runner = TaskRunner("ledger-partitions-settle-test")
    runner.in_process = Coalescer("ledger-partitions-settle-test", runner._run_in_process, delay=3600)
    monkeypatch.setattr(ledger, "settle_runner", runner)
    return runner.in_process


def test_without_a_broker_the_month_is_partitioned_after_the_answer_not_in_the_request(
        api, llm, without_redis, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        body = record(api, rec(llm, "2029-08-08T00:00:00Z"))
    event_id = body["results"]["success"][0]["eventId"]
    assert partition_of(event_id) == DEFAULT and partition_name(month(2029, 8)) not in names()  # no DDL inline
    assert list(without_redis._due) == [("customers.tasks.ledger_partitions_settle_task", ())]
    without_redis.flush()  # what the process's thread does after the response
    assert partition_of(event_id) == partition_name(month(2029, 8))


def test_a_day_at_a_month_boundary_lands_in_the_month_of_its_utc_instant(api, llm):
    ledger_partitions_ensure(months=[month(2031, 4), month(2031, 5)])
    body = record(api, rec(llm, "2031-04-30T23:59:59.999999Z"), rec(llm, "2031-05-01T00:00:00Z"),
                  rec(llm, "2031-05-01T01:00:00+02:00"))
    april, may, april_by_offset = (entry["eventId"] for entry in body["results"]["success"])
    assert partition_of(april) == partition_of(april_by_offset) == partition_name(month(2031, 4))
    assert partition_of(may) == partition_name(month(2031, 5))


def test_a_date_whose_offset_carries_it_past_the_readable_years_fails_alone(api, llm):
    """Every read asks for windows within 1900..9000 in UTC: an event an offset carried past them would be stored
    and never counted by any analytics window. Such a record fails alone, naming `usageDate`."""
    body = record(api, rec(llm, "1900-01-01T00:00:00+05:00"), rec(llm, "9000-12-31T23:00:00-05:00"),
                  rec(llm, "9000-12-31T23:00:00+05:00"), rec(llm, "1900-01-01T00:00:00-05:00"))
    assert [entry["index"] for entry in body["results"]["failed"]] == [0, 1]
    assert all(entry["message"] == ["usageDate: Must lie between the years 1900 and 9000."]
               for entry in body["results"]["failed"])
    stored = [entry["eventId"] for entry in body["results"]["success"]]
    resp = api.get("/v1/analytics/usage", {"startDate": "1900-01-01", "endDate": "9000-12-31"})
    assert resp.status_code == 200 and resp.json()["summary"]["totalEvents"] == len(stored) == 2
    window = api.get("/v1/analytics/usage", {"startDate": "1900-01-01T00:00:00+05:00", "endDate": "2031-01-01"})
    assert window.status_code == 400
    assert window.json()["message"] == ["startDate: Must lie between the years 1900 and 9000."]


def test_the_rollup_catches_up_events_of_several_months_and_backlog_rows_without_a_date(api, llm):
    body = record(api, rec(llm, "2031-12-03T00:00:00Z"), rec(llm, "2008-06-04T00:00:00Z"),
                  rec(llm, "2031-12-30T00:00:00Z"))
    ids = [entry["eventId"] for entry in body["results"]["success"]]
    pending = {str(row.event_id): row.usage_date for row in RollupBacklog.objects.all()}
    assert pending == {event_id: UsageEvent.objects.get(pk=event_id).usage_date for event_id in ids}
    RollupBacklog.objects.filter(event_id=ids[2]).update(usage_date=None)  # as written before the partitioning
    assert analytics_rollup_catch_up(book_id=UsageEvent.objects.get(pk=ids[0]).book_id) == 3
    months = dict(UsageDailyRollup.objects.filter(grain=8).values_list("day", "event_count"))
    assert months == {datetime(2031, 12, 1).date(): 2, datetime(2008, 6, 1).date(): 1}
    assert not RollupBacklog.objects.exists()


# --------------------------------------------------------------------------- idempotency across months


def test_a_key_replayed_with_another_month_answers_the_original_event(api, llm):
    ledger_partitions_ensure(months=[month(2031, 6)])
    first = record(api, rec(llm, "2031-06-15T00:00:00Z", idempotencyKey="cross-1"))["results"]["success"][0]
    again = record(api, rec(llm, "2017-01-20T00:00:00Z", idempotencyKey="cross-1", inputTokens=5))
    entry = again["results"]["success"][0]
    assert entry["eventId"] == first["eventId"] and entry["replayed"] is True
    assert entry["totalCostUsd"] == first["totalCostUsd"] == "0.006"
    assert entry["timestamp"] == "2031-06-15T00:00:00Z"  # the original's date, not the replay's
    assert UsageEvent.objects.filter(idempotency_key="cross-1").count() == 1
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {DEFAULT} WHERE idempotency_key = 'cross-1'")
        assert cursor.fetchone()[0] == 0


def test_one_key_twice_in_a_batch_with_different_months_stores_the_first(api, llm):
    body = record(api, rec(llm, "2016-02-01T00:00:00Z", idempotencyKey="dup"),
                  rec(llm, "2031-07-01T00:00:00Z", idempotencyKey="dup"), rec(llm, "2031-07-02T00:00:00Z"))
    first, second, unkeyed = body["results"]["success"]
    assert first["eventId"] == second["eventId"] and second["replayed"] is True and "replayed" not in first
    assert second["timestamp"] == "2016-02-01T00:00:00Z"
    assert unkeyed["eventId"] != first["eventId"]
    assert UsageEvent.objects.count() == 2
    key = UsageEventKey.objects.get(idempotency_key="dup")
    assert (str(key.event_id), key.usage_date) == (first["eventId"], datetime(2016, 2, 1, tzinfo=UTC))


def test_keys_are_still_per_book_across_months(api, client_for, llm):
    record(api, rec(llm, "2031-08-01T00:00:00Z", idempotencyKey="same"))
    live = client_for(environment="live")
    other = record(live, rec(llm, "2015-08-01T00:00:00Z", idempotencyKey="same"))["results"]["success"][0]
    assert "replayed" not in other
    assert UsageEvent.objects.filter(idempotency_key="same").count() == 2


def test_the_event_listing_filters_by_key_through_the_keys_table(api, llm):
    stored = record(api, rec(llm, "2014-03-01T00:00:00Z", idempotencyKey="find-me"),
                    rec(llm, "2031-09-01T00:00:00Z", idempotencyKey="not-me"))["results"]["success"]
    resp = api.get("/v1/events", {"idempotencyKey": "find-me"})
    rows = resp.json()["data"] if isinstance(resp.json(), dict) else resp.json()
    assert [row["id"] for row in rows] == [stored[0]["eventId"]]


# --------------------------------------------------------------------------- the scheduled job


def test_the_job_creates_this_month_and_the_next_three_once(api, llm):
    assert job_named("ledger-partitions").function_path == "customers.partitions.ledger_partitions_maintain"
    now = datetime(2032, 11, 20, 9, tzinfo=UTC)
    expected = [partition_name(m) for m in (month(2032, 11), month(2032, 12), month(2033, 1), month(2033, 2))]
    missing = [name for name in expected if name not in names()]  # as other tests may have left them
    created = ledger_partitions_maintain(now=now)
    assert created == len(missing) and set(expected) <= set(names())
    before = names()
    assert ledger_partitions_maintain(now=now) == 0  # idempotent: nothing new, nothing twice
    assert names() == before
    with connection.cursor() as cursor:  # each month has exactly one partition
        cursor.execute("SELECT count(*) FROM pg_class WHERE relname = %s", [expected[1]])
        assert cursor.fetchone()[0] == 1


def test_the_job_moves_rows_waiting_in_the_default_partition_to_their_month_once_it_is_in_the_window(api, llm):
    body = record(api, rec(llm, "2033-05-09T00:00:00Z"), rec(llm, "2030-06-01T00:00:00Z"),
                  rec(llm, "2030-03-31T00:00:00Z"))
    ahead, back, older = (entry["eventId"] for entry in body["results"]["success"])
    assert partition_of(ahead) == partition_of(older) == DEFAULT  # outside the window of June 2031
    later = datetime(2033, 4, 2, tzinfo=UTC)
    assert settle_window(later) == (month(2030, 4), month(2033, 8))
    ledger_partitions_maintain(now=later)  # creates 2033-04 .. 2033-07
    assert partition_of(ahead) == partition_name(month(2033, 5))
    assert partition_of(back) == partition_name(month(2030, 6))  # in both windows
    assert partition_of(older) == DEFAULT  # the window has moved past it
    assert UsageEvent.objects.filter(pk__in=[ahead, back, older]).count() == 3


def test_rows_dated_outside_the_settle_window_stay_in_the_default_partition_and_create_nothing(
        api, llm, django_capture_on_commit_callbacks):
    assert settle_window(NOW) == (month(2028, 6), month(2031, 10))
    dates = {"2028-05-31T23:59:59Z": month(2028, 5), "2031-10-01T00:00:00Z": month(2031, 10),
             "8999-12-31T00:00:00Z": month(8999, 12), "1900-01-01T00:00:00Z": month(1900, 1)}
    before = names()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        body = record(api, *(rec(llm, date) for date in dates))
    assert ledger._settle_partitions not in callbacks  # nothing for the settle task to do: it is not asked
    ids = [entry["eventId"] for entry in body["results"]["success"]]
    assert ledger_partitions_settle(now=NOW) == []
    assert names() == before
    ledger_partitions_maintain(now=NOW)  # this month and the next three, nothing else
    assert set(names()) - set(before) <= {partition_name(month(2031, m)) for m in (6, 7, 8, 9)}
    assert [partition_of(event_id) for event_id in ids] == [DEFAULT] * 4  # kept, answered, counted
    assert UsageEvent.objects.filter(pk__in=ids).count() == 4


def test_rows_at_the_edges_of_the_settle_window_get_their_months(api, llm, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        body = record(api, rec(llm, "2028-06-01T00:00:00Z"), rec(llm, "2031-09-30T23:59:59Z"))
    first, last = (entry["eventId"] for entry in body["results"]["success"])
    assert partition_of(first) == partition_name(month(2028, 6))
    assert partition_of(last) == partition_name(month(2031, 9))


def test_the_past_months_of_the_window_are_a_setting(api, llm, settings):
    settings.LEDGER_PARTITIONS_PAST_MONTHS = 60
    assert settle_window(NOW) == (month(2026, 6), month(2031, 10))
    body = record(api, rec(llm, "2026-06-15T00:00:00Z"))
    assert ledger_partitions_settle(now=NOW) == [partition_name(month(2026, 6))]
    assert partition_of(body["results"]["success"][0]["eventId"]) == partition_name(month(2026, 6))
    settings.LEDGER_PARTITIONS_PAST_MONTHS = 10**6  # never before the earliest year a date may have
    assert settle_window(NOW)[0] == month(1900, 1)


def test_an_operator_partitions_any_month_by_naming_it(api, llm):
    body = record(api, rec(llm, "1900-01-01T00:00:00Z"), rec(llm, "8999-12-31T00:00:00Z"))
    old, far = (entry["eventId"] for entry in body["results"]["success"])
    out = StringIO()
    call_command("ledger_partitions", "ensure", "1900-01", "8999-12", stdout=out)
    assert partition_of(old) == partition_name(month(1900, 1))
    assert partition_of(far) == partition_name(month(8999, 12))
    with pytest.raises(CommandError, match="not a month"):
        call_command("ledger_partitions", "ensure", "2031-13")


@pytest.mark.parametrize("text", ["9999-12", "9001-01", "1899-12"])
def test_a_month_outside_the_years_an_event_may_have_is_refused_and_creates_nothing(db, text):
    before = ledger_partitions()
    with pytest.raises(CommandError, match=f"'{text}' is out of range: months run from 1900-01 to 9000-12"):
        call_command("ledger_partitions", "ensure", text, stdout=StringIO())
    assert ledger_partitions() == before


# --------------------------------------------------------------------------- detaching a month


def test_a_detached_month_leaves_every_read_and_its_keys(api, llm):
    ledger_partitions_ensure(months=[month(2012, 4), month(2012, 5)])
    april = record(api, rec(llm, "2012-04-03T00:00:00Z", idempotencyKey="old-1"),
                   rec(llm, "2012-04-28T00:00:00Z"))["results"]["success"]
    may = record(api, rec(llm, "2012-05-01T00:00:00Z", idempotencyKey="kept-1"))["results"]["success"][0]
    book_id = UsageEvent.objects.get(pk=may["eventId"]).book_id
    analytics_rollup_catch_up(book_id=book_id)
    assert UsageDailyRollup.objects.filter(day__gte="2012-04-01", day__lt="2012-05-01").exists()

    detached = ledger_partition_detach(month(2012, 4), now=NOW)

    assert (detached.archive, detached.rows, detached.keys_released) == (archive_name(month(2012, 4)), 2, 1)
    april_ids = {entry["eventId"] for entry in april}
    assert not UsageEvent.objects.filter(pk__in=april_ids).exists()
    assert not april_ids & listed_event_ids(api) and may["eventId"] in listed_event_ids(api)
    assert not UsageDailyRollup.objects.filter(day__gte="2012-04-01", day__lt="2012-05-01").exists()
    assert UsageDailyRollup.objects.filter(day__gte="2012-05-01", day__lt="2012-06-01").exists()
    assert partition_name(month(2012, 4)) not in names()
    with connection.cursor() as cursor:  # the archive holds the rows, outside the ledger
        cursor.execute(f"SELECT count(*) FROM {detached.archive}")
        assert cursor.fetchone()[0] == 2
    # The archived month's key was released: it records anew (into the default partition now).
    again = record(api, rec(llm, "2012-04-03T00:00:00Z", idempotencyKey="old-1"))["results"]["success"][0]
    assert "replayed" not in again and again["eventId"] not in april_ids
    assert partition_of(again["eventId"]) == DEFAULT
    kept = record(api, rec(llm, "2012-05-01T00:00:00Z", idempotencyKey="kept-1"))["results"]["success"][0]
    assert kept["replayed"] is True and kept["eventId"] == may["eventId"]


def rollup_quantity(book_id, start: str, end: str) -> Decimal:
    analytics_rollup_catch_up(book_id=book_id)
    rows = UsageDailyRollup.objects.filter(book_id=book_id, grain=RollupGrain.FULL, day__gte=start, day__lt=end)
    return sum((row.quantity for row in rows), D(0))


def test_a_restored_month_is_back_in_every_read_and_an_event_recorded_again_meanwhile_stays_once(api, llm):
    ledger_partitions_ensure(months=[month(2012, 4)])
    april = record(api, rec(llm, "2012-04-03T00:00:00Z", idempotencyKey="old-1", quantity=2),
                   rec(llm, "2012-04-28T00:00:00Z", quantity=3),
                   rec(llm, "2012-04-29T00:00:00Z", model="no-such-model", quantity=5))
    first, second = (entry["eventId"] for entry in april["results"]["success"])
    unpriced = april["results"]["failed"][0]["eventId"]  # stored, waiting for a price
    book_id = UsageEvent.objects.get(pk=first).book_id
    assert rollup_quantity(book_id, "2012-04-01", "2012-05-01") == 10
    ledger_partition_detach(month(2012, 4), now=NOW)
    assert ArchivedMonth.objects.filter(month=month(2012, 4)).exists()
    again = record(api, rec(llm, "2012-04-03T00:00:00Z", idempotencyKey="old-1", quantity=2))  # its key is free
    again_id = again["results"]["success"][0]["eventId"]
    assert rollup_quantity(book_id, "2012-04-01", "2012-05-01") == 2

    out = StringIO()
    call_command("ledger_partitions", "restore", "2012-04", stdout=out)

    assert "restored 2012-04: 2 events back in the ledger" in out.getvalue()
    assert "1 left out (their idempotency key was recorded again" in out.getvalue()
    # The archived twin of the event recorded again stays out: the key's event is counted once.
    assert set(UsageEvent.objects.filter(usage_date__gte=month(2012, 4), usage_date__lt=month(2012, 5))
               .values_list("pk", flat=True)) == {UUID(again_id), UUID(second), UUID(unpriced)}
    assert UsageEventKey.objects.get(idempotency_key="old-1").event_id == UUID(again_id)
    assert rollup_quantity(book_id, "2012-04-01", "2012-05-01") == 10
    assert {second, unpriced} <= listed_event_ids(api)
    assert not ArchivedMonth.objects.filter(month=month(2012, 4)).exists()
    assert archive_name(month(2012, 4)) not in archived_months()
    assert Job.objects.filter(book_id=book_id, kind=JobKind.COST_REPRICE).exists()  # the unpriced one's price
    with pytest.raises(CommandError, match=f"{archive_name(month(2012, 4))} does not exist: restore it from its dump"):
        call_command("ledger_partitions", "restore", "2012-04")


def test_a_restored_month_is_priced_under_the_overrides_made_while_it_was_archived(
        api, llm, django_capture_on_commit_callbacks):
    """An override made while the month was archived found none of its events (eventsAffected 0): restored, they
    kept the old price while the same call recorded anew cost the override's. 1,000 x 0.000003 + 200 x 0.000015 =
    0.006, 20% off 0.0048; an override from after the month has nothing there to price."""
    ledger_partitions_ensure(months=[month(2012, 6)])
    june = record(api, rec(llm, "2012-06-03T00:00:00Z"))
    event_id = june["results"]["success"][0]["eventId"]
    before = api.post("/v1/price-overrides", {"model": "other-llm", "modelProvider": "otherai", "inputCost": "1"})
    assert before.status_code == 201, before.json()  # made before the detach: it saw the month's events
    PriceOverride.objects.filter(pk=before.json()["id"]).update(created_at=NOW - timedelta(days=1))
    ledger_partition_detach(month(2012, 6), now=NOW)
    made = api.post("/v1/price-overrides", {"modelProvider": llm.provider, "discountPercent": 20})
    assert made.status_code == 201 and made.json()["eventsAffected"] == 0, made.json()
    PriceOverride.objects.filter(pk=made.json()["id"]).update(created_at=NOW + timedelta(days=1))  # after the detach
    later = api.post("/v1/price-overrides", {"model": "other-llm", "modelProvider": "partai", "inputCost": "1",
                                             "effectiveFrom": "2012-07-01T00:00:00Z"})
    assert later.status_code == 201, later.json()
    PriceOverride.objects.filter(pk=later.json()["id"]).update(created_at=NOW + timedelta(days=1))  # from July on
    out = StringIO()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("ledger_partitions", "restore", "2012-06", stdout=out)
    assert UsageEvent.objects.get(pk=event_id).usage_cost == D("0.0048")
    # The overrides in force for June price it again (the one from before the detach changes nothing); the one from
    # July on has nothing there.
    jobs = list(Job.objects.filter(kind=JobKind.COST_OVERRIDE_REPRICE,
                                   task_path__endswith="reprice_month_for_price_override_task"))
    assert sorted((job.status, job.task_args[1:3]) for job in jobs) == [
        ("succeeded", ["model", "other-llm"]), ("succeeded", ["provider", "partai"])]
    printed = out.getvalue().split("price its events again: jobs ")[1].split(" (GET")[0]
    assert out.getvalue().count("2 price override(s) in force for the month") == 1
    assert set(printed.split(", ")) == {str(job.pk) for job in jobs}


def test_a_restored_archive_made_before_the_ledger_gained_a_column_takes_its_default(api, llm):
    ledger_partitions_ensure(months=[month(2012, 6)])
    event_id = record(api, rec(llm, "2012-06-03T00:00:00Z", serviceTier="batch"))["results"]["success"][0]["eventId"]
    detached = ledger_partition_detach(month(2012, 6), now=NOW)
    with connection.cursor() as cursor:
        cursor.execute(f"ALTER TABLE {detached.archive} DROP COLUMN service_tier")
    assert ledger_partition_restore(month(2012, 6)).rows == 1
    assert UsageEvent.objects.get(pk=event_id).service_tier is None  # the column's default


def test_an_archive_table_of_a_month_detached_before_archived_months_were_recorded_is_recorded(db):
    from importlib import import_module
    from types import SimpleNamespace

    from django.apps import apps

    migration = import_module("customers.migrations.0016_archived_months_of_earlier_detaches")
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {archive_name(month(2010, 3))} (LIKE {LEDGER})")
        cursor.execute(f"CREATE TABLE {LEDGER}_archived_notes (LIKE {LEDGER})")  # not a month's: ignored
    ArchivedMonth.objects.create(month=month(2010, 4), archive="kept", rows=7, detached_at=NOW)
    migration.record_archived_tables(apps, SimpleNamespace(connection=connection))
    migration.record_archived_tables(apps, SimpleNamespace(connection=connection))  # once only
    assert sorted(ArchivedMonth.objects.values_list("month", "archive", "rows")) == [
        (month(2010, 3), archive_name(month(2010, 3)), 0), (month(2010, 4), "kept", 7)]
    # A month whose table was dropped before: recorded by hand.
    out = StringIO()
    call_command("ledger_partitions", "mark-archived", "2009-11", stdout=out)
    assert "2009-11 recorded as archived" in out.getvalue()
    assert ArchivedMonth.objects.filter(month=month(2009, 11)).exists()


def test_detach_refuses_a_month_without_its_own_partition(db):
    with pytest.raises(ValueError, match="no partition for 1990-01"):
        ledger_partition_detach(month(1990, 1), now=NOW)


def test_detach_refuses_the_current_month_and_later_ones(api, llm):
    ledger_partitions_maintain(now=NOW)  # 2031-06 .. 2031-09
    body = record(api, rec(llm, "2031-06-01T00:00:00Z"), rec(llm, "2031-08-01T00:00:00Z"))
    for text in ("2031-06", "2031-08"):
        with pytest.raises(CommandError, match=f"{text} has not ended .* only a month entirely in the past"):
            call_command("ledger_partitions", "detach", text)
    assert {partition_name(month(2031, 6)), partition_name(month(2031, 8))} <= set(names())
    assert UsageEvent.objects.filter(pk__in=[e["eventId"] for e in body["results"]["success"]]).count() == 2
    # The month that ended at this instant is past.
    ledger_partitions_ensure(months=[month(2031, 5)])
    assert ledger_partition_detach(month(2031, 5), now=month(2031, 6)).rows == 0


def test_detach_refuses_a_month_a_draft_invoice_covers_until_it_is_final(api, book, llm):
    chain = billing_chain(api, book, [recurring("10")], start="2012-01-01T00:00:00Z")
    ledger_partitions_ensure(months=[month(2012, 4), month(2012, 5)])
    draft = api.post("/v1/invoices/generate", {
        "customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
        "billingPeriodStart": "2012-04-01T00:00:00Z", "billingPeriodEnd": "2012-04-30T23:59:59Z"}).json()
    assert draft["status"] == "draft"
    with pytest.raises(CommandError, match=rf"2012-04 is still billed from the ledger: 1 draft invoice\(s\) cover it, "
                                           rf"{draft['invoiceNumber']} \(Acme Agents\): finalize or void them first"):
        call_command("ledger_partitions", "detach", "2012-04")
    assert partition_name(month(2012, 4)) in names()
    call_command("ledger_partitions", "detach", "2012-05", stdout=StringIO())  # no invoice covers May
    assert api.post(f"/v1/invoices/{draft['id']}/void", {}).status_code == 200
    call_command("ledger_partitions", "detach", "2012-04", stdout=StringIO())
    assert partition_name(month(2012, 4)) not in names()


def test_an_invoice_for_a_past_period_over_an_archived_month_is_refused_until_it_is_restored(api, book, llm):
    chain = billing_chain(api, book, [usage("2")], start="2012-01-01T00:00:00Z")
    ledger_partitions_ensure(months=[month(2012, 5)])
    event(chain, 7, "2012-05-10T12:00:00Z")
    ledger_partition_detach(month(2012, 5), now=NOW)  # no invoice covers May: the detach is allowed
    period = {"customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
              "billingPeriodStart": "2012-05-01T00:00:00Z", "billingPeriodEnd": "2012-06-01T00:00:00Z"}
    refused = api.post("/v1/invoices/generate", period)
    assert refused.status_code == 409 and refused.json()["code"] == "period_archived"
    assert "The usage of 2012-05 was archived out of the ledger" in refused.json()["message"]
    assert "ledger_partitions restore 2012-05" in refused.json()["message"]
    call_command("ledger_partitions", "restore", "2012-05", stdout=StringIO())
    invoice = api.post("/v1/invoices/generate", period).json()
    assert [(line["quantity"], line["amount"]) for line in invoice["lines"]] == [(7, 14)]


def test_a_month_archived_while_an_invoice_read_the_ledger_is_refused_not_billed_empty(api, book, llm, monkeypatch):
    """The race of an archive and a refresh: the month leaves the ledger while a generate (or the end-of-period
    job) waits to read it. The refresh asks again after its read, so the period is refused (409 for generate; the
    job leaves the draft a draft) instead of an invoice billing none of the month's usage."""
    import billing.services.invoices as invoices
    from billing.services.invoices import invoices_finalize_due
    from core.jobs import BooksFailed

    chain = billing_chain(api, book, [usage("1")], start="2012-01-01T00:00:00Z")
    ledger_partitions_ensure(months=[month(2012, 2)])
    event(chain, 7, "2012-02-10T12:00:00Z")
    period = {"customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
              "billingPeriodStart": "2012-02-01T00:00:00Z", "billingPeriodEnd": "2012-03-01T00:00:00Z"}
    draft = api.post("/v1/invoices/generate", period).json()
    assert [(line["quantity"], line["amount"]) for line in draft["lines"]] == [(7, 7)]
    real_priced_lines = invoices.priced_lines

    def archived_during_the_read(*args):
        lines = real_priced_lines(*args)
        # As the detach does once the read it waited for lets it go: the month's events leave the ledger.
        monkeypatch.setattr(invoices, "priced_lines", real_priced_lines)
        ArchivedMonth.objects.create(month=month(2012, 2), archive="archive_probe", rows=1, detached_at=NOW)
        return lines

    monkeypatch.setattr(invoices, "priced_lines", archived_during_the_read)
    refused = api.post("/v1/invoices/generate", period)
    assert refused.status_code == 409 and refused.json()["code"] == "period_archived", refused.content
    ArchivedMonth.objects.create(month=month(2012, 2), archive="archive_probe", rows=1, detached_at=NOW)
    with pytest.raises(BooksFailed, match="0 finalized"):  # the job reports the book; the draft is never issued at 0
        invoices_finalize_due(now=NOW)
    invoice = api.get(f"/v1/invoices/{draft['id']}").json()
    assert (invoice["status"], invoice["total"]) == ("draft", draft["total"])


def test_detach_refuses_a_month_an_active_subscriptions_current_period_covers(api, book, llm):
    chain = billing_chain(api, book, [recurring("10")], start="2031-01-01T00:00:00Z", billingCycle="yearly")
    assert chain.subscription["currentPeriodStart"].startswith("2031-01-01")
    ledger_partitions_ensure(months=[month(2031, 3), month(2030, 12)])
    with pytest.raises(CommandError, match=r"2031-03 is still billed from the ledger: the current billing period of "
                                           r"1 active subscription\(s\) covers it, Main \(Acme Agents\)"):
        call_command("ledger_partitions", "detach", "2031-03")
    assert partition_name(month(2031, 3)) in names()
    call_command("ledger_partitions", "detach", "2030-12", stdout=StringIO())  # before the period


def test_detach_refuses_a_month_a_credit_pool_period_not_settled_yet_covers(api, book, llm):
    """An ended subscription's last pool period is settled by the next pool-alert job from the events; detached
    before, its month's usage would be gone from that settlement (and the top-up draw given back)."""
    from billing.models import CreditGrant
    chain = billing_chain(api, book, [recurring("10")], start="2012-05-01T00:00:00Z", endDate="2012-06-01T00:00:00Z",
                          status="ended")
    CreditGrant.objects.create(book=book, subscription_id=chain.subscription["id"], kind="period", units=100,
                               period_start=datetime(2012, 5, 1, tzinfo=UTC),
                               period_end=datetime(2012, 6, 1, tzinfo=UTC))
    ledger_partitions_ensure(months=[month(2012, 5)])
    with pytest.raises(CommandError, match=r"2012-05 is still billed from the ledger: 1 credit pool period\(s\) "
                                           r"not settled yet cover it, of Main \(Acme Agents\)"):
        call_command("ledger_partitions", "detach", "2012-05")
    assert partition_name(month(2012, 5)) in names()
    CreditGrant.objects.update(settled_at=NOW, consumed_units=0, topup_units_drawn=0)
    call_command("ledger_partitions", "detach", "2012-05", stdout=StringIO())  # settled: nothing reads it again


def test_the_command_lists_ensures_and_detaches(api, llm):
    ledger_partitions_ensure(months=[month(2011, 6)])
    record(api, rec(llm, "2011-06-06T00:00:00Z"))
    out = StringIO()
    call_command("ledger_partitions", "list", stdout=out)
    assert f"{partition_name(month(2011, 6))}  2011-06-01 .. 2011-07-01" in out.getvalue()
    assert f"{DEFAULT}  DEFAULT" in out.getvalue()
    call_command("ledger_partitions", "ensure", stdout=out)
    assert "partitions created:" in out.getvalue()
    out = StringIO()
    call_command("ledger_partitions", "detach", "2011-06", stdout=out)
    assert f"1 events now in table {archive_name(month(2011, 6))}" in out.getvalue()
    with pytest.raises(CommandError, match="not a month"):
        call_command("ledger_partitions", "detach", "2011-13")
    with pytest.raises(CommandError, match="no partition for 2011-06"):
        call_command("ledger_partitions", "detach", "2011-06")


@pytest.mark.django_db(transaction=True)
def test_a_move_waiting_for_a_read_holds_recording_back_no_longer_than_one_short_ask(monkeypatch):
    """A read of one snapshot holds the ledger's lock to its end, and a move waits for it; a batch queued behind the
    move's waiting ask waited as long as the ask (5 seconds), so the move asks 100 ms at a time and asks again."""
    import time

    import psycopg
    from django.db import connections

    from customers import partitions

    monkeypatch.setattr(partitions, "MOVE_LOCK_ATTEMPTS", 60)
    settings = connection.settings_dict
    login = dict(dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"],
                 host=settings["HOST"], port=settings["PORT"])
    moved = []
    with psycopg.connect(**login) as reader, psycopg.connect(**login) as writer:
        reader.execute(f"SELECT count(*) FROM {LEDGER}")  # a read transaction, open
        def move():
            try:
                moved.extend(ledger_partitions_ensure(months=[month(1991, 5)]))
            finally:
                connections.close_all()
        mover = threading.Thread(target=move)
        mover.start()
        time.sleep(0.4)  # the move is asking for the lock
        started = time.monotonic()
        writer.execute(f"LOCK TABLE {LEDGER} IN ROW EXCLUSIVE MODE")  # what a recording batch takes
        waited = time.monotonic() - started
        writer.rollback()
        reader.rollback()
        mover.join()
    assert waited < 1.0
    assert moved == [partition_name(month(1991, 5))]


def test_detach_gives_way_to_reads_and_writes_in_flight_and_changes_nothing(db, monkeypatch):
    import psycopg

    from customers import partitions

    monkeypatch.setattr(partitions, "LOCK_TIMEOUT", "200ms")
    current = month_start(datetime.now(UTC))
    assert partition_name(current) in names()  # made by the migration, committed
    monkeypatch.setattr(clock, "now", lambda: next_month(current))  # a month may be detached once it has ended
    settings = connection.settings_dict
    with psycopg.connect(dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"],
                         host=settings["HOST"], port=settings["PORT"]) as writer:
        writer.execute(f"LOCK TABLE {LEDGER} IN ROW EXCLUSIVE MODE")  # a recording transaction, open
        with pytest.raises(CommandError, match="nothing was changed: run it again"):
            call_command("ledger_partitions", "detach", f"{current:%Y-%m}")
    assert partition_name(current) in names()
    # A read in flight holds it back too: the detach ends with an ACCESS EXCLUSIVE lock of the ledger, which
    # waits for reads, and reads wait for it (docs/decisions/ledger-partitions.md, "Locks").
    with psycopg.connect(dbname=settings["NAME"], user=settings["USER"], password=settings["PASSWORD"],
                         host=settings["HOST"], port=settings["PORT"]) as reader:
        reader.execute(f"SELECT count(*) FROM {LEDGER}")  # a read transaction, open
        with pytest.raises(CommandError, match="nothing was changed: run it again"):
            call_command("ledger_partitions", "detach", f"{current:%Y-%m}")
    assert partition_name(current) in names()


# --------------------------------------------------------------------------- converting a populated table

OLD = "conv_ledger"
OLD_KEYS = "conv_ledger_keys"


def create_single_table(rows: int):
    """A ledger in the shape before partitioning (primary key id, a unique (book, key) index), named OLD,
    holding `rows` events over 30 months up to May 2027 (every third one keyed), and an empty keys table."""
    with connection.cursor() as cursor:
        cursor.execute(f"CREATE TABLE {OLD} (LIKE {LEDGER} INCLUDING DEFAULTS)")
        cursor.execute(f"ALTER TABLE {OLD} ADD PRIMARY KEY (id)")
        cursor.execute(f"CREATE INDEX {OLD}_book_date ON {OLD} (book_id, usage_date)")
        cursor.execute(f"CREATE INDEX {OLD}_unpriced ON {OLD} (book_id, model) WHERE usage_cost IS NULL")
        cursor.execute(f"CREATE UNIQUE INDEX {OLD}_idem ON {OLD} (book_id, idempotency_key) "
                       f"WHERE idempotency_key IS NOT NULL")
        cursor.execute(f"CREATE TABLE {OLD_KEYS} (LIKE {UsageEventKey._meta.db_table} INCLUDING ALL)")
        cursor.execute(
            f"INSERT INTO {OLD} (id, created_at, updated_at, book_id, raw_event_id, customer_id, agent_id, signal_id, "
            f"customer_external_id, agent_code, signal_name, model, quantity, usage_cost, event_status, usage_date, "
            f"idempotency_key, metadata) "
            f"SELECT gen_random_uuid(), now(), now(), '00000000-0000-0000-0000-0000000000b1', gen_random_uuid(), "
            f"gen_random_uuid(), NULL, NULL, 'c' || g %% 7, 'a', 's', CASE WHEN g %% 5 = 0 THEN 'm' END, g, "
            f"CASE WHEN g %% 4 > 0 THEN g * 0.001 END, 'PROCESSED', "
            f"timestamptz '2027-05-31 23:00:00+00' - (g %% 900) * interval '1 day', "
            f"CASE WHEN g %% 3 = 0 THEN 'k' || g END, jsonb_build_object('n', g) FROM generate_series(1, %s) g",
            [rows])


def digest(table: str) -> tuple[int, str]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), md5(string_agg(t::text, '|' ORDER BY t.id)) FROM {table} t")
        return cursor.fetchone()


def test_converting_a_populated_table_keeps_every_row_and_fills_the_keys(db):
    create_single_table(3000)
    before = digest(OLD)
    now = datetime(2027, 2, 10, tzinfo=UTC)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {OLD} WHERE usage_date >= '2027-04-01'")
        (later,) = cursor.fetchone()

    report = convert_ledger(now=now, table=OLD, keys=OLD_KEYS)

    assert digest(OLD) == before  # every row, every column, through the partitioned table
    # The latest usage_date (May 31) lies after now, beyond the month after next: B stops there, and the rows
    # of April and May went to the default partition, then to their months created after the switch.
    assert report.bound == month(2027, 4)
    assert report.moved_to_default == later > 0
    assert {"switch", "check constraint added (NOT VALID)"} <= report.locked.keys()
    partitions = ledger_partitions(table=OLD)
    assert [(p.name, p.start, p.end) for p in partitions] == [
        (f"{OLD}_legacy", None, month(2027, 4)),
        (partition_name(month(2027, 4), OLD), month(2027, 4), month(2027, 5)),
        (partition_name(month(2027, 5), OLD), month(2027, 5), month(2027, 6)),
        (partition_name(month(2027, 6), OLD), month(2027, 6), month(2027, 7)),
        (partition_name(month(2027, 7), OLD), month(2027, 7), month(2027, 8)),
        (f"{OLD}_default", None, None),
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {OLD}_default")
        assert cursor.fetchone()[0] == 0  # every moved row is in its month now
        cursor.execute(f"SELECT (SELECT count(*) FROM {partition_name(month(2027, 4), OLD)}) "
                       f"+ (SELECT count(*) FROM {partition_name(month(2027, 5), OLD)})")
        assert cursor.fetchone()[0] == later
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {OLD_KEYS}")
        assert cursor.fetchone()[0] == 1000  # every third row carries a key
        cursor.execute(f"SELECT count(*) FROM {OLD_KEYS} k JOIN {OLD} e ON e.id = k.event_id "
                       f"AND e.usage_date = k.usage_date AND e.idempotency_key = k.idempotency_key")
        assert cursor.fetchone()[0] == 1000
        cursor.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
                       "AND contype = 'p'", [OLD])
        assert cursor.fetchone()[0] == "PRIMARY KEY (id, usage_date)"
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = %s ORDER BY 1", [OLD])
        assert [name for (name,) in cursor.fetchall()] == [f"{OLD}_book_date", f"{OLD}_pkey", f"{OLD}_unpriced"]
        # The legacy partition keeps the release before the conversion idempotent: its unique index and
        # the trigger that copies keys (a row the old statement writes straight into it here).
        cursor.execute(f"INSERT INTO {OLD} SELECT * FROM {OLD} WHERE idempotency_key = 'k3' "
                       f"ON CONFLICT DO NOTHING RETURNING id")
        assert cursor.fetchall() == []
        cursor.execute(f"INSERT INTO {OLD} (id, created_at, updated_at, book_id, raw_event_id, customer_id, "
                       f"customer_external_id, agent_code, signal_name, quantity, event_status, usage_date, "
                       f"idempotency_key, metadata) VALUES (gen_random_uuid(), now(), now(), "
                       f"'00000000-0000-0000-0000-0000000000b1', gen_random_uuid(), gen_random_uuid(), 'c', 'a', "
                       f"'s', 1, 'PROCESSED', '2027-02-10', 'during-rollout', '{{}}') RETURNING tableoid::regclass::text")
        assert cursor.fetchone()[0] == f"{OLD}_legacy"
        cursor.execute(f"SELECT count(*) FROM {OLD_KEYS} WHERE idempotency_key = 'during-rollout'")
        assert cursor.fetchone()[0] == 1
    # Once the legacy range has passed, the maintenance retires both; then converting again is a no-op.
    assert retire_transition_aids(now=month(2027, 3), table=OLD) == []
    assert sorted(retire_transition_aids(now=month(2027, 4), table=OLD)) == sorted([f"{OLD}_keys_sync", f"{OLD}_idem"])
    assert convert_ledger(now=now, table=OLD, keys=OLD_KEYS).steps == {}


def test_one_event_dated_far_ahead_neither_stops_nor_stretches_the_conversion(db):
    create_single_table(300)
    with connection.cursor() as cursor:  # a client's event of the year 8999, keyed, and one of next October
        cursor.execute(f"INSERT INTO {OLD} (id, created_at, updated_at, book_id, raw_event_id, customer_id, "
                       f"customer_external_id, agent_code, signal_name, quantity, event_status, usage_date, "
                       f"idempotency_key, metadata) SELECT gen_random_uuid(), now(), now(), "
                       f"'00000000-0000-0000-0000-0000000000b1', gen_random_uuid(), gen_random_uuid(), 'c', 'a', "
                       f"'s', 1, 'PROCESSED', d, k, '{{}}' FROM (VALUES (timestamptz '8999-12-31 00:00:00+00', "
                       f"'far'), (timestamptz '2027-10-15 00:00:00+00', NULL)) AS extra(d, k)")
    before = digest(OLD)

    report = convert_ledger(now=datetime(2027, 7, 3, tzinfo=UTC), table=OLD, keys=OLD_KEYS)

    assert report.bound == month(2027, 9)  # the month after next, not January 9000
    assert report.moved_to_default == 2 and digest(OLD) == before  # kept, every column
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT usage_date FROM {OLD}_default")
        assert cursor.fetchall() == [(datetime(8999, 12, 31, tzinfo=UTC),)]  # outside the months created
        cursor.execute(f"SELECT count(*) FROM {partition_name(month(2027, 10), OLD)}")
        assert cursor.fetchone()[0] == 1
        cursor.execute(f"SELECT count(*) FROM {OLD_KEYS} k JOIN {OLD} e ON e.id = k.event_id "
                       f"AND e.usage_date = k.usage_date WHERE k.idempotency_key = 'far'")
        assert cursor.fetchone()[0] == 1  # its key still points at it
        cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'c'",
                       [f"{OLD}_default"])
        assert cursor.fetchall() == []  # the default partition takes any date again
    assert [p.name for p in ledger_partitions(table=OLD)][:2] == [
        f"{OLD}_legacy", partition_name(month(2027, 9), OLD)]


def test_the_conversion_runs_back_and_forward_with_its_rows(db):
    create_single_table(500)
    before = digest(OLD)
    convert_ledger(now=datetime(2027, 7, 3, tzinfo=UTC), table=OLD, keys=OLD_KEYS)
    unconvert_ledger(table=OLD, idempotency_index=f"{OLD}_idem")
    assert digest(OLD) == before
    with connection.cursor() as cursor:
        cursor.execute("SELECT relkind FROM pg_class WHERE oid = %s::regclass", [OLD])
        assert cursor.fetchone()[0] == "r"
        cursor.execute(f"TRUNCATE {OLD_KEYS}")
    report = convert_ledger(now=datetime(2027, 7, 3, tzinfo=UTC), table=OLD, keys=OLD_KEYS)
    assert report.bound == month(2027, 8) and digest(OLD) == before


def test_an_empty_table_is_replaced_by_the_partitioned_one(db):
    create_single_table(0)
    report = convert_ledger(now=datetime(2027, 1, 15, tzinfo=UTC), table=OLD, keys=OLD_KEYS)
    assert report.replaced_empty
    assert [p.name for p in ledger_partitions(table=OLD)] == [
        partition_name(month(2027, m), OLD) for m in (1, 2, 3, 4)] + [f"{OLD}_default"]


def test_the_ledger_of_the_test_database_is_partitioned(db):
    partitions = ledger_partitions()
    assert partitions[-1].name == DEFAULT and partitions[-1].is_default
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass "
                       "AND contype = 'p'", [LEDGER])
        assert cursor.fetchone()[0] == "PRIMARY KEY (id, usage_date)"
        cursor.execute("SELECT count(*) FROM pg_constraint WHERE confrelid = %s::regclass", [LEDGER])
        assert cursor.fetchone()[0] == 0  # nothing references the partitioned table by a foreign key


# --------------------------------------------------------------------------- concurrent replays


@pytest.fixture
def partitions_dropped_after(transactional_db):
    """A test whose transactions commit leaves the partitions it created behind (the database's flush
    empties tables, it does not drop them): they are dropped after it, so no later test finds them."""
    before = set(names())
    yield
    with connection.cursor() as cursor:
        for name in sorted(set(names()) - before):
            cursor.execute(f"DROP TABLE {name}")


@pytest.mark.django_db(transaction=True)
def test_concurrent_batches_with_one_key_in_different_months_store_one_event(
        live_server, api, llm, partitions_dropped_after):
    import json
    import urllib.request

    dates = ["2031-07-01T00:00:00Z", "2029-10-01T00:00:00Z", "2031-08-05T00:00:00Z", "2029-02-02T00:00:00Z"]
    barrier, answers = threading.Barrier(len(dates)), [None] * len(dates)

    def send(position):
        request = urllib.request.Request(
            f"{live_server.url}/v1/usage/record", method="POST",
            data=json.dumps({"records": [rec(llm, dates[position], idempotencyKey="race")]}).encode(),
            headers={"x-api-key": api.raw_key, "Content-Type": "application/json"})
        barrier.wait()
        with urllib.request.urlopen(request, timeout=30) as response:
            answers[position] = json.loads(response.read())["results"]["success"][0]

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(dates))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({answer["eventId"] for answer in answers}) == 1
    assert sorted(bool(answer.get("replayed")) for answer in answers) == [False, True, True, True]
    assert UsageEvent.objects.filter(idempotency_key="race").count() == 1
    stored = UsageEvent.objects.get(idempotency_key="race")
    assert partition_of(stored.id) == partition_name(month_start(stored.usage_date))  # settled after its commit


# --------------------------------------------------------------------------- a restore racing a replay

def _held(statement: str, params: list, release: threading.Event) -> threading.Thread:
    """A thread whose transaction runs `statement` (a lock) and keeps it until `release` is set; returned once the
    lock is held."""
    from django.db import connection as thread_connection, transaction

    taken = threading.Event()

    def hold():
        try:
            with transaction.atomic(), thread_connection.cursor() as cursor:
                cursor.execute(statement, params)
                taken.set()
                release.wait(30)
        finally:
            taken.set()
            thread_connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(20), "the lock was not taken"
    return thread


def _waiting_on_locks(count: int) -> None:
    """Until `count` backends of this database wait for a lock (a statement blocked where the test means it to)."""
    import time

    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock'")
            if cursor.fetchone()[0] >= count:
                return
        time.sleep(0.02)
    raise AssertionError(f"fewer than {count} statements waiting for a lock")


def _in_thread(target) -> tuple[threading.Thread, list]:
    from django.db import connection as thread_connection

    outcome = []

    def run():
        try:
            outcome.append(target())
        except Exception as exc:  # noqa: BLE001 (handed to the test, which fails on it)
            outcome.append(exc)
        finally:
            thread_connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome


def _send(live_server, api, record_body) -> dict:
    import json
    import urllib.request

    request = urllib.request.Request(
        f"{live_server.url}/v1/usage/record", method="POST", data=json.dumps({"records": [record_body]}).encode(),
        headers={"x-api-key": api.raw_key, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["results"]["success"][0]


@pytest.mark.django_db(transaction=True)
def test_a_restore_holding_an_archived_key_makes_its_concurrent_replay_a_replay_of_the_restored_event(
        live_server, api, llm, partitions_dropped_after):
    """The restore has inserted the archived event's key and not yet committed when a batch sends that key again:
    the batch waits for it and answers the restored event (replayed); one event holds the key."""
    ledger_partitions_ensure(months=[month(2012, 4)])
    archived = record(api, rec(llm, "2012-04-03T00:00:00Z", idempotencyKey="race-restore"))["results"]["success"][0]
    ledger_partition_detach(month(2012, 4), now=NOW)
    release = threading.Event()
    # The restore stops at its second statement (the events and their backlog rows), its keys inserted.
    holder = _held(f"LOCK TABLE {RollupBacklog._meta.db_table} IN SHARE MODE", [], release)
    restore, restored = _in_thread(lambda: ledger_partition_restore(month(2012, 4)))
    _waiting_on_locks(1)
    replay, answers = _in_thread(lambda: _send(live_server, api, rec(llm, "2012-04-03T00:00:00Z",
                                                                        idempotencyKey="race-restore")))
    _waiting_on_locks(2)
    release.set()
    for thread in (holder, restore, replay):
        thread.join(30)
    assert restored[0].rows == 1 and answers[0]["replayed"] is True
    assert answers[0]["eventId"] == archived["eventId"]
    assert list(UsageEvent.objects.filter(idempotency_key="race-restore").values_list("pk", flat=True)) == [
        UUID(archived["eventId"])]
    assert UsageEventKey.objects.get(idempotency_key="race-restore").event_id == UUID(archived["eventId"])


@pytest.mark.django_db(transaction=True)
def test_a_replay_holding_an_archived_key_keeps_it_from_a_concurrent_restore_which_leaves_its_twin_out(
        live_server, api, llm, partitions_dropped_after):
    """A batch has stored a new event under an archived key (the detach released it) and not yet committed when
    the restore inserts the archive's keys: the restore waits for it and leaves the archived twin out."""
    ledger_partitions_ensure(months=[month(2012, 4)])
    archived = record(api, rec(llm, "2012-04-03T00:00:00Z", idempotencyKey="race-replay"))["results"]["success"][0]
    signal_id = UsageEvent.objects.get(pk=archived["eventId"]).signal_id
    ledger_partition_detach(month(2012, 4), now=NOW)
    release = threading.Event()
    # The batch stops after its recording statement: its first `environment` sorts the signal, whose row is held.
    holder = _held(f"SELECT 1 FROM {Signal._meta.db_table} WHERE id = %s FOR UPDATE", [signal_id], release)
    replay, answers = _in_thread(lambda: _send(live_server, api, rec(llm, "2012-04-03T00:00:00Z",
                                                                        idempotencyKey="race-replay",
                                                                        environment="production")))
    _waiting_on_locks(1)
    restore, restored = _in_thread(lambda: ledger_partition_restore(month(2012, 4)))
    _waiting_on_locks(2)
    release.set()
    for thread in (holder, replay, restore):
        thread.join(30)
    assert "replayed" not in answers[0] and answers[0]["eventId"] != archived["eventId"]
    assert (restored[0].rows, restored[0].left_out) == (0, 1)
    assert list(UsageEvent.objects.filter(idempotency_key="race-replay").values_list("pk", flat=True)) == [
        UUID(answers[0]["eventId"])]
    assert UsageEventKey.objects.get(idempotency_key="race-replay").event_id == UUID(answers[0]["eventId"])
