"""The daily usage rollup (`UsageDailyRollup`): kept exact in the transaction that changes the ledger.

One SQL definition says what an event contributes (`contributions_sql`): its UTC day, customer, agent,
signal and model, split per model for multi-service events (each part's cost to its model; the
event-level figures to the model of its first part). Every writer goes through it:

- recording a batch: `analytics_rollup_add` after the events are inserted, ONE
  `INSERT ... SELECT ... ON CONFLICT ... DO UPDATE SET x = x + EXCLUDED.x` statement;
- re-pricing (cost backfill): `analytics_rollup_subtract` with the events as they were, the update, then
  `analytics_rollup_add` with the events as they are;
- rebuilding a book (benchmark seeding, repair): `analytics_rollup_rebuild`, one `INSERT ... SELECT`.

Reads that need instants inside a day (edge scans) use the same contributions over the events.
Rows are upserted in key order, so concurrent batches lock shared rows in the same order (no deadlock).
"""
from collections.abc import Iterable, Sequence
from uuid import UUID

from django.db import connection

from catalog.models import ServiceEntry
from customers.models import UsageDailyRollup, UsageEvent

EVENTS = UsageEvent._meta.db_table
CATALOG = ServiceEntry._meta.db_table
ROLLUP = UsageDailyRollup._meta.db_table
KEY_COLUMNS = ("book_id", "day", "customer_id", "agent_id", "signal_id", "model")
MEASURES = ("event_count", "unpriced_count", "quantity", "cost", "model_event_count", "model_cost")

# What one (event, model) pair contributes. A part's model is the canonical name of the catalog entry
# that priced it, null for a non-LLM entry (isApi) or an unresolved part. Part costs are rounded to the
# stored 12 places one by one, so adding batch after batch equals summing everything at once.
_PARTS = """
    SELECT e.book_id, e.usage_date, e.customer_id, e.agent_id, e.signal_id, e.quantity, e.usage_cost,
           {label} AS label,
           CASE WHEN svc.is_api THEN NULL ELSE svc.canonical_name END AS model,
           1 AS first_part, e.usage_cost AS part_cost
    FROM {events} e {join}
    LEFT JOIN {catalog} svc ON svc.id = e.service_id
    WHERE e.services IS NULL AND {where}
  UNION ALL
    SELECT e.book_id, e.usage_date, e.customer_id, e.agent_id, e.signal_id, e.quantity, e.usage_cost,
           {label} AS label, part.model, part.first_part, part.part_cost
    FROM {events} e {join}
    CROSS JOIN LATERAL (
        SELECT CASE WHEN svc.is_api THEN NULL ELSE svc.canonical_name END AS model,
               min(item.position) AS first_part,
               sum(round((item.value ->> 'costUsd')::numeric, 12)) AS part_cost
        FROM jsonb_array_elements(e.services) WITH ORDINALITY AS item(value, position)
        LEFT JOIN {catalog} svc ON svc.id = (item.value ->> 'serviceId')::uuid
        GROUP BY 1
    ) part
    WHERE e.services IS NOT NULL AND {where}
"""

_CONTRIBUTIONS = """
    SELECT book_id, label, (usage_date AT TIME ZONE 'UTC')::date AS day, customer_id, agent_id, signal_id, model,
           count(*) FILTER (WHERE first_part = 1) AS event_count,
           count(*) FILTER (WHERE first_part = 1 AND usage_cost IS NULL) AS unpriced_count,
           coalesce(sum(quantity) FILTER (WHERE first_part = 1), 0) AS quantity,
           coalesce(sum(usage_cost) FILTER (WHERE first_part = 1), 0) AS cost,
           count(*) AS model_event_count,
           coalesce(sum(part_cost) FILTER (WHERE usage_cost IS NOT NULL), 0) AS model_cost
    FROM ({parts}) AS parts
    GROUP BY book_id, label, day, customer_id, agent_id, signal_id, model
"""


def contributions_sql(where: str, params: Sequence, *, join: str = "", label: str = "NULL::text") -> tuple[str, list]:
    """SQL for what the events matching `where` (over alias `e`, after an optional `join`) contribute to
    the rollup, grouped by (book_id, label, day, customer_id, agent_id, signal_id, model) with the rollup's
    measures. `params` are the parameters of `join` and `where` together, in that order."""
    parts = _PARTS.format(events=EVENTS, catalog=CATALOG, join=join, where=where, label=label)
    return _CONTRIBUTIONS.format(parts=parts), [*params, *params]


def _upsert(where: str, params: Sequence, *, sign: int) -> list[UUID]:
    """Add (sign 1) or take away (sign -1) the contributions of the events matching `where`; returns the
    ids of the rows the statement left at zero."""
    contributions, contribution_params = contributions_sql(where, params)
    signed = ", ".join(f"{sign} * c.{measure}" for measure in MEASURES)
    updates = ", ".join(f"{measure} = r.{measure} + EXCLUDED.{measure}" for measure in MEASURES)
    sql = (f"INSERT INTO {ROLLUP} AS r (id, created_at, updated_at, {', '.join(KEY_COLUMNS)}, {', '.join(MEASURES)}) "
           f"SELECT gen_random_uuid(), now(), now(), {', '.join('c.' + key for key in KEY_COLUMNS)}, {signed} "
           f"FROM ({contributions}) AS c ORDER BY {', '.join('c.' + key for key in KEY_COLUMNS[1:])} "
           f"ON CONFLICT ({', '.join(KEY_COLUMNS)}) DO UPDATE SET {updates}, updated_at = EXCLUDED.updated_at "
           f"RETURNING r.id, r.event_count = 0 AND r.model_event_count = 0")
    with connection.cursor() as cursor:
        cursor.execute(sql, contribution_params)
        return [row_id for row_id, emptied in cursor.fetchall() if emptied]


def _event_ids(events: Iterable[UsageEvent]) -> list[UUID]:
    return sorted({event.pk for event in events})


def analytics_rollup_add(*, book, events: Iterable[UsageEvent]) -> None:
    """Add these stored events (as they are in the database now) to the rollup: one statement. Call it
    in the transaction that inserted or re-priced them, with newly stored events only (never a replay)."""
    event_ids = _event_ids(events)
    if event_ids:
        _upsert("e.book_id = %s AND e.id = ANY(%s)", [book.pk, event_ids], sign=1)


def analytics_rollup_subtract(*, book, events: Iterable[UsageEvent]) -> None:
    """Take these stored events (as they are in the database now) out of the rollup, before they change;
    rows left at zero are deleted."""
    event_ids = _event_ids(events)
    if not event_ids:
        return
    emptied = _upsert("e.book_id = %s AND e.id = ANY(%s)", [book.pk, event_ids], sign=-1)
    if emptied:
        UsageDailyRollup.objects.filter(book=book, pk__in=emptied).delete()


def analytics_rollup_rebuild(*, book) -> int:
    """Recompute the book's rollup from its whole ledger (one DELETE, one INSERT ... SELECT); returns the
    number of rows. For seeding and repair: concurrent recording into the book must be stopped."""
    UsageDailyRollup.objects.filter(book=book).delete()
    contributions, params = contributions_sql("e.book_id = %s", [book.pk])
    sql = (f"INSERT INTO {ROLLUP} (id, created_at, updated_at, {', '.join(KEY_COLUMNS)}, {', '.join(MEASURES)}) "
           f"SELECT gen_random_uuid(), now(), now(), {', '.join('c.' + key for key in KEY_COLUMNS)}, "
           f"{', '.join('c.' + measure for measure in MEASURES)} FROM ({contributions}) AS c")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
