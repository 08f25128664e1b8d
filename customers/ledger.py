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
from dataclasses import dataclass
from decimal import Decimal

import orjson
from django.db import connection
from django.db.models.base import ModelState

from config.core.database import on_postgresql, prepared_cursor
from config.core.scoping import owned
from customers.models import RollupBacklog, UsageEvent

# Every column of the ledger. Recording hands over each new event as a row: a dict with exactly these keys
# (attnames, which are the column names here), values as orjson writes them (UUIDs and instants as text,
# exact decimals as text through `_exact`).
FAST_COLUMNS = tuple(field.attname for field in UsageEvent._meta.concrete_fields)


def _exact(value):
    if isinstance(value, Decimal):
        return str(value)
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


def _document(rows: list[dict]) -> str:
    try:
        return orjson.dumps(rows, default=_exact).decode()
    except TypeError:  # orjson's JSONEncodeError, e.g. an integer beyond 64 bits in metadata: jsonb keeps it
        return json.dumps(rows, default=str)


def _stored_event(row: dict, alias: str) -> UsageEvent:
    """The stored event as a model instance, as `from_db` would build it but straight from its row:
    `Model.__init__` runs a descriptor per field, about 1 ms per batch of 100 on the hot path. The row is
    handed over, not copied: it becomes the instance's attributes."""
    state = ModelState()
    state.adding, state.db = False, alias
    row["_state"] = state
    event = UsageEvent.__new__(UsageEvent)
    event.__dict__ = row
    return event


# The table's own row type gives every column its type: no cast list to keep in step. The same statement
# puts every stored event into the rollup backlog (customers/rollup.py). It answers NULL when it stored
# every row (the usual case: nothing to read back), else the ids it stored.
_INSERT_SQL = (
    f"WITH stored AS ("
    f"INSERT INTO {UsageEvent._meta.db_table} ({', '.join(FAST_COLUMNS)}) "
    f"SELECT {', '.join(FAST_COLUMNS)} "
    f"FROM json_populate_recordset(NULL::{UsageEvent._meta.db_table}, %s::json) ON CONFLICT DO NOTHING "
    f"RETURNING id, book_id), "
    f"pending AS (INSERT INTO {RollupBacklog._meta.db_table} (event_id, book_id) SELECT id, book_id FROM stored) "
    f"SELECT CASE WHEN count(*) = %s THEN NULL ELSE coalesce(array_agg(id), '{{}}') END FROM stored"
)


@dataclass(frozen=True)
class Appended:
    event: UsageEvent  # the stored event (the original one on a replay)
    replayed: bool


def _insert_postgresql(rows: list[dict]) -> set | None:
    """Insert; returns None when the database stored every row, else the ids it stored (a keyed event it
    skipped is a replay)."""
    with prepared_cursor() as cursor:  # the document travels as a parameter, not quoted into the text
        cursor.execute(_INSERT_SQL, [_document(rows), len(rows)])
        stored_ids = cursor.fetchone()[0]
    return None if stored_ids is None else set(stored_ids)


def _insert_portable(book, rows: list[dict]) -> set:
    """`bulk_create` cannot say which rows it skipped: read the key holders back."""
    UsageEvent.objects.bulk_create([UsageEvent(**row) for row in rows], ignore_conflicts=True)
    keys = {row["idempotency_key"] for row in rows if row["idempotency_key"] is not None}
    holders = set(owned(UsageEvent, book).filter(idempotency_key__in=keys).values_list("id", flat=True)) if keys else set()
    stored = {row["id"] for row in rows if row["idempotency_key"] is None or row["id"] in holders}
    RollupBacklog.objects.bulk_create([RollupBacklog(event_id=pk, book_id=book.pk) for pk in stored])
    return stored


def events_append(*, book, rows: list[dict]) -> list[Appended]:
    """Insert new events given as rows (every column by attname, ids and timestamps assigned); results in
    the same order."""
    stored = _insert_postgresql(rows) if on_postgresql() else _insert_portable(book, rows)
    alias = connection.alias  # read once: every access to `connection` is a thread-local lookup
    if stored is None or len(stored) == len(rows):  # the usual case: no replay, no further query
        return [Appended(event=_stored_event(row, alias), replayed=False) for row in rows]
    new_events = {row["id"]: _stored_event(row, alias) for row in rows if row["id"] in stored}
    holders = {event.idempotency_key: event for event in new_events.values()}
    earlier = {row["idempotency_key"] for row in rows if row["id"] not in stored} - holders.keys()
    if earlier:  # only replays of earlier requests read rows back
        holders.update((event.idempotency_key, event)
                       for event in owned(UsageEvent, book).filter(idempotency_key__in=earlier))
    return [Appended(event=new_events[row["id"]], replayed=False) if row["id"] in stored
            else Appended(event=holders[row["idempotency_key"]], replayed=True) for row in rows]
