"""Converting the single-table ledger into the partitioned one, holding writes back only for a short switch.

Run by migration customers 0010 (and on a populated copy by its test and by bench/ledger_conversion.py).
Every step can be run again after an interruption; the ones marked online block nobody:

1. Keys (online). A trigger copies every new keyed event's key into `UsageEventKey` (the release before
   the conversion still records through the old statement meanwhile); then the keys of the rows already
   there are copied in chunks. Creating the trigger waits for the writes in flight and holds new ones back
   for that instant only.
2. An index on (id, usage_date), built CONCURRENTLY (online): the old table's primary key once switched.
3. The default partition, built beforehand, empty, with its indexes (online).
4. A bound B, the first UTC month boundary after both now and the latest `usage_date` stored, but never
   later than the first day of the month after next (`BOUND_MONTHS_AHEAD`): one event dated far ahead (a
   client may send any year up to 9000) would otherwise keep every month until it in the legacy partition.
   `CHECK (usage_date < B)` is added NOT VALID (a lock held for an instant, no scan), the rows dated B or
   later are moved into the default partition (one statement: a scan that holds back no read and no write,
   every row kept with its id, date and key), then the CHECK is validated (a scan under a lock that blocks
   neither reads nor writes). From the CHECK's addition to the switch an event dated B or later is refused
   by it: B lies at least a month ahead, and the window is the move's and the validation's scans
   (docs/decisions/ledger-partitions.md).
5. The switch: one transaction under an ACCESS EXCLUSIVE lock on the old table. It is renamed
   `customers_usageevent_legacy`, its primary key becomes the (id, usage_date) index of step 2, the
   partitioned table is created with the same columns and non-unique indexes, and the old table is
   attached FROM (MINVALUE) TO (B): the validated CHECK proves the bound, so the attach reads no row, and
   its indexes are adopted as they are; so is the default partition of step 3 (with the rows step 4 moved
   there). Only catalog work happens under the lock: its length does not grow with the table
   (docs/performance.md, "The ledger's partitions"). The months from B on are created right after, as the
   scheduled job creates months (under a lock that holds writes back and lets reads go on), taking their
   rows out of the default partition; rows dated later stay there (customers/partitions.py).

After the switch the legacy partition keeps the trigger and its unique (book, key) index, so that a
process of the previous release still recording this month stays idempotent with the new one; the
maintenance job drops both once B has passed (customers.partitions.retire_transition_aids).

An empty table (a fresh install, the test database) is simply replaced by the partitioned one, with the
current month and the months ahead.
"""
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.db import connection, transaction

from core.database import retried_while_lock_busy
from customers.partitions import (
    KEYS,
    LEDGER,
    MONTHS_AHEAD,
    key_sync_name,
    ledger_partitions_ensure,
    month_start,
    months_after,
    next_month,
    partition_name,
)

KEY_CHUNK = 50_000  # keys copied per transaction by step 1
BOUND_MONTHS_AHEAD = 2  # B is at most the first day of the month after next
SWITCH_LOCK_TIMEOUT = "2s"  # what writers queued behind the switch's lock request wait at most, per attempt
SWITCH_ATTEMPTS = 30


@dataclass
class ConversionReport:
    """Seconds per step; `locked` holds how long each lock that holds back reads or writes was held, from
    its grant to its transaction's last statement, by the server's clock."""

    steps: dict[str, float] = field(default_factory=dict)
    locked: dict[str, float] = field(default_factory=dict)
    waited: dict[str, float] = field(default_factory=dict)  # for each lock of `locked`, the wait for it
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)  # each lock's request and release (epoch s)
    bound: datetime | None = None
    rows: int | None = None
    moved_to_default: int = 0  # rows dated B or later, moved to the default partition by step 4
    replaced_empty: bool = False


def _is_partitioned(cursor, table: str) -> bool:
    cursor.execute("SELECT relkind = 'p' FROM pg_class WHERE oid = to_regclass(%s)", [table])
    row = cursor.fetchone()
    return bool(row and row[0])


