"""The usage ledger's monthly partitions: created ahead, created on demand, detached for archiving.

`customers_usageevent` is partitioned by RANGE of `usage_date` (docs/decisions/ledger-partitions.md):
- one partition per UTC month, `customers_usageevent_pYYYY_MM`;
- a DEFAULT partition, `customers_usageevent_default`, which takes any row that no month covers (a
  back-filled month, a date far ahead): no insert ever fails for want of a partition;
- on a ledger converted from the single table (customers/partition_conversion.py),
  `customers_usageevent_legacy`, everything dated before the conversion's month boundary.

`ledger_partitions_maintain` (a scheduled job, idempotent) keeps this month and the next
`MONTHS_AHEAD` partitioned and moves rows waiting in the default partition into partitions of their
own months, for the months of the settle window only (`settle_window`: from LEDGER_PARTITIONS_PAST_MONTHS
before this month to the last month the job keeps ahead); recording asks for the same move after
committing a batch that landed rows of that window in the default partition (`ledger_partitions_settle`,
customers/tasks.py). A row dated outside the window stays in the default partition: clients choose
`usageDate` (any year from 1900 to 9000), and a month created for each date they send would let one client
multiply the partitions, each created under a lock that holds back every tenant's writes. An operator
creates any month by naming it (`manage.py ledger_partitions ensure YYYY-MM`). `ledger_partition_detach`
takes a past month out of the ledger for archiving (`manage.py ledger_partitions detach YYYY-MM`,
docs/operations.md) and `ledger_partition_restore` brings its table back (`restore YYYY-MM`).

Moves and readers: a partition is created, and a month's rows moved out of the default partition into it,
under an ACCESS EXCLUSIVE lock of the ledger taken first and held to the commit, so no read or write of the
ledger overlaps a move. A lighter lock would let reads run, and they would read wrong: PostgreSQL plans a read
with the partitions it saw when it first locked the ledger, so a statement planned before the attach (or any
later statement of a transaction that had already read the ledger) scans the default partition alone, while
its snapshot, taken after the commit, no longer finds the moved rows there; the rollup's catch-up, an
invoice's usage and a matter's cost then missed a back-filled month. With the lock, a statement either ends
before the move starts (the move waits for it, and for its transaction) or starts after the move committed and
plans with the new partition. A read of several statements from one snapshot (customers/usage_sums.py
`ledger_snapshot`) locks the ledger before its snapshot is taken, so a move waits for the whole read. The move's
work is the rows of one month that arrived since its last settle (recording asks for the settle after each batch
that lands rows there), so readers wait milliseconds. A move asks for the lock for at most `MOVE_LOCK_TIMEOUT` at a
time (the batches queued behind a waiting ask wait no longer) and asks again for a few seconds in all before it
gives up until the next run. Detaching a month takes the same lock first, for the same reason (waiting at most
`LOCK_TIMEOUT`: an operator runs it and is told to run it again).
"""
import re
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.db import OperationalError, connection, transaction

from core.clock import MAX_YEAR, MIN_YEAR
from core.database import retried_while_lock_busy
from core.hooks import Hooks
from customers.models import ArchivedMonth, EventStatus, RollupBacklog, UsageDailyRollup, UsageEvent, UsageEventKey

LEDGER = UsageEvent._meta.db_table
KEYS = UsageEventKey._meta.db_table
DEFAULT = f"{LEDGER}_default"
LEGACY = f"{LEDGER}_legacy"
MONTHS_AHEAD = 3  # beside the current month: a quarter of slack if the job stops running
# How long a partition change waits for writers in flight before giving up until the next run: the
# writes queued behind it wait at most this long (an operator's detach).
LOCK_TIMEOUT = "5s"
# A move asks for the ledger's lock for at most MOVE_LOCK_TIMEOUT at a time, up to MOVE_LOCK_ATTEMPTS times
# MOVE_LOCK_RETRY_SECONDS apart: the batches that queue behind a waiting ask wait at most MOVE_LOCK_TIMEOUT, while a
# read in flight (a read of one snapshot holds the ledger's lock to its end) is still waited out, some seven seconds
# in all.
MOVE_LOCK_TIMEOUT = "100ms"
MOVE_LOCK_ATTEMPTS = 20
MOVE_LOCK_RETRY_SECONDS = 0.25
# Inside an outer transaction there is nothing to retry into (`retried_while_lock_busy`): the one ask waits what the
# attempts would have in all. Past deadlock_timeout (1 s) an autovacuum of a ledger partition, which holds a lock a
# move waits for, is cancelled for it; a 100 ms ask failed whenever one was running (a test now and then).
MOVE_LOCK_TIMEOUT_ONCE = "7s"

