"""Appending to the usage ledger: one statement per batch, idempotency decided by the database.

The ledger is partitioned by month of `usage_date` (customers/partitions.py), so no unique index of
(book, idempotency_key) can span it; the table of keys `UsageEventKey` (not partitioned) does. One
statement inserts the batch's keys there with `ON CONFLICT DO NOTHING`, then the events that are
unkeyed or whose key it stored, then those events' rows of the analytics rollup's backlog
(customers/rollup.py). A keyed event whose key was not stored is a replay: the caller gets the event that
holds the key (from an earlier request, a concurrent one, or an earlier record of the same batch: the
keys go in in batch order) and nothing new is stored. A concurrent batch with the same key waits on the
key's row and then finds it taken, as it would on a unique index of the ledger.

The batch travels as ONE JSON parameter: an array of rows, each an array of its values in
`SENT_COLUMNS` order, expanded by `jsonb_array_elements` and cast to each column's type once (the
`batch` CTE, which both inserts read); the book and the append's instant, the same for every row, travel
beside it. Why not `bulk_create`: it prepares and quotes every value of a batch in Python, and rows as
objects keyed by column name are matched by name (docs/performance.md has the figures).
`test_fast_insert_writes_every_column` keeps the column list in step with the model.

A row dated in a month without a partition lands in the default partition (no insert fails for want of
one); the statement says whether a row dated in the settle window did (customers/partitions.py:
`settle_window`, from LEDGER_PARTITIONS_PAST_MONTHS back to the months the job keeps ahead), and after
commit that month gets its partition (`ledger_partitions_settle`, run outside the request). A row dated
outside the window stays in the default partition.
"""
import operator
import re
from functools import cache
from typing import NamedTuple

from django.db import OperationalError, connection, transaction
from django.db.models.base import ModelState

from accounts.book_generations import Generation
from core import exact_json
from core.background import TaskRunner
from core.database import prepared_cursor
from core.scoping import owned
from customers.models import RollupBacklog, UsageEvent, UsageEventKey
from customers.partitions import DEFAULT, settle_window

# Every column of the ledger. Recording hands over each new event as a row: a dict with these keys
# (attnames, which are the column names here) but the `STAMPED_COLUMNS`, values as orjson writes them
# (UUIDs and instants as text, Decimals as JSON numbers of their own digits, core/exact_json.py).
FAST_COLUMNS = tuple(field.attname for field in UsageEvent._meta.concrete_fields)
# Stamped by the ledger, the same for every row of a batch: the book, and the instant of the append.
STAMPED_COLUMNS = ("book_id", "created_at", "updated_at")
SENT_COLUMNS = tuple(column for column in FAST_COLUMNS if column not in STAMPED_COLUMNS)
_sent_values = operator.itemgetter(*SENT_COLUMNS)


def _document(rows: list[dict]) -> str:
    """The rows as one JSON document. A Decimal (quantity, cost, a number in metadata) is written as a JSON
    number of its own digits: the numeric columns cast its text, and jsonb keeps it as sent."""
    return exact_json.dumps([_sent_values(row) for row in rows]).decode()


# --------------------------------------------------------------------------- instances without Model.__init__
# The one place in the code base that builds model instances by assigning `__dict__`. Why: recording
# answers each new event as an instance (post-ingestion work and the answer read its attributes), and
# `Model.__init__` runs a descriptor per field for each of them, a cost a batch of a hundred events feels
# (docs/performance.md). This is what `Model.from_db` leaves behind for a row of
# attnames, built straight from the row that was inserted. Keep it here; everywhere else, `from_db`.

def _instance_from_row(row: dict, alias: str) -> UsageEvent:
    """The stored event as a model instance, as `from_db` would build it from `row` (every concrete field's
    attname; see above). The row is handed over, not copied: it becomes the instance's attributes."""
    state = ModelState()
    state.adding, state.db = False, alias
    row["_state"] = state
    event = UsageEvent.__new__(UsageEvent)
    event.__dict__ = row
    return event


# --------------------------------------------------------------------------- the statement

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
    """The statement, built on first use (the column types are PostgreSQL's). Parameters: the book (for the
    prices in force), the prices the batch was priced at, the rows' JSON document, the book (for the keys), the
    `STAMPED_COLUMNS`, the number of rows, the settle window's start and end. It answers (NULL when it stored
    every row, the usual case, else the ids it stored; whether any row dated in the settle window landed in the
    default partition; the generations in force, accounts/book_generations.py; the transaction's id, which a
    commit whose answer is lost is asked about by, core/postgresql). It stores nothing when other prices are in
    force."""
    values = ", ".join(f"{_sent_value(column, position)} AS {column}" for position, column in enumerate(SENT_COLUMNS))
    sent = ", ".join(SENT_COLUMNS)
    return (
        f"WITH prices AS MATERIALIZED (SELECT accounts_prices_in_force(%s::uuid) AS in_force), "
        f"passed AS MATERIALIZED (SELECT in_force[3:4] = %s::bigint[] AS ok FROM prices), "
        f"batch AS MATERIALIZED ("
        f"SELECT {values}, n FROM jsonb_array_elements(%s::jsonb) WITH ORDINALITY AS e(r, n)), "
        f"claimed AS ("
        f"INSERT INTO {UsageEventKey._meta.db_table} (book_id, idempotency_key, event_id, usage_date) "
        f"SELECT %s, idempotency_key, id, usage_date FROM batch "
        f"WHERE idempotency_key IS NOT NULL AND (SELECT ok FROM passed) ORDER BY n "
        f"ON CONFLICT DO NOTHING RETURNING event_id), "
        f"stored AS ("
        f"INSERT INTO {UsageEvent._meta.db_table} ({', '.join(STAMPED_COLUMNS)}, {sent}) "
        f"SELECT {', '.join(['%s'] * len(STAMPED_COLUMNS))}, {sent} FROM batch "
        f"WHERE (SELECT ok FROM passed) AND (idempotency_key IS NULL OR id IN (SELECT event_id FROM claimed)) "
        f"RETURNING id, book_id, usage_date, tableoid), "
        f"pending AS (INSERT INTO {RollupBacklog._meta.db_table} (event_id, book_id, usage_date) "
        f"SELECT id, book_id, usage_date FROM stored) "
        f"SELECT CASE WHEN count(*) = %s THEN NULL ELSE coalesce(array_agg(id), '{{}}') END, "
        f"coalesce(bool_or(tableoid = '{DEFAULT}'::regclass AND usage_date >= %s AND usage_date < %s), false), "
        f"(SELECT in_force FROM prices), pg_current_xact_id()::text FROM stored"
    )