def _retrying(step):
    """Run `step` (a transaction that asks for a lock under `lock_timeout`) until it gets the lock."""
    return retried_while_lock_busy(step, attempts=SWITCH_ATTEMPTS, pause=0.5)


@contextmanager
def _holding(report: ConversionReport, label: str, table: str, mode: str):
    """A transaction that first takes `mode` on `table` (waiting at most `SWITCH_LOCK_TIMEOUT`). The server's
    clock times the lock, from its grant to the transaction's last statement (the commit adds its flush):
    `report.locked[label]`; the wait for it: `report.waited[label]`; when it was asked for and released as
    this process saw it: `report.spans[label]`."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{SWITCH_LOCK_TIMEOUT}'")
        asked_at = time.time()
        cursor.execute("SELECT clock_timestamp()")
        (asked,) = cursor.fetchone()
        cursor.execute(f"LOCK TABLE {table} IN {mode} MODE")
        cursor.execute("SELECT clock_timestamp()")
        (granted,) = cursor.fetchone()
        yield cursor
        cursor.execute("SELECT clock_timestamp()")
        (last,) = cursor.fetchone()
    report.locked[label] = (last - granted).total_seconds()
    report.waited[label] = (granted - asked).total_seconds()
    report.spans[label] = (asked_at, time.time())


def _indexes(cursor, table: str) -> list[tuple[str, str, bool, bool]]:
    """(name, definition, unique, primary) of each index of `table`."""
    cursor.execute("SELECT c.relname, pg_get_indexdef(c.oid), x.indisunique, x.indisprimary FROM pg_index x "
                   "JOIN pg_class c ON c.oid = x.indexrelid WHERE x.indrelid = %s::regclass ORDER BY c.relname",
                   [table])
    return cursor.fetchall()


def _timed(report: ConversionReport, step: str, function, *args):
    started = time.perf_counter()
    result = function(*args)
    report.steps[step] = time.perf_counter() - started
    return result


def _sync_keys(table: str, keys: str, report: ConversionReport) -> None:
    """Step 1: the trigger, then the keys already stored, chunk by chunk in id order."""
    name = key_sync_name(table)

    def install():
        # CREATE TRIGGER takes this lock (writes wait, reads do not); taken first, it is the one timed.
        with _holding(report, "key trigger created", table, "SHARE ROW EXCLUSIVE") as cursor:
            cursor.execute(
                f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"INSERT INTO {keys} (book_id, idempotency_key, event_id, usage_date) "
                f"VALUES (NEW.book_id, NEW.idempotency_key, NEW.id, NEW.usage_date) ON CONFLICT DO NOTHING; "
                f"RETURN NULL; END $$")
            cursor.execute(f"CREATE OR REPLACE TRIGGER {name} AFTER INSERT ON {table} FOR EACH ROW "
                           f"WHEN (NEW.idempotency_key IS NOT NULL) EXECUTE FUNCTION {name}()")

    _retrying(install)
    last = "00000000-0000-0000-0000-000000000000"
    while last is not None:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(
                f"WITH chunk AS (SELECT id, book_id, idempotency_key, usage_date FROM {table} "
                f"WHERE id > %s ORDER BY id LIMIT %s), "
                f"copied AS (INSERT INTO {keys} (book_id, idempotency_key, event_id, usage_date) "
                f"SELECT book_id, idempotency_key, id, usage_date FROM chunk WHERE idempotency_key IS NOT NULL "
                f"ON CONFLICT DO NOTHING) "
                f"SELECT id FROM chunk ORDER BY id DESC LIMIT 1", [last, KEY_CHUNK])
            row = cursor.fetchone()
            last = row[0] if row else None


def _id_date_index(table: str) -> str:
    """Step 2: the unique (id, usage_date) index, CONCURRENTLY when not inside a transaction. An invalid one
    left by an interrupted build is dropped and built again."""
    name = f"{table}_id_date"
    concurrently = "" if connection.in_atomic_block else "CONCURRENTLY "
    with connection.cursor() as cursor:
        cursor.execute("SELECT x.indisvalid FROM pg_index x WHERE x.indexrelid = to_regclass(%s)", [name])
        row = cursor.fetchone()
        if row and not row[0]:
            cursor.execute(f"DROP INDEX {concurrently}{name}")
        if not row or not row[0]:
            cursor.execute(f"CREATE UNIQUE INDEX {concurrently}{name} ON {table} (id, usage_date)")
    return name


def conversion_bound(now: datetime, latest: datetime | None) -> datetime:
    """B: the first month boundary after both `now` and `latest` (the latest usage_date stored), at most
    `BOUND_MONTHS_AHEAD` months after the month of `now`."""
    after_both = next_month(month_start(max(now, latest) if latest else now))
    return min(after_both, months_after(month_start(now), BOUND_MONTHS_AHEAD))


def _bound_constraint(table: str, default: str, now: datetime, report: ConversionReport) -> tuple[datetime, str]:
    """Step 4: CHECK (usage_date < B) added NOT VALID, the rows dated B or later moved to `default`, then
    the CHECK validated. A constraint left by an earlier run is reused with its bound (named in it)."""
    prefix = f"{table}_before_"
    with connection.cursor() as cursor:
        cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND conname LIKE %s",
                       [table, prefix + "%"])
        row = cursor.fetchone()
        if row:
            name = row[0]
            year, month = name.removeprefix(prefix).split("_")
            bound = datetime(int(year), int(month), 1, tzinfo=UTC)
        else:
            cursor.execute(f"SELECT max(usage_date) FROM {table}")
            bound = conversion_bound(now, cursor.fetchone()[0])
            name = f"{prefix}{bound:%Y_%m}"

            def add():
                with _holding(report, "check constraint added (NOT VALID)", table, "ACCESS EXCLUSIVE") as inner:
                    inner.execute(f"ALTER TABLE {table} ADD CONSTRAINT {name} CHECK (usage_date < %s) NOT VALID",
                                  [bound])

            _retrying(add)
        # The default partition's own CHECK of the other side proves, when the switch attaches it, that none
        # of its rows belongs to the legacy partition: PostgreSQL skips the scan under the lock.
        cursor.execute("SELECT 1 FROM pg_constraint WHERE conrelid = %s::regclass AND conname = %s",
                       [default, _from_bound_name(default)])
        if cursor.fetchone() is None:
            cursor.execute(f"ALTER TABLE {default} ADD CONSTRAINT {_from_bound_name(default)} "
                           f"CHECK (usage_date >= %s)", [bound])
        # The CHECK refuses new rows dated B or later from now on, so this move finds every one there is.
        with transaction.atomic():
            cursor.execute(f"WITH moved AS (DELETE FROM {table} WHERE usage_date >= %s RETURNING *) "
                           f"INSERT INTO {default} SELECT * FROM moved", [bound])
            report.moved_to_default += cursor.rowcount
        cursor.execute(f"ALTER TABLE {table} VALIDATE CONSTRAINT {name}")
    return bound, name


def _from_bound_name(default: str) -> str:
    return f"{default}_from_bound"


def _create_partitioned(cursor, table: str, columns_from: str) -> None:
    """The partitioned table with the columns of `columns_from` (keys and indexes come after)."""
    cursor.execute(f"CREATE TABLE {table} (LIKE {columns_from} INCLUDING DEFAULTS) PARTITION BY RANGE (usage_date)")


def _add_keys_and_indexes(cursor, table: str, index_definitions: list[str]) -> None:
    """The primary key (id, usage_date) and the given index definitions (which name `table`)."""
    cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (id, usage_date)")
    for definition in index_definitions:
        cursor.execute(definition)


def _add_months_and_default(cursor, table: str, months: list[datetime]) -> None:
    for month in months:  # before the default partition: a month added beside it would scan it
        cursor.execute(f"CREATE TABLE {partition_name(month, table)} PARTITION OF {table} "
                       f"FOR VALUES FROM (%s) TO (%s)", [month, next_month(month)])
    cursor.execute(f"CREATE TABLE {table}_default PARTITION OF {table} DEFAULT")


def _months_from(first: datetime) -> list[datetime]:
    months = [first]
    for _ in range(MONTHS_AHEAD):
        months.append(next_month(months[-1]))
    return months


def _referenced_by(cursor, table: str) -> list[str]:
    cursor.execute("SELECT conname FROM pg_constraint WHERE confrelid = %s::regclass AND contype = 'f'", [table])
    return [name for (name,) in cursor.fetchall()]


def _replace_if_empty(table: str, now: datetime, report: ConversionReport) -> bool:
    """An empty table is replaced outright, under its lock (so that no row arrives meanwhile); a populated
    one is left to the steps, without a lock."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
        if cursor.fetchone()[0]:
            return False

    def replace():
        with _holding(report, "empty table replaced", table, "ACCESS EXCLUSIVE") as cursor:
            cursor.execute(f"SELECT EXISTS (SELECT 1 FROM {table})")
            if cursor.fetchone()[0]:  # a row arrived since: the steps, then
                return False
            definitions = [definition for _, definition, unique, _ in _indexes(cursor, table) if not unique]
            cursor.execute(f"ALTER TABLE {table} RENAME TO {table}_single")
            _create_partitioned(cursor, table, f"{table}_single")
            cursor.execute(f"DROP TABLE {table}_single")  # its keys and indexes with it: their names are free
            _add_keys_and_indexes(cursor, table, definitions)
            _add_months_and_default(cursor, table, _months_from(month_start(now)))
        return True

    return _retrying(replace)