_BOUND = re.compile(r"FOR VALUES FROM \((?:MINVALUE|'([^']+)')\) TO \((?:MAXVALUE|'([^']+)')\)")


@dataclass(frozen=True)
class Partition:
    name: str
    start: datetime | None  # None: from the earliest instant (MINVALUE); both None: the default partition
    end: datetime | None
    is_default: bool
    estimated_rows: int  # PostgreSQL's estimate (pg_class.reltuples): -1 until the table is analyzed

    def covers(self, month: datetime) -> bool:
        return (not self.is_default and (self.start is None or self.start <= month)
                and (self.end is None or next_month(month) <= self.end))


def month_start(instant: datetime) -> datetime:
    """The first instant of the UTC month of `instant`."""
    instant = instant.astimezone(UTC)
    return datetime(instant.year, instant.month, 1, tzinfo=UTC)


def next_month(month: datetime) -> datetime:
    return datetime(month.year + month.month // 12, month.month % 12 + 1, 1, tzinfo=UTC)


def months_after(month: datetime, count: int) -> datetime:
    """The first instant of the month `count` months after `month` (before it when `count` is negative)."""
    index = month.year * 12 + month.month - 1 + count
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)


def settle_window(now: datetime) -> tuple[datetime, datetime]:
    """[start, end) of the months whose rows waiting in the default partition get partitions without an
    operator: from LEDGER_PARTITIONS_PAST_MONTHS months before the month of `now` (never before MIN_YEAR)
    to the end of the last month the scheduled job keeps ahead."""
    current = month_start(now)
    past = min(max(settings.LEDGER_PARTITIONS_PAST_MONTHS, 0), (current.year - MIN_YEAR) * 12 + current.month - 1)
    return months_after(current, -past), months_after(current, MONTHS_AHEAD + 1)


def parse_month(text: str) -> datetime:
    """`YYYY-MM` as the first instant of that UTC month; ValueError otherwise, and for a year outside
    MIN_YEAR..MAX_YEAR: no event is dated there, and a month's partition ends at the next month, which for
    9999-12 datetime cannot hold."""
    match = re.fullmatch(r"(\d{4})-(\d{2})", text.strip())
    if not match or not 1 <= int(match[2]) <= 12:
        raise ValueError(f"{text!r} is not a month (YYYY-MM).")
    if not MIN_YEAR <= int(match[1]) <= MAX_YEAR:
        raise ValueError(f"{text!r} is out of range: months run from {MIN_YEAR}-01 to {MAX_YEAR}-12, the years "
                         f"an event's date may have.")
    return datetime(int(match[1]), int(match[2]), 1, tzinfo=UTC)


def partition_name(month: datetime, table: str = LEDGER) -> str:
    return f"{table}_p{month:%Y_%m}"


def _instant(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text).astimezone(UTC)