class Appended(NamedTuple):
    """One row's outcome, in the batch's order. A NamedTuple, as recording's other per-record values: one is
    built for every event of a batch."""

    event: UsageEvent  # the stored event (the original one on a replay)
    replayed: bool


class PricesMoved(Exception):
    """The batch was priced at other prices than those in force when it was to be stored: nothing was stored.
    `generation`: the generations in force then, to price the batch again at."""

    def __init__(self, generation: Generation):
        super().__init__("Prices changed while the batch was priced.")
        self.generation = generation


def _insert(book_id, rows: list[dict], stamp: dict, now, generation: Generation) -> set | None:
    """Insert; returns None when the database stored every row, else the ids it stored (a keyed event it
    skipped is a replay). `stamp` holds the `STAMPED_COLUMNS` in their order."""
    with prepared_cursor() as cursor:  # the document travels as a parameter, not quoted into the text
        cursor.execute(_insert_sql(), [book_id, generation.prices, _document(rows), book_id, *stamp.values(),
                                       len(rows), *settle_window(now)])
        stored_ids, in_default, in_force, connection.transaction_id_known = cursor.fetchone()
    if in_force[2:] != generation.prices:
        raise PricesMoved(Generation(*in_force))
    if in_default:  # a month of the settle window without its partition yet: one once this batch is committed
        # Robust: the batch is stored whatever happens to this (the hourly job settles what it could not).
        transaction.on_commit(_settle_partitions, robust=True)
    return None if stored_ids is None else set(stored_ids)


# The settle task leaves the request: DDL and row moves have no place in a client's recording request, also
# without a broker (CELERY_TASK_ALWAYS_EAGER), where `delay` would run them inline. Every batch of a back-fill
# into a month without its partition lands in the default partition and asks for it: one run is asked while one
# waits (a task per batch read the default partition again each time, 160 runs for one attach in a benchmark's
# first seconds, docs/performance.md).
settle_runner = TaskRunner("ledger-partitions-settle", once_while_waiting=True)
SETTLE_TASK = "customers.tasks.ledger_partitions_settle_task"


def _settle_partitions() -> None:
    settle_runner.dispatch(SETTLE_TASK)


def settle_asked_take() -> None:
    """Called by the settle task before it reads: a batch committed from now on asks for another run."""
    settle_runner.taken(SETTLE_TASK)


def _holders(book, keys: set) -> dict:
    """The stored events holding these keys of the book, by key: through the keys' table, which names each
    event's id (a probe of each month's primary key; the ledger has no index of keys)."""
    holder_ids = owned(UsageEventKey, book).filter(idempotency_key__in=keys).values("event_id")
    return {event.idempotency_key: event for event in owned(UsageEvent, book).filter(id__in=holder_ids)}


def events_append(*, book, rows: list[dict], now, generation: Generation) -> list[Appended]:
    """Insert new events given as rows (every column by attname but the `STAMPED_COLUMNS`, ids assigned);
    results in the same order. The ledger stamps each row with the book and `now`, the append's instant.
    `generation`: what the rows were priced at; PricesMoved, with nothing stored, when other prices are in
    force (accounts/book_generations.py: "Prices in force")."""
    stamp = dict(zip(STAMPED_COLUMNS, (book.pk, now, now)))
    for row in rows:
        row.update(stamp)
    stored = _insert(book.pk, rows, stamp, now, generation)
    alias = connection.alias  # read once: every access to `connection` is a thread-local lookup
    if stored is None or len(stored) == len(rows):  # the usual case: no replay, no further query
        return [Appended(_instance_from_row(row, alias), False) for row in rows]
    new_events = {row["id"]: _instance_from_row(row, alias) for row in rows if row["id"] in stored}
    holders = {event.idempotency_key: event for event in new_events.values()}
    earlier = {row["idempotency_key"] for row in rows if row["id"] not in stored} - holders.keys()
    if earlier:  # only replays of earlier requests read rows back
        holders.update(_holders(book, earlier))
        if not earlier <= holders.keys():
            # The key's month was archived between the insert and this read (customers/partitions.py
            # releases an archived month's keys): a retry records the event anew. A 503 says retry.
            raise OperationalError("An idempotency key's event was archived meanwhile; retry.")
    return [Appended(new_events[row["id"]], False) if row["id"] in stored
            else Appended(holders[row["idempotency_key"]], True) for row in rows]