def _prepare_default(table: str) -> str:
    """Step 3 (online): the default partition built beforehand, empty, with the partitioned table's primary
    key and indexes, so that the switch attaches it instead of creating its indexes under the lock."""
    default = f"{table}_default"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [default])
        if cursor.fetchone()[0]:
            return default
        cursor.execute(f"CREATE TABLE {default} (LIKE {table} INCLUDING DEFAULTS)")
        cursor.execute(f"ALTER TABLE {default} ADD CONSTRAINT {default}_pkey PRIMARY KEY (id, usage_date)")
        for name, definition, unique, _ in _indexes(cursor, table):
            if not unique:
                cursor.execute(re.sub(rf"^CREATE INDEX {re.escape(name)} ON (\S+\.)?{re.escape(table)} ",
                                      f"CREATE INDEX {(name + '_default')[:63]} ON {default} ", definition))
    return default


def _switch(table: str, bound: datetime, bound_constraint: str, id_date_index: str, default: str,
            report: ConversionReport):
    """Step 5, one transaction: catalog work only, under the old table's ACCESS EXCLUSIVE lock."""
    legacy = f"{table}_legacy"

    def switch():
        with _holding(report, "switch", table, "ACCESS EXCLUSIVE") as cursor:
            indexes = _indexes(cursor, table)
            cursor.execute("SELECT conname FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'p'", [table])
            (old_primary_key,) = cursor.fetchone()
            cursor.execute(f"ALTER TABLE {table} RENAME TO {legacy}")
            definitions = []
            for name, definition, unique, _ in indexes:
                if not unique:  # recreated on the partitioned table under its own name, adopted from legacy
                    cursor.execute(f"ALTER INDEX {name} RENAME TO {(name + '_legacy')[:63]}")
                    definitions.append(definition)
            cursor.execute(f"ALTER TABLE {legacy} DROP CONSTRAINT {old_primary_key}")
            cursor.execute(f"ALTER TABLE {legacy} ADD CONSTRAINT {legacy}_pkey PRIMARY KEY USING INDEX {id_date_index}")
            _create_partitioned(cursor, table, legacy)
            _add_keys_and_indexes(cursor, table, definitions)
            cursor.execute(f"ALTER TABLE {table} ATTACH PARTITION {legacy} FOR VALUES FROM (MINVALUE) TO (%s)", [bound])
            cursor.execute(f"ALTER TABLE {legacy} DROP CONSTRAINT {bound_constraint}")  # the partition bound says it
            # Its CHECK (usage_date >= B) proves its rows lie beyond the legacy partition: no scan. Dropped
            # once attached: a back-filled month without a partition lands there too from now on.
            cursor.execute(f"ALTER TABLE {table} ATTACH PARTITION {default} DEFAULT")
            cursor.execute(f"ALTER TABLE {default} DROP CONSTRAINT {_from_bound_name(default)}")

    _retrying(switch)

    # After the switch, month by month, each under the lock that holds writes back and lets reads go on.
    label = f"a month from the bound created (the longest of {MONTHS_AHEAD + 1}, catalog reads included)"
    for month in _months_from(bound):
        started, started_at = time.perf_counter(), time.time()
        _retrying(lambda: ledger_partitions_ensure(months=[month], table=table))
        if time.perf_counter() - started >= report.locked.get(label, 0):
            report.locked[label], report.spans[label] = time.perf_counter() - started, (started_at, time.time())