def ledger_partitions(cursor=None, table: str = LEDGER) -> list[Partition]:
    """The partitions of the ledger, ordered by start (the default partition last)."""
    sql = ("SELECT c.relname, pg_get_expr(c.relpartbound, c.oid), c.reltuples::bigint FROM pg_inherits i "
           "JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = %s::regclass")
    if cursor is None:
        with connection.cursor() as own_cursor:
            return ledger_partitions(own_cursor, table)
    cursor.execute(sql, [table])
    partitions = []
    for name, bound, rows in cursor.fetchall():
        if bound == "DEFAULT":
            partitions.append(Partition(name, None, None, True, rows))
            continue
        start, end = _BOUND.fullmatch(bound).groups()
        partitions.append(Partition(name, _instant(start), _instant(end), False, rows))
    floor = datetime.min.replace(tzinfo=UTC)
    return sorted(partitions, key=lambda p: (p.is_default, p.start or floor))


def _months_waiting(cursor, table: str, window: tuple[datetime, datetime]) -> list[datetime]:
    """The UTC months within `window` of the rows in the default partition (a back-fill, or dates beyond
    those created)."""
    cursor.execute(f"SELECT DISTINCT date_trunc('month', usage_date AT TIME ZONE 'UTC') FROM {table}_default "
                   f"WHERE usage_date >= %s AND usage_date < %s", list(window))
    return [month.replace(tzinfo=UTC) for (month,) in cursor.fetchall()]


def _attach_month(cursor, month: datetime, table: str) -> str:
    """Give `month` its partition, moving the month's rows out of the default partition into it. The new
    table is filled and given a CHECK of the month's bounds before it is attached, so the attach scans
    neither it nor (beyond the rows left there) the default partition under its lock."""
    name, start, end = partition_name(month, table), month, next_month(month)
    cursor.execute(f"CREATE TABLE {name} (LIKE {table} INCLUDING DEFAULTS)")
    cursor.execute(f"ALTER TABLE {name} ADD CONSTRAINT {name}_bounds "
                   f"CHECK (usage_date >= %s AND usage_date < %s)", [start, end])
    cursor.execute(f"WITH moved AS (DELETE FROM {table}_default WHERE usage_date >= %s AND usage_date < %s "
                   f"RETURNING *) INSERT INTO {name} SELECT * FROM moved", [start, end])
    cursor.execute(f"ALTER TABLE {table} ATTACH PARTITION {name} FOR VALUES FROM (%s) TO (%s)", [start, end])
    cursor.execute(f"ALTER TABLE {name} DROP CONSTRAINT {name}_bounds")
    return name


def ledger_partitions_ensure(*, months=(), now: datetime | None = None, table: str = LEDGER) -> list[str]:
    """Give each of `months` (first instants of UTC months, any month: the job's, or an operator's), and,
    when `now` is given, each month of `settle_window(now)` with rows waiting in the default partition, a
    partition of its own unless one covers it; returns the names created. The rows of the default partition
    dated outside the window stay there. Idempotent; when there is nothing to do it reads the catalog and
    the default partition and takes no lock. Each month is created in a transaction of its own, so writes
    wait for one month's work at a time."""
    wanted = {month_start(month) for month in months}
    with connection.cursor() as cursor:
        partitions = ledger_partitions(cursor, table)
        missing = {month for month in wanted if not any(p.covers(month) for p in partitions)}
        if now is not None:
            missing |= set(_months_waiting(cursor, table, settle_window(now)))
    created = []
    for month in sorted(missing):
        def attach(cursor, month=month):
            if not any(p.covers(month) for p in ledger_partitions(cursor, table)):  # under the lock, current
                created.append(_attach_month(cursor, month, table))
        # Reads and writes wait for the move and the move waits for them (module docstring, "Moves and readers").
        _under_ledger_lock(table, attach)
    return created


def _under_ledger_lock(table: str, work) -> None:
    """Run `work(cursor)` in a transaction that first takes the ledger's ACCESS EXCLUSIVE lock, asked for at most
    MOVE_LOCK_TIMEOUT at a time (see there). OperationalError when every ask timed out: nothing was changed, the
    next run tries again."""
    once = connection.in_atomic_block

    def ask():
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = '{MOVE_LOCK_TIMEOUT_ONCE if once else MOVE_LOCK_TIMEOUT}'")
            cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            work(cursor)
    retried_while_lock_busy(ask, attempts=MOVE_LOCK_ATTEMPTS, pause=MOVE_LOCK_RETRY_SECONDS)


