"""Appending to the usage ledger: one bulk write per batch, idempotency decided by the database.

Every event is inserted with `INSERT ... ON CONFLICT DO NOTHING`; the unique constraint
`usage_event_idem_uniq` (book, idempotency_key) is the referee. A keyed event that the database did not
insert is a replay: the caller gets the event that holds the key (from an earlier request, a concurrent
one, or an earlier record of the same batch) and nothing new is stored.

The batch travels as ONE JSON parameter: an array of rows, each an array of its values in
`SENT_COLUMNS` order, expanded by `jsonb_array_elements` and cast to each column's type; the book and the
append's instant, the same for every row, travel once beside it. `bulk_create` would prepare and quote each
of the ~2,600 values of a batch in Python (measured: most of the hot path's time), and rows as objects keyed
by column name were twice the bytes for PostgreSQL to receive and parse, and matched by name (0.5 ms a
batch more of PostgreSQL's CPU, docs/performance.md). `test_fast_insert_writes_every_column` keeps the column list in step with the model. Every
stored event also enters the analytics rollup's backlog (customers/rollup.py), in the same statement.
"""
import operator
import re
from dataclasses import dataclass
from functools import cache

from django.db import connection
from django.db.models.base import ModelState

from config.core import exact_json
from config.core.database import prepared_cursor
from config.core.scoping import owned
from customers.models import RollupBacklog, UsageEvent

# Every column of the ledger. Recording hands over each new event as a row: a dict with these keys
# (attnames, which are the column names here) but the `STAMPED_COLUMNS`, values as orjson writes them
# (UUIDs and instants as text, Decimals as JSON numbers of their own digits, config/core/exact_json.py).
FAST_COLUMNS = tuple(field.attname for field in UsageEvent._meta.concrete_fields)
# Stamped by the ledger, the same for every row of a batch: the book, and the instant of the append.
STAMPED_COLUMNS = ("book_id", "created_at", "updated_at")
SENT_COLUMNS = tuple(column for column in FAST_COLUMNS if column not in STAMPED_COLUMNS)
_sent_values = operator.itemgetter(*SENT_COLUMNS)


def _document(rows: list[dict]) -> str:
    """The rows as one JSON document. A Decimal (quantity, cost, a number in metadata) is written as a JSON
    number of its own digits: the numeric columns cast its text, and jsonb keeps it as sent."""
    return exact_json.dumps([_sent_values(row) for row in rows]).decode()


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


def _sent_value(column: str, position: int) -> str:
    """The column's value from the row's array `r`, as the column's type without its length or precision:
    the insert's assignment then checks those as it checks any value (an explicit cast to `varchar(255)`
    would cut a longer text short). JSON null is SQL NULL for JSON columns too."""
    column_type = re.sub(r"\(.*?\)", "", UsageEvent._meta.get_field(column).db_type(connection))
    if column_type == "jsonb":
        return f"nullif(r -> {position}, 'null')"
    return f"(r ->> {position})::{column_type}"


@cache
def _insert_sql() -> str:
    """The insert, built on first use (the column types are PostgreSQL's). It puts every stored event into
    the rollup backlog (customers/rollup.py) in the same statement, and answers NULL when it stored every
    row (the usual case: nothing to read back), else the ids it stored."""
    values = ", ".join(_sent_value(column, position) for position, column in enumerate(SENT_COLUMNS))
    return (
        f"WITH stored AS ("
        f"INSERT INTO {UsageEvent._meta.db_table} ({', '.join(STAMPED_COLUMNS + SENT_COLUMNS)}) "
        f"SELECT {', '.join(['%s'] * len(STAMPED_COLUMNS))}, {values} "
        f"FROM jsonb_array_elements(%s::jsonb) AS r ON CONFLICT DO NOTHING "
        f"RETURNING id, book_id), "
        f"pending AS (INSERT INTO {RollupBacklog._meta.db_table} (event_id, book_id) SELECT id, book_id FROM stored) "
        f"SELECT CASE WHEN count(*) = %s THEN NULL ELSE coalesce(array_agg(id), '{{}}') END FROM stored"
    )


@dataclass(frozen=True)
class Appended:
    event: UsageEvent  # the stored event (the original one on a replay)
    replayed: bool


def _insert(rows: list[dict], stamp: dict) -> set | None:
    """Insert; returns None when the database stored every row, else the ids it stored (a keyed event it
    skipped is a replay). `stamp` holds the `STAMPED_COLUMNS` in their order."""
    with prepared_cursor() as cursor:  # the document travels as a parameter, not quoted into the text
        cursor.execute(_insert_sql(), [*stamp.values(), _document(rows), len(rows)])
        stored_ids = cursor.fetchone()[0]
    return None if stored_ids is None else set(stored_ids)


def events_append(*, book, rows: list[dict], now) -> list[Appended]:
    """Insert new events given as rows (every column by attname but the `STAMPED_COLUMNS`, ids assigned);
    results in the same order. The ledger stamps each row with the book and `now`, the append's instant."""
    stamp = dict(zip(STAMPED_COLUMNS, (book.pk, now, now)))
    for row in rows:
        row.update(stamp)
    stored = _insert(rows, stamp)
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