def convert_ledger(*, now: datetime, table: str = LEDGER, keys: str = KEYS) -> ConversionReport:
    """Convert `table` (the ledger's shape, single) into the partitioned ledger; nothing to do if it is
    partitioned already. `keys` is the table of idempotency keys to fill."""
    report = ConversionReport()
    with connection.cursor() as cursor:
        if _is_partitioned(cursor, table):
            return report
        referencing = _referenced_by(cursor, table)
    if referencing:
        raise RuntimeError(f"Foreign keys reference {table} ({', '.join(referencing)}): drop them first; "
                           f"a partitioned table can be referenced only through its partition key.")
    if _timed(report, "0. emptiness checked", _replace_if_empty, table, now, report):
        report.replaced_empty, report.rows = True, 0
        return report
    _timed(report, "1. keys copied", _sync_keys, table, keys, report)
    index = _timed(report, "2. (id, usage_date) index built", _id_date_index, table)
    default = _timed(report, "3. default partition prepared", _prepare_default, table)
    bound, constraint = _timed(report, "4. bound checked, later rows moved", _bound_constraint, table, default,
                               now, report)
    report.bound = bound
    _timed(report, "5. switch", _switch, table, bound, constraint, index, default, report)
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass", [f"{table}_legacy"])
        report.rows = cursor.fetchone()[0]
    return report


