"""The daily usage rollup stays exact: after a mixed workload it equals a full scan of the events."""
import pytest

from customers.models import RollupBacklog, RollupGrain, UsageDailyRollup, UsageEvent
from customers.rollup import analytics_rollup_catch_up, analytics_rollup_rebuild
from tests.analytics.support import (ALPHA_PART, get, models, multi, rec, record, scanned,  # noqa: F401
                                             search_part, stored)
from tests.parallel import in_parallel, post

MYSTERY_PART = {"model": "mystery-model", "modelProvider": "inhouse", "inputTokens": 10, "outputTokens": 10}


def test_rollup_equals_a_scan_after_batches_replays_unpriced_multi_service_and_backfill(api, book, models):
    record(api,
           rec("acme", "writer", "pages", "2025-04-01T10:00:00Z", quantity="2.5", idempotencyKey="k1"),
           rec("acme", "writer", "pages", "2025-04-01T11:00:00Z", model="beta-llm"),
           rec("beta", "writer", "pages", "2025-04-01T23:59:59Z", idempotencyKey="k2"),
           multi("acme", "research", "search", "2025-04-02T00:00:00Z", [ALPHA_PART, ALPHA_PART, search_part(3)]),
           rec("acme", "writer", "pages", "2025-04-02T08:00:00Z", model="mystery-model", provider="inhouse"))
    record(api,  # replays (also twice in one batch) add nothing; new events add
           rec("acme", "writer", "pages", "2025-04-01T10:00:00Z", quantity="2.5", idempotencyKey="k1"),
           rec("beta", "writer", "pages", "2025-04-01T23:59:59Z", idempotencyKey="k2"),
           rec("beta", "writer", "reports", "2025-04-03T09:00:00Z", idempotencyKey="k3"),
           rec("beta", "writer", "reports", "2025-04-03T09:00:00Z", idempotencyKey="k3"),
           rec("acme", "writer", "pages", "2025-04-01T12:00:00Z"),
           rec("acme", "writer", "pages", "2025-04-01T13:00:00Z", quantity=0))  # an attempt without outcome
    record(api,  # unpriced: an unknown single-service model, and a multi-service event with an unknown part
           multi("acme", "research", "search", "2025-04-02T09:00:00Z", [search_part(1), MYSTERY_PART]),
           rec("beta", "writer", "pages", "2025-04-03T10:00:00Z", model="mystery-model", provider="inhouse",
               quantity=7))
    assert UsageEvent.objects.filter(book=book).count() == 10
    before_backfill = stored(book)
    assert before_backfill == scanned(book)
    assert sum(values[1] for key, values in before_backfill.items() if key[0] == RollupGrain.FULL) == 3
    mapped = api.post("/v1/events/map-model", {"model": "mystery-model", "modelProvider": "inhouse",
                                              "serviceId": str(models["beta"].id)})
    assert mapped.status_code in (200, 201), mapped.content
    assert not UsageEvent.objects.filter(book=book, usage_cost__isnull=True).exists()
    record(api, rec("acme", "writer", "pages", "2025-04-03T11:00:00Z", model="mystery-model", provider="inhouse"))
    after_backfill = stored(book)
    assert after_backfill == scanned(book)
    assert all(values[0] or values[4] for values in after_backfill.values())  # no row left at zero
    assert all(values[1] == 0 for values in after_backfill.values())
    assert analytics_rollup_rebuild(book=book) == len(after_backfill)
    assert stored(book) == after_backfill


