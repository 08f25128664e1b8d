"""Raw statements: whole rows of several models read side by side, the prepared statements of the hot path, and
reads that must see one snapshot."""
import functools
import time
from collections.abc import Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from django.db import OperationalError, connection, connections, transaction
from django.db.backends.postgresql.base import ServerBindingCursor

from core.replica import read_database


class WholeRows:
    """Every concrete column of a model in a raw statement that reads whole rows (of several models, side by
    side, or with extra columns after them), and the instances `from_db` builds from them."""

    def __init__(self, model, table_alias: str):
        fields = model._meta.concrete_fields
        self.model = model
        self.select = ", ".join(f"{table_alias}.{field.column}" for field in fields)
        self.attnames = [field.attname for field in fields]
        self.width = len(fields)

    def instance(self, row, start: int = 0):
        """The instance whose columns start at `row[start]`."""
        return self.model.from_db(connection.alias, self.attnames, row[start:start + self.width])


class PreparedCursor(ServerBindingCursor):
    """Binds parameters on the server and asks psycopg to prepare every statement it runs."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True if prepare is None else prepare, binary=binary)

    def _convert_query(self, query, params=None):
        # Django's query log (`last_executed_query`: DEBUG logging, tests counting queries) reads `_query`,
        # which psycopg sets only for statements it does not prepare.
        self._query = super()._convert_query(query, params)
        return self._query


@contextmanager
def prepared_cursor():
    """A cursor for the fixed raw statements every request or batch runs (API key, identities, catalog,
    matter routing, the events insert): PostgreSQL parses and plans each once per connection instead of once per call, which
    took longer than running them (docs/performance.md). Django's cursors bind parameters on the client
    (a new statement text each call, never preparable), so this one binds them on the server. Wrapped by
    Django as any cursor is (its database errors, query logging and execute wrappers still apply).
    `DB_PREPARED_STATEMENTS=0` (settings) turns preparing off, e.g. behind a pooler that cannot carry
    prepared statements; the statements then run unprepared, with server-side binding all the same."""
    connection.ensure_connection()
    with connection._prepare_cursor(PreparedCursor(connection.connection)) as cursor:
        yield cursor


# How long a write that must follow something already done outside the database (an email sent) waits for
# PostgreSQL to come back (a restart takes seconds).
RECONNECT_SECONDS = 5


def retry_while_reconnecting(write, *, seconds: float = RECONNECT_SECONDS):
    """Run `write()` (its own transaction or a read, safe to run again) and return its result; when the connection
    fails (a restart, a failover: OperationalError or InterfaceError outside any transaction), run it again at once on
    a new connection, then every 0.2 s until `seconds` have passed, and raise as before. For a kept connection the
    server dropped while it idled (`seconds=0`: one retry), and for the step after an effect the database cannot
    undo (an email sent), where a 503 would leave the record behind what happened; and for the read that answers a
    write already committed, where a 503 would tell the client that what was stored was not."""
    from django.db import InterfaceError, OperationalError

    deadline = time.monotonic() + seconds
    retried = False
    while True:
        try:
            return write()
        except (OperationalError, InterfaceError):
            if connection.in_atomic_block or (retried and time.monotonic() >= deadline):
                raise
            connection.close()
            if retried:
                time.sleep(0.2)
            retried = True


# How often a transaction PostgreSQL chose as a deadlock's victim runs again before its error is the answer.
DEADLOCK_ATTEMPTS = 3
DEADLOCK_DETECTED = "40P01"


def retried_on_deadlock(function):
    """Run `function` (a service that is one transaction of its own) again when PostgreSQL ends it as a deadlock's
    victim: it was rolled back whole, and running it again gives the answer it would have had a moment later (a
    409 for a plan change into a period the other side just invoiced, the draft for a generate), not a 503. Two
    writers meet so when one holds an invoice row while its commit checks the foreign keys to the subscription
    and the customer, and the other holds those rows and waits for the invoice (docs/decisions/reliability.md).
    Inside a caller's transaction it cannot run again alone: the error goes up as it came."""
    @functools.wraps(function)
    def run(*args, **kwargs):
        for attempt in range(1, DEADLOCK_ATTEMPTS + 1):
            try:
                return function(*args, **kwargs)
            except OperationalError as failure:
                victim = getattr(failure.__cause__, "sqlstate", None) == DEADLOCK_DETECTED
                if not victim or connection.in_atomic_block or attempt == DEADLOCK_ATTEMPTS:
                    raise
    return run


