"""Appending to the usage ledger: one bulk write per batch, idempotency decided by the database.

Every event is inserted with `INSERT ... ON CONFLICT DO NOTHING`; the unique constraint
`usage_event_idem_uniq` (book, idempotency_key) is the referee. A keyed event that the database did not
insert is a replay: the caller gets the event that holds the key (from an earlier request, a concurrent
one, or an earlier record of the same batch) and nothing new is stored.

On PostgreSQL the batch travels as ONE JSON parameter, expanded by `json_populate_recordset` into rows of
the table's own type: `bulk_create` would prepare and quote each of the ~2,600 values of a batch in Python
(measured: most of the hot path's time; docs/performance.md). Other databases (the SQLite of `make run`) use
`bulk_create`. `test_fast_insert_writes_every_column` keeps the column list in step with the model. Every
stored event also enters the analytics rollup's backlog (customers/rollup.py), in the same statement.
"""
import json
import operator
from dataclasses import dataclass
from decimal import Decimal

import orjson
from django.db import connection

from config.core.database import on_postgresql
from config.core.scoping import owned
from customers.models import RollupBacklog, UsageEvent

# Every column of the ledger, in the order of the JSON rows (values as orjson writes them: UUIDs and
# instants as text, exact decimals as text through `_exact`).
FAST_COLUMNS = (
    "id", "raw_event_id", "book_id", "created_at", "updated_at", "customer_id", "agent_id", "signal_id",
    "customer_external_id", "agent_code", "signal_name", "model", "model_provider", "service_id", "input_tokens",
    "output_tokens", "cache_read_tokens", "cache_write_tokens", "services", "quantity", "usage_cost",
    "event_status", "usage_date", "environment", "idempotency_key", "metadata",
)
_ROW_VALUES = operator.attrgetter(*FAST_COLUMNS)


def _exact(value):
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _document(events: list[UsageEvent]) -> str:
    rows = [dict(zip(FAST_COLUMNS, _ROW_VALUES(event))) for event in events]
    try:
        return orjson.dumps(rows, default=_exact).decode()
    except TypeError:  # orjson's JSONEncodeError, e.g. an integer beyond 64 bits in metadata: jsonb keeps it
        return json.dumps(rows, default=str)


# The table's own row type gives every column its type: no cast list to keep in step. The same statement
# puts every stored event into the rollup backlog (customers/rollup.py).
_INSERT_SQL = (
    f"WITH stored AS ("
    f"INSERT INTO {UsageEvent._meta.db_table} ({', '.join(FAST_COLUMNS)}) "
    f"SELECT {', '.join(FAST_COLUMNS)} "
    f"FROM json_populate_recordset(NULL::{UsageEvent._meta.db_table}, %s) ON CONFLICT DO NOTHING "
    f"RETURNING id, book_id), "
    f"pending AS (INSERT INTO {RollupBacklog._meta.db_table} (event_id, book_id) SELECT id, book_id FROM stored) "
    f"SELECT id FROM stored"
)


@dataclass(frozen=True)
class Appended:
    event: UsageEvent  # the stored event (the original one on a replay)
    replayed: bool


def _insert_postgresql(events: list[UsageEvent]) -> set:
    """Insert; returns the ids the database stored (a keyed event it skipped is a replay)."""
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_SQL, [_document(events)])
        return {row[0] for row in cursor.fetchall()}


def _insert_portable(book, events: list[UsageEvent]) -> set:
    """`bulk_create` cannot say which rows it skipped: read the key holders back."""
    UsageEvent.objects.bulk_create(events, ignore_conflicts=True)
    keys = {event.idempotency_key for event in events if event.idempotency_key is not None}
    holders = set(owned(UsageEvent, book).filter(idempotency_key__in=keys).values_list("id", flat=True)) if keys else set()
    stored = {event.pk for event in events if event.idempotency_key is None or event.pk in holders}
    RollupBacklog.objects.bulk_create([RollupBacklog(event_id=pk, book_id=book.pk) for pk in stored])
    return stored


def events_append(*, book, events: list[UsageEvent]) -> list[Appended]:
    """Insert `events` (built, unsaved, ids and timestamps assigned); results in the same order."""
    stored = _insert_postgresql(events) if on_postgresql() else _insert_portable(book, events)
    if len(stored) == len(events):  # the usual case: no replay, no further query
        return [Appended(event=event, replayed=False) for event in events]
    replayed_keys = {event.idempotency_key for event in events if event.pk not in stored}
    holders = {event.idempotency_key: event for event in events if event.pk in stored}
    earlier = set(replayed_keys - holders.keys())
    if earlier:  # only replays of earlier requests read rows back
        holders.update((event.idempotency_key, event)
                       for event in owned(UsageEvent, book).filter(idempotency_key__in=earlier))
    return [Appended(event=event, replayed=False) if event.pk in stored
            else Appended(event=holders[event.idempotency_key], replayed=True) for event in events]