def ledger_partitions_settle(*, now: datetime, table: str = LEDGER) -> list[str]:
    """Move the rows of the settle window waiting in the default partition into partitions of their months
    (created here)."""
    return ledger_partitions_ensure(months=(), now=now, table=table)


def ledger_partitions_maintain(*, now) -> int:
    """The scheduled job: this month and the next `MONTHS_AHEAD` partitioned, the default partition's rows
    of the settle window moved to their months, and the conversion's transition aids retired once the
    months they served have passed. Safe to run at any time and as often as wanted. Returns the number of
    partitions created."""
    month, months = month_start(now), []
    for _ in range(MONTHS_AHEAD + 1):
        months.append(month)
        month = next_month(month)
    created = ledger_partitions_ensure(months=months, now=now)
    retire_transition_aids(now=now)
    return len(created)


def retire_transition_aids(*, now, table: str = LEDGER) -> list[str]:
    """Once the legacy partition of a converted ledger no longer takes the current month's events, drop
    what served the release before the conversion while both ran (customers/partition_conversion.py): the
    trigger that copies its events' keys into `UsageEventKey` and its own unique index of (book, key).
    Each drop takes the legacy partition's lock briefly; one that cannot have it at once waits for the
    next run. Returns what was dropped."""
    legacy = next((p for p in ledger_partitions(table=table) if p.name == f"{table}_legacy"), None)
    if legacy is None or legacy.end is None or now < legacy.end:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND tgname = %s",
                       [legacy.name, key_sync_name(table)])
        triggers = [name for (name,) in cursor.fetchall()]
        cursor.execute("SELECT c.relname FROM pg_index x JOIN pg_class c ON c.oid = x.indexrelid "
                       "WHERE x.indrelid = %s::regclass AND x.indisunique AND NOT x.indisprimary "
                       "AND NOT EXISTS (SELECT 1 FROM pg_inherits i WHERE i.inhrelid = x.indexrelid)",
                       [legacy.name])
        indexes = [name for (name,) in cursor.fetchall()]
    dropped = []
    for statement, name in [*((f"DROP TRIGGER IF EXISTS {{}} ON {legacy.name}", t) for t in triggers),
                            *((f"DROP INDEX IF EXISTS {{}}", i) for i in indexes)]:
        try:
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SET LOCAL lock_timeout = '1s'")
                cursor.execute(statement.format(name))
                if statement.startswith("DROP TRIGGER"):
                    cursor.execute(f"DROP FUNCTION IF EXISTS {name}()")
            dropped.append(name)
        except OperationalError:  # the lock was busy: the next run drops it
            continue
    return dropped


@dataclass(frozen=True)
class Detached:
    month: datetime
    archive: str  # the detached table's name
    rows: int
    keys_released: int


@dataclass(frozen=True)
class Restored:
    month: datetime
    archive: str  # the archive's table, dropped once its events are back
    rows: int  # events back in the ledger
    left_out: int  # archived events whose key a later event holds (recorded again since), or already back
    unpriced_books: list  # ids of the books whose restored events wait for a price (a reprice job each)
    books: list  # ids of the books with events back (priced again under their price overrides)


def key_sync_name(table: str = LEDGER) -> str:
    """The trigger (and its function) that copies keys during a conversion (customers/partition_conversion.py)."""
    return f"{table}_keys_sync"


def archive_name(month: datetime, table: str = LEDGER) -> str:
    return f"{table}_archived_{month:%Y_%m}"