def test_rollup_of_one_book_never_holds_another_books_events(api, other_api, book, other_book, models):
    record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"))
    record(other_api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"),
           rec("x", "y", "z", "2025-04-02T10:00:00Z"))
    assert sum(values[0] for key, values in stored(book).items() if key[0] == RollupGrain.FULL) == 1
    assert sum(values[0] for key, values in stored(other_book).items() if key[0] == RollupGrain.FULL) == 2
    assert get(api, "/v1/analytics/usage", startDate="2025-04-01", endDate="2025-04-30")["summary"]["totalEvents"] == 1


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_parallel_batches_on_the_same_rollup_row_all_count(live_server, api, book, models):
    bodies = [{"records": [rec("acme", "writer", "pages", "2025-04-01T10:00:00Z") for _ in range(10)]}
              for _ in range(8)]
    results = in_parallel([post(f"{live_server.url}/v1/usage/record", api.raw_key, body) for body in bodies])
    assert all(status == 200 for status, _ in results)
    (row,) = UsageDailyRollup.objects.filter(book=book, grain=RollupGrain.FULL)
    assert (row.event_count, row.quantity, row.model_event_count) == (80, 80, 80)
    assert stored(book) == scanned(book)


def _pending(book) -> set:
    return set(RollupBacklog.objects.filter(book=book).values_list("event_id", flat=True))


def test_recording_leaves_its_new_events_in_the_backlog_and_a_read_catches_them_up(api, book, models):
    record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z", idempotencyKey="k1"),
           rec("beta", "writer", "pages", "2025-04-02T10:00:00Z"))
    record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z", idempotencyKey="k1"))  # a replay
    assert _pending(book) == set(UsageEvent.objects.filter(book=book).values_list("id", flat=True))
    assert len(_pending(book)) == 2
    assert not UsageDailyRollup.objects.filter(book=book).exists()  # nothing added yet (no commit hook ran)
    usage = get(api, "/v1/analytics/usage", startDate="2025-04-01", endDate="2025-04-30")
    assert usage["summary"]["totalEvents"] == 2  # the read caught the book up first
    assert _pending(book) == set()
    assert stored(book) == scanned(book)
    assert analytics_rollup_catch_up(book_id=book.pk) == 0  # a second catch-up adds nothing


def test_a_catch_up_groups_by_hashing_and_leaves_the_callers_transaction_as_it_found_it(api, book, models):
    from django.db import connection, transaction

    record(api, *[rec(f"c{i}", "writer", "pages", f"2025-04-0{1 + i % 3}T10:00:00Z") for i in range(30)])
    statements = []

    def settings_of_the_catch_up(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with transaction.atomic(), connection.execute_wrapper(settings_of_the_catch_up):
        assert analytics_rollup_catch_up(book_id=book.pk) == 30
        with connection.cursor() as cursor:
            cursor.execute("SHOW enable_sort")
            assert cursor.fetchone()[0] == "on"  # later statements of the transaction may sort again
    assert any("enable_sort = off" in sql for sql in statements)
    assert stored(book) == scanned(book)


def test_backfill_of_events_both_in_the_rollup_and_still_in_the_backlog_stays_exact(api, book, models):
    record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z", model="mystery-model", provider="inhouse"))
    assert analytics_rollup_catch_up(book_id=book.pk) == 1  # this one is in the rollup, unpriced
    record(api, rec("acme", "writer", "pages", "2025-04-01T11:00:00Z", model="mystery-model", provider="inhouse"),
           multi("acme", "research", "search", "2025-04-01T12:00:00Z", [search_part(1), MYSTERY_PART]))
    waiting = _pending(book)
    assert len(waiting) == 2
    mapped = api.post("/v1/events/map-model", {"model": "mystery-model", "modelProvider": "inhouse",
                                              "serviceId": str(models["beta"].id)})
    assert mapped.status_code in (200, 201), mapped.content
    assert not UsageEvent.objects.filter(book=book, usage_cost__isnull=True).exists()
    assert _pending(book) == waiting  # re-pricing left them to the catch-up
    after = stored(book)
    assert after == scanned(book)
    assert all(values[1] == 0 for values in after.values())  # none counted unpriced any more


def test_rebuild_empties_the_backlog_it_has_counted(api, book, models):
    record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"))
    assert len(_pending(book)) == 1
    analytics_rollup_rebuild(book=book)
    assert _pending(book) == set()
    assert stored(book) == scanned(book)
