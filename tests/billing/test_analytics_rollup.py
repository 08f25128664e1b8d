"""The daily usage rollup stays exact: after a mixed workload it equals a full scan of the events."""
from collections import defaultdict
from datetime import timezone
from decimal import ROUND_HALF_UP, Decimal

import pytest

from catalog.models import ServiceEntry
from customers.models import RollupGrain, UsageDailyRollup, UsageEvent
from customers.rollup import analytics_rollup_rebuild
from tests.billing.analytics_support import ALPHA_PART, get, models, multi, rec, record, search_part  # noqa: F401
from tests.billing.test_usage_record_concurrency import post_in_parallel

TWELVE_PLACES = Decimal("1e-12")
MYSTERY_PART = {"model": "mystery-model", "modelProvider": "inhouse", "inputTokens": 10, "outputTokens": 10}


def scanned(book) -> dict:
    """The rollup computed from scratch in Python, from the events as stored: {key: measures}, every grain
    derived from the full daily one by summing away its dimensions (and days, for month rows)."""
    full = _scanned_full(book)
    rows = defaultdict(lambda: [0, 0, Decimal(0), Decimal(0), 0, Decimal(0), Decimal(0)])
    for (day, customer, agent, signal, model), values in full.items():
        for grain in RollupGrain:
            kept = {"customer": not grain & 4, "signal": not grain & 2, "model": not grain & 1}
            key = (grain.value, day.replace(day=1) if grain & 8 else day, customer if kept["customer"] else None,
                   agent, signal if kept["signal"] else None, model if kept["model"] else None)
            rows[key] = [total + value for total, value in zip(rows[key], values)]
    return {key: tuple(values) for key, values in rows.items()}


def _scanned_full(book) -> dict:
    services = {str(entry.pk): entry for entry in ServiceEntry.objects.all()}

    def model_of(service):
        return None if service is None or service.is_api else service.canonical_name

    rows = defaultdict(lambda: [0, 0, Decimal(0), Decimal(0), 0, Decimal(0), Decimal(0)])
    for event in UsageEvent.objects.filter(book=book).select_related("service"):
        day = event.usage_date.astimezone(timezone.utc).date()
        if event.services is None:
            parts = [(model_of(event.service), event.usage_cost)]
        else:
            parts = [(model_of(services.get(part["serviceId"] or "")),
                      None if part["costUsd"] is None else Decimal(part["costUsd"]).quantize(TWELVE_PLACES,
                                                                                            ROUND_HALF_UP))
                     for part in event.services]
        for position, (model, _) in enumerate(parts):
            if model in [m for m, _ in parts[:position]]:
                continue  # one row per model an event names
            row = rows[(day, event.customer_id, event.agent_id, event.signal_id, model)]
            if position == 0:
                row[0] += 1
                row[1] += event.usage_cost is None
                row[2] += event.quantity
                row[3] += event.usage_cost or 0
                row[6] += max(event.quantity, 1)
            row[4] += 1
            if event.usage_cost is not None:
                row[5] += sum((cost or 0 for m, cost in parts if m == model), Decimal(0))
    return {key: tuple(values) for key, values in rows.items()}


def stored(book) -> dict:
    return {(row.grain, row.day, row.customer_id, row.agent_id, row.signal_id, row.model):
            (row.event_count, row.unpriced_count, row.quantity, row.cost, row.model_event_count, row.model_cost,
             row.attempts)
            for row in UsageDailyRollup.objects.filter(book=book)}


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
    results = post_in_parallel(f"{live_server.url}/v1/usage/record", api.raw_key, bodies)
    assert all(status == 200 for status, _ in results)
    (row,) = UsageDailyRollup.objects.filter(book=book, grain=RollupGrain.FULL)
    assert (row.event_count, row.quantity, row.model_event_count) == (80, 80, 80)
    assert stored(book) == scanned(book)