def archived_months(table: str = LEDGER) -> list[str]:
    """The tables of detached months still in the database (`archive_name`), by name."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE %s ORDER BY relname",
                       [f"{table}_archived_%"])
        return [name for (name,) in cursor.fetchall()]


def archived_spans() -> list[tuple[datetime, datetime]]:
    """`[start, end)` of each month whose events left the ledger (`ArchivedMonth`), oldest first."""
    return [(month, next_month(month)) for month in ArchivedMonth.objects.order_by("month")
            .values_list("month", flat=True)]


def archived_overlapping(start: datetime, end: datetime, spans: list[tuple[datetime, datetime]]) -> list[datetime]:
    """The archived months of `spans` (by their first instant) that share an instant with `[start, end)`."""
    return [lo for lo, hi in spans if lo < end and start < hi]


def overlaps_archive(start: datetime, end: datetime, spans: list[tuple[datetime, datetime]]) -> bool:
    """Whether `[start, end)` shares an instant with an archived month of `spans`."""
    return bool(archived_overlapping(start, end, spans))


def ledger_partition_restore(month: datetime, *, table: str = LEDGER) -> Restored:
    """Bring an archived month back: the events of its table (`archive_name(month)`, as the detach left it or
    restored from its dump) are inserted into the ledger with their idempotency keys, each waiting for the
    analytics rollup as a recorded event does, the month's `ArchivedMonth` row goes (the verifier compares its
    figures again) and the table is dropped, all in one transaction. The rows go in as a batch's do, under no
    lock beyond theirs: recording and reads go on.

    An archived event whose key another event took since (its replay, recorded anew after the detach released
    the key) stays out, so no event is counted twice; so does an event already in the ledger. Columns the
    ledger gained after the archive was made take their defaults. Events restored unpriced are left to the
    book's reprice job (`Restored.unpriced_books`). ValueError, changing nothing, when the table is missing."""
    month = month_start(month)
    archive = archive_name(month, table)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [archive])
        if not cursor.fetchone()[0]:
            raise ValueError(f"{archive} does not exist: restore it from its dump first (pg_restore "
                             f"--table={archive} ...), then run this again.")
        cursor.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s", [archive])
        archived = {name for (name,) in cursor.fetchall()}
        columns = ", ".join(f'"{field.column}"' for field in UsageEvent._meta.concrete_fields
                            if field.column in archived)
        cursor.execute(f"SELECT count(*) FROM {archive}")
        archived_rows = cursor.fetchone()[0]
        cursor.execute(f"INSERT INTO {KEYS} (book_id, idempotency_key, event_id, usage_date) "
                       f"SELECT book_id, idempotency_key, id, usage_date FROM {archive} "
                       f"WHERE idempotency_key IS NOT NULL ON CONFLICT DO NOTHING")
        # An event goes back when its key is its own (or it has none) and it is not in the ledger already.
        cursor.execute(
            f"WITH restored AS (INSERT INTO {table} ({columns}) SELECT {columns} FROM {archive} a "
            f"WHERE (a.idempotency_key IS NULL OR EXISTS (SELECT 1 FROM {KEYS} k WHERE k.book_id = a.book_id "
            f"AND k.idempotency_key = a.idempotency_key AND k.event_id = a.id)) "
            f"AND NOT EXISTS (SELECT 1 FROM {table} e WHERE e.id = a.id AND e.usage_date = a.usage_date) "
            f"RETURNING id, book_id, usage_date, event_status), "
            f"waiting AS (INSERT INTO {RollupBacklog._meta.db_table} (event_id, book_id, usage_date) "
            f"SELECT id, book_id, usage_date FROM restored ON CONFLICT DO NOTHING) "
            f"SELECT count(*), array_agg(DISTINCT book_id) FILTER (WHERE event_status = %s), "
            f"array_agg(DISTINCT book_id) FROM restored",
            [EventStatus.NEEDS_COST_BACKFILL])
        rows, unpriced, books = cursor.fetchone()
        cursor.execute(f"DROP TABLE {archive}")
        if table == LEDGER:
            ArchivedMonth.objects.filter(month=month).delete()
    return Restored(month=month, archive=archive, rows=rows, left_out=archived_rows - rows,
                    unpriced_books=list(unpriced or []), books=list(books or []))