def unconvert_ledger(*, table: str = LEDGER, idempotency_index: str = "usage_event_idem_uniq") -> None:
    """Back to one table (the migration's reverse, for development databases): every row copied under an
    ACCESS EXCLUSIVE lock, so only for small ledgers. The keys table is left to the migration that drops it."""
    with transaction.atomic(), connection.cursor() as cursor:
        if not _is_partitioned(cursor, table):
            return
        cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        definitions = [definition for _, definition, unique, _ in _indexes(cursor, table) if not unique]
        cursor.execute(f"CREATE TABLE {table}_single (LIKE {table} INCLUDING DEFAULTS)")
        cursor.execute(f"INSERT INTO {table}_single SELECT * FROM {table}")
        cursor.execute(f"DROP TABLE {table}")  # with its partitions, their indexes and the legacy's trigger
        cursor.execute(f"DROP FUNCTION IF EXISTS {key_sync_name(table)}()")
        cursor.execute(f"ALTER TABLE {table}_single RENAME TO {table}")
        cursor.execute(f"ALTER TABLE {table} ADD CONSTRAINT {table}_pkey PRIMARY KEY (id)")
        for definition in definitions:
            cursor.execute(definition)
        cursor.execute(f"CREATE UNIQUE INDEX {idempotency_index} ON {table} (book_id, idempotency_key) "
                       f"WHERE idempotency_key IS NOT NULL")