LOCK_NOT_AVAILABLE = "55P03"  # a `lock_timeout` ran out


def lock_wait_failed(error: OperationalError) -> bool:
    """Whether `error` is a lock PostgreSQL did not grant within the statement's `lock_timeout`."""
    return getattr(getattr(error, "__cause__", None), "sqlstate", None) == LOCK_NOT_AVAILABLE


def retried_while_lock_busy(step, *, attempts: int, pause: float):
    """Run `step()` (a transaction of its own that asks for a lock under a short `lock_timeout`) until it gets the
    lock, at most `attempts` times `pause` seconds apart, and return its result: what queues behind a waiting ask waits
    no longer than one ask, while the transactions ahead of it are still waited out. Inside an outer transaction (a
    test) there is nothing to retry into: it runs once."""
    for attempt in range(attempts):
        try:
            return step()
        except OperationalError as error:
            if connection.in_atomic_block or not lock_wait_failed(error) or attempt == attempts - 1:
                raise
            time.sleep(pause)


def key_share_locked(model, ids) -> set:
    """Those of `ids` whose rows of `model` still exist, each held `FOR KEY SHARE` to the end of the current
    transaction (the lock a foreign key's check takes; Django's `select_for_update` has no such mode): a row the
    transaction is about to reference cannot be deleted meanwhile, while updates of its other columns and other
    such holders go on."""
    if not ids:
        return set()
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {model._meta.pk.column} FROM {model._meta.db_table} "
                       f"WHERE {model._meta.pk.column} = ANY(%s) ORDER BY 1 FOR KEY SHARE", [list(ids)])
        return {row_id for (row_id,) in cursor.fetchall()}


def advisory_xact_lock(namespace: int, key: str) -> None:
    """Wait for, then hold to the end of the current transaction, PostgreSQL's advisory lock (`namespace`, the
    hash of `key`): work that must run one at a time per key, without locking a row others need."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [namespace, key])


def advisory_xact_lock_if_free(namespace: int, key: str) -> bool:
    """Take the lock `advisory_xact_lock` waits for if nobody holds it, to the end of the current transaction; False,
    at once, if somebody does."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_xact_lock(%s, hashtext(%s))", [namespace, key])
        return cursor.fetchone()[0]


_in_one_snapshot: ContextVar[bool] = ContextVar("in_one_snapshot", default=False)


@contextmanager
def one_snapshot(*, share_locked: Sequence[str] = ()):
    """Run the block's reads against one snapshot of the database: a `REPEATABLE READ, READ ONLY` transaction where
    the request reads (core/replica.py). For a figure made of several statements that subtracts one read from
    another (the events no plan covers: the total less the per-plan rows; a credit balance: top-ups less the draws
    settled and the draws not settled yet): under READ COMMITTED each statement sees the commits made before it
    started, so a batch or a settlement committing between two of them showed in one and not the other.

    `share_locked`: tables locked `ACCESS SHARE` (the table itself, not its partitions) before the snapshot is taken,
    for a partitioned table whose rows maintenance moves between partitions under an `ACCESS EXCLUSIVE` lock of the
    table (customers/partitions.py): the move then waits for this read. Without the lock a snapshot taken before a
    move, used by a statement planned after it, reads the new partition (whose rows it cannot see yet) and not the
    old rows' partition (pruned away): the month's rows vanished from the read.

    Nothing in the block may write; `reading_one_snapshot()` tells the one write a read makes (the rollup's
    catch-up, which its caller runs before opening the block) that it has nothing to do. Inside a transaction
    already (a write deciding on what it reads, a test's), the block runs in that transaction as it is."""
    alias = read_database()
    wrapper = connections[alias]
    if wrapper.in_atomic_block:
        yield
        return
    with transaction.atomic(using=alias):
        with wrapper.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            for table in share_locked:  # before any statement that takes the snapshot
                cursor.execute(f"LOCK TABLE ONLY {table} IN ACCESS SHARE MODE")
        token = _in_one_snapshot.set(True)
        try:
            yield
        finally:
            _in_one_snapshot.reset(token)


def reading_one_snapshot() -> bool:
    """Whether the current code runs inside `one_snapshot()`'s transaction."""
    return _in_one_snapshot.get()