# Asked before a month leaves the ledger, with `start` and `end`, the month's bounds: a higher app's function
# raises ValueError, saying why, when the month must stay (config/hooks.py registers billing's: a month that
# draft invoices or active subscriptions' current billing periods still read).
ledger_month_detaching = Hooks("ledger month detaching")


def ledger_partition_detach(month: datetime, *, now: datetime, table: str = LEDGER) -> Detached:
    """Take the partition of `month` out of the ledger, as a table of its own named `archive_name(month)`
    that the operator can dump and drop (docs/operations.md). In the same transaction the month leaves
    everything derived from the ledger: its idempotency keys (a later replay of one of them records a new
    event), its events still waiting for the rollup, and the month's rows of the analytics rollup (analytics
    and revenue then read no usage for the month). Matter attributions stay (one small row per event, found
    again if the archive is attached back).

    ValueError, changing nothing, for a month that has not ended by `now` (recording still writes it), for
    a month `ledger_month_detaching` refuses (an invoice still refreshed from the ledger, a current billing
    period: their usage would leave them without a word), and when no partition holds exactly this month
    (the legacy partition of a converted ledger holds every month before its bound)."""
    month = month_start(month)
    end = next_month(month)
    if end > now:
        raise ValueError(f"{month:%Y-%m} has not ended (it ends {end:%Y-%m-%d} UTC): only a month entirely in "
                         f"the past can be detached.")
    if table == LEDGER:  # asked first without the lock, so that a refused detach holds nothing back
        ledger_month_detaching.run(start=month, end=end)
    partitions = ledger_partitions(table=table)
    partition = next((p for p in partitions if p.start == month and p.end == end), None)
    if partition is None:
        holder = next((p for p in partitions if p.covers(month)), None)
        if holder is not None:
            raise ValueError(f"{month:%Y-%m} lies in {holder.name}, which holds more than one month; "
                             f"detach it whole (ALTER TABLE {table} DETACH PARTITION {holder.name}).")
        raise ValueError(f"The ledger has no partition for {month:%Y-%m}.")
    archive = archive_name(month, table)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NOT NULL", [archive])
        if cursor.fetchone()[0]:
            raise ValueError(f"{archive} exists: dump and drop (or rename) the earlier archive first.")
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        # Reads and writes wait while the month leaves (module docstring, "Moves and readers"): none can add
        # a key or a backlog row for it between the deletes below and the detach, and none sees the month's
        # derived rows gone while its events are still there; lock_timeout bounds the wait for reads in flight.
        cursor.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        if table == LEDGER:
            # Asked again under the lock: an invoice generated since the first answer read the ledger before the
            # lock (its draft is committed and seen now) or reads it after the month left (and refuses its period,
            # billing.services.invoices._refresh).
            ledger_month_detaching.run(start=month, end=end)
        cursor.execute(f"SELECT count(*) FROM {partition.name}")
        rows = cursor.fetchone()[0]
        released = 0
        if table == LEDGER:
            cursor.execute(f"DELETE FROM {KEYS} k USING {partition.name} e WHERE e.idempotency_key IS NOT NULL "
                           f"AND k.book_id = e.book_id AND k.idempotency_key = e.idempotency_key "
                           f"AND k.event_id = e.id")
            released = cursor.rowcount
            cursor.execute(f"DELETE FROM {RollupBacklog._meta.db_table} b USING {partition.name} e "
                           f"WHERE b.event_id = e.id")
            # Day rows of the month and its month rows (their day is the month's first day), every book's.
            cursor.execute(f"DELETE FROM {UsageDailyRollup._meta.db_table} WHERE day >= %s AND day < %s",
                           [month.date(), end.date()])
        cursor.execute(f"ALTER TABLE {table} DETACH PARTITION {partition.name}")
        cursor.execute(f"ALTER TABLE {partition.name} RENAME TO {archive}")
        if table == LEDGER:
            ArchivedMonth.objects.update_or_create(month=month, defaults={"archive": archive, "rows": rows,
                                                                          "detached_at": now})
    return Detached(month=month, archive=archive, rows=rows, keys_released=released)
