"""What the ledger verifier (`manage.py ledger_verify`, console/verification.py) checks in this app: the
tables derived from the ledger beside the rollup (whose check lives with its writers, customers/rollup.py
`analytics_rollup_differences`).

- The rollup backlog: a row whose event is not in the ledger would never be counted (a catch-up keeps it,
  customers/rollup.py) and means an event went missing after it was recorded. Repair deletes such rows.
- The idempotency keys (`UsageEventKey`, the referee of replays): a key whose event is not in the ledger would
  answer every replay of it with a 503 ("archived meanwhile"), and a keyed event without its key row would be
  recorded again by a replay. Repair deletes the first and writes the second (ON CONFLICT DO NOTHING: a key
  another event holds is reported, never rewritten: that would be two events with one key in the ledger, which
  only a person can settle).

Each check is one statement over one book; none writes the ledger."""
from dataclasses import dataclass

from django.db import connection, transaction

from core.scoping import book_sql
from customers.models import RollupBacklog, UsageEvent, UsageEventKey

LEDGER = UsageEvent._meta.db_table
KEYS = UsageEventKey._meta.db_table
BACKLOG = RollupBacklog._meta.db_table


@dataclass(frozen=True)
class Finding:
    """One thing a derived table says that the ledger does not."""

    subject: str  # what, in an operator's words, with the ids to find it
    ledger: str  # what the ledger says
    derived: str  # what the derived table says
    since: object = None  # the earliest instant involved (an event's usage_date), when known


def _rows(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _found_then_deleted(select: str, params: list, delete: str | bool, delete_params) -> list[tuple]:
    """The rows `select` finds and, when `delete` is a statement (a repair), `delete` run in the same
    transaction with `delete_params(rows)`."""
    with transaction.atomic():
        rows = _rows(select, params)
        if delete and rows:
            _rows(delete, delete_params(rows))
    return rows


def backlog_orphans(*, book_id, repair: bool = False) -> list[Finding]:
    in_book, params = book_sql(book_id, "b.book_id")
    rows = _found_then_deleted(
        f"SELECT b.event_id, b.usage_date FROM {BACKLOG} b WHERE {in_book} "
        f"AND NOT EXISTS (SELECT 1 FROM {LEDGER} e WHERE e.id = b.event_id)", params,
        repair and f"DELETE FROM {BACKLOG} WHERE event_id = ANY(%s) RETURNING event_id",
        lambda found: [[row[0] for row in found]])
    return [Finding(f"rollup backlog row of event {event_id}", "no such event", "waiting to be counted", usage_date)
            for event_id, usage_date in rows]


def key_orphans(*, book_id, repair: bool = False) -> list[Finding]:
    in_book, params = book_sql(book_id, "k.book_id")
    delete_in_book, delete_params = book_sql(book_id, "book_id")
    rows = _found_then_deleted(
        f"SELECT k.idempotency_key, k.event_id, k.usage_date FROM {KEYS} k WHERE {in_book} "
        f"AND NOT EXISTS (SELECT 1 FROM {LEDGER} e WHERE e.id = k.event_id AND e.usage_date = k.usage_date)", params,
        repair and f"DELETE FROM {KEYS} WHERE {delete_in_book} AND idempotency_key = ANY(%s) RETURNING 1",
        lambda found: [*delete_params, [row[0] for row in found]])
    return [Finding(f"idempotency key {key!r}", "no event holds it", f"held by event {event_id}", usage_date)
            for key, event_id, usage_date in rows]


def keys_missing(*, book_id, repair: bool = False) -> list[Finding]:
    """Keyed events whose key row is missing or names another event."""
    in_book, params = book_sql(book_id, "e.book_id")
    select = (f"SELECT e.idempotency_key, e.id, e.usage_date, k.event_id FROM {LEDGER} e "
              f"LEFT JOIN {KEYS} k ON k.book_id = e.book_id AND k.idempotency_key = e.idempotency_key "
              f"WHERE {in_book} AND e.idempotency_key IS NOT NULL AND k.event_id IS DISTINCT FROM e.id")
    with transaction.atomic():
        rows = _rows(select, params)
        missing = [row for row in rows if row[3] is None]
        if repair and missing:
            _rows(f"INSERT INTO {KEYS} (book_id, idempotency_key, event_id, usage_date) "
                  f"SELECT %s, key, event_id, usage_date FROM unnest(%s::text[], %s::uuid[], %s::timestamptz[]) "
                  f"AS m(key, event_id, usage_date) ON CONFLICT DO NOTHING RETURNING 1",
                  [book_id, [row[0] for row in missing], [row[1] for row in missing], [row[2] for row in missing]])
    return [Finding(f"idempotency key {key!r} of event {event_id}", f"held by event {event_id}",
                    "missing" if holder is None else f"held by event {holder} (two events with one key)", usage_date)
            for key, event_id, usage_date, holder in rows]
