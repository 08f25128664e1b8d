"""Appending to the usage ledger: one bulk write per batch, idempotency decided by the database.

Every event is inserted with `INSERT ... ON CONFLICT DO NOTHING`; the unique constraint
`usage_event_idem_uniq` (book, idempotency_key) is the referee. A keyed event that the database did not
insert is a replay: the caller gets the event that holds the key (from an earlier request, a concurrent
one, or an earlier record of the same batch) and nothing new is stored.

On PostgreSQL the batch travels as ONE JSON parameter, expanded by `json_populate_recordset` into rows of
the table's own type: `bulk_create` would prepare and quote each of the ~2,600 values of a batch in Python
(measured: most of the hot path's time; docs/performance.md). Other databases (the SQLite of `make run`) use
`bulk_create`. `test_fast_insert_writes_every_column` keeps the column list in step with the model.
"""
import json
from dataclasses import dataclass

from django.db import connection

from config.core.scoping import owned
from customers.models import UsageEvent

def _text(value):
    return None if value is None else str(value)


def _instant(value):
    return None if value is None else value.isoformat()


def _as_is(value):
    return value


# Every column of the ledger and how its value travels inside the JSON document (exact decimals as text).
FAST_COLUMNS = (
    ("id", _text), ("raw_event_id", _text), ("book_id", _text), ("created_at", _instant), ("updated_at", _instant),
    ("customer_id", _text), ("agent_id", _text), ("signal_id", _text), ("customer_external_id", _as_is),
    ("agent_code", _as_is), ("signal_name", _as_is), ("model", _as_is), ("model_provider", _as_is),
    ("service_id", _text), ("input_tokens", _as_is), ("output_tokens", _as_is), ("cache_read_tokens", _as_is),
    ("cache_write_tokens", _as_is), ("services", _as_is), ("quantity", _text), ("usage_cost", _text),
    ("event_status", _as_is), ("usage_date", _instant), ("environment", _as_is), ("idempotency_key", _as_is),
    ("metadata", _as_is),
)
# The table's own row type gives every column its type: no cast list to keep in step.
_INSERT_SQL = (
    f"INSERT INTO {UsageEvent._meta.db_table} ({', '.join(column for column, _ in FAST_COLUMNS)}) "
    f"SELECT {', '.join(column for column, _ in FAST_COLUMNS)} "
    f"FROM json_populate_recordset(NULL::{UsageEvent._meta.db_table}, %s) ON CONFLICT DO NOTHING RETURNING id"
)


@dataclass(frozen=True)
class Appended:
    event: UsageEvent  # the stored event (the original one on a replay)
    replayed: bool


def _insert_postgresql(events: list[UsageEvent]) -> set:
    """Insert; returns the ids the database stored (a keyed event it skipped is a replay)."""
    document = json.dumps([{column: convert(getattr(event, column)) for column, convert in FAST_COLUMNS}
                           for event in events])
    with connection.cursor() as cursor:
        cursor.execute(_INSERT_SQL, [document])
        return {row[0] for row in cursor.fetchall()}


def _insert_portable(book, events: list[UsageEvent]) -> set:
    """`bulk_create` cannot say which rows it skipped: read the key holders back."""
    UsageEvent.objects.bulk_create(events, ignore_conflicts=True)
    keys = {event.idempotency_key for event in events if event.idempotency_key is not None}
    holders = set(owned(UsageEvent, book).filter(idempotency_key__in=keys).values_list("id", flat=True)) if keys else set()
    return {event.pk for event in events if event.idempotency_key is None or event.pk in holders}


def events_append(*, book, events: list[UsageEvent]) -> list[Appended]:
    """Insert `events` (built, unsaved, ids and timestamps assigned); results in the same order."""
    stored = _insert_postgresql(events) if connection.vendor == "postgresql" else _insert_portable(book, events)
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
