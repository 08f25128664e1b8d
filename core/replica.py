"""Reads that may leave the primary: analytics, revenue, portal and console pages read from the streaming replica
of DATABASE_REPLICA_URL while it is fresh enough (docs/decisions/infra.md, Reads on a streaming replica).

One place decides which requests may read there (`ReplicaReadsMiddleware`): a GET or HEAD whose path matches
DATABASE_REPLICA_PATHS, from a caller who has not written within DATABASE_REPLICA_MAX_LAG_SECONDS, while the
replica is fresh enough. Such a request is marked in a context variable, and the router (`ReplicaRouter`) sends
its ORM reads to the replica. Everything else reads and writes the primary:

- every write, and every read after the request's first write (a request that wrote reads what it wrote);
- every read inside a transaction on the primary (reads that decide a write: locks, read-modify-write);
- the tables that say who the caller is and what it may do (browser sessions, users, organizations, books,
  memberships, API keys, portal sessions): a revoked key or link stops working at once, never a lag later;
- every request of a caller (API key, browser session) whose last write is younger than the bound
  (read-your-writes): the usage-record answer and invoice generation are writes and read the primary anyway,
  and the analytics read their caller makes right after sees them too.

Bounded staleness: a replica read reflects every commit older than DATABASE_REPLICA_MAX_LAG_SECONDS. The lag is
measured against the primary, not the replica alone: the primary's WAL insert position (every record it has
written, flushed or not: with synchronous_commit off a commit is not flushed at once), then the replica's
replay position and the time of its last replayed commit. A replica that has replayed everything the primary
had written is 0 behind; otherwise it is behind by the primary's clock minus that commit's time (so a stalled
stream or paused replay counts as lag, and an idle primary does not). Each process measures at most once per
LAG_CHECK_SECONDS and uses the replica while the lag plus that interval is within the bound. A replica that
cannot be reached is left alone for RETRY_SECONDS, and reads go to the primary.

Raw SQL reaches a database through `read_database()` (customers/rollup.py `execute`), which answers what the
router would; `pin_to_primary()` ends the request's replica reads (a raw write).
"""
from __future__ import annotations

import fnmatch
import hashlib
import logging
import math
import re
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import MiddlewareNotUsed
from django.db import DatabaseError, connections

logger = logging.getLogger(__name__)

PRIMARY, REPLICA = "default", "replica"
LAG_CHECK_SECONDS = 1.0
RETRY_SECONDS = 10.0
SAFE_METHODS = frozenset({"GET", "HEAD"})
# Who the caller is and what it may do: read where it is written, never a lag behind.
PRIMARY_ONLY_APPS = frozenset({"sessions", "auth", "contenttypes"})
PRIMARY_ONLY_MODELS = frozenset({"accounts.user", "accounts.organization", "accounts.book", "accounts.membership",
                                 "accounts.apikey", "accounts.invitation", "portal.portalsession"})
WROTE_PREFIX = "replica-reads:wrote:"

# REPLICA while the current request may read from the replica; None otherwise (and in every task and thread).
_reads: ContextVar[str | None] = ContextVar("replica_reads", default=None)


def is_configured() -> bool:
    return REPLICA in settings.DATABASES


def read_database() -> str:
    """Where a read of the current request goes (for raw SQL; the router answers the same for the ORM)."""
    if _reads.get() is None or connections[PRIMARY].in_atomic_block:
        return PRIMARY
    return REPLICA


@contextmanager
def replica_reads():
    """The block's reads may go to the replica (what the middleware does for a request it marks)."""
    token = _reads.set(REPLICA)
    try:
        yield
    finally:
        _reads.reset(token)


def pin_to_primary() -> None:
    """The rest of the current request reads the primary (it wrote, or is about to)."""
    if _reads.get() is not None:
        _reads.set(None)


class ReplicaRouter:
    """ORM reads of a marked request go to the replica; everything else to the primary (module docstring)."""

    def db_for_read(self, model, **hints):
        if model._meta.app_label in PRIMARY_ONLY_APPS or model._meta.label_lower in PRIMARY_ONLY_MODELS:
            return PRIMARY
        return read_database()

    def db_for_write(self, model, **hints):
        pin_to_primary()
        return PRIMARY

    def allow_relation(self, obj1, obj2, **hints):
        return True  # one database, two copies of it

    def allow_migrate(self, db, app_label, model_name=None, **hints):
        return db == PRIMARY


# --------------------------------------------------------------------------- freshness

class _Freshness:
    """The replica's lag as this process last measured it, measured again at most once per LAG_CHECK_SECONDS."""

    def __init__(self):
        self._lock = threading.Lock()
        self._next_check = 0.0
        self.lag: float | None = None  # seconds; None: unknown (unreachable, or nothing replayed yet)

    def usable(self) -> bool:
        now = time.monotonic()
        if now >= self._next_check and self._lock.acquire(blocking=False):
            try:
                self.lag = measure_lag()
                self._next_check = now + (LAG_CHECK_SECONDS if self.lag is not None else RETRY_SECONDS)
            finally:
                self._lock.release()
        lag = self.lag
        return lag is not None and lag + LAG_CHECK_SECONDS <= settings.DATABASE_REPLICA_MAX_LAG_SECONDS

    def forget(self) -> None:
        self._next_check, self.lag = 0.0, None


freshness = _Freshness()


def measure_lag() -> float | None:
    """Seconds the replica trails the primary (module docstring); None when either cannot be asked or the
    replica has replayed no commit since it started while behind."""
    try:
        with connections[PRIMARY].cursor() as cursor:
            cursor.execute("SELECT pg_current_wal_insert_lsn(), clock_timestamp()")
            primary_lsn, primary_now = cursor.fetchone()
        asked = time.monotonic()
        with connections[REPLICA].cursor() as cursor:
            cursor.execute("SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn() >= %s::pg_lsn, "
                           "pg_last_xact_replay_timestamp()", [primary_lsn])
            in_recovery, caught_up, replayed_at = cursor.fetchone()
    except DatabaseError:
        logger.warning("replica reads: the replica's lag could not be measured; reading the primary for %s s",
                       RETRY_SECONDS, exc_info=True)
        connections[REPLICA].close()
        return None
    if not in_recovery or caught_up:
        return 0.0  # a server that is no standby (the suite's mirror), or one that has replayed everything
    if replayed_at is None:
        return None
    return max(0.0, (primary_now - replayed_at).total_seconds() + (time.monotonic() - asked))


# --------------------------------------------------------------------------- read-your-writes

def _caller_marks(request, response=None) -> list[str]:
    """Cache keys of the caller's identities: its API key and its browser session (the one it sent, and a new
    one the response sets, as a sign-in does)."""
    values = []
    api_key = request.META.get("HTTP_X_API_KEY", "").strip()
    if api_key:
        values.append(f"key:{api_key}")
    cookie = settings.SESSION_COOKIE_NAME
    if request.COOKIES.get(cookie):
        values.append(f"session:{request.COOKIES[cookie]}")
    if response is not None and cookie in response.cookies and response.cookies[cookie].value:
        values.append(f"session:{response.cookies[cookie].value}")
    return [WROTE_PREFIX + hashlib.sha256(value.encode()).hexdigest()[:32] for value in values]


def _wrote_recently(request) -> bool:
    marks = _caller_marks(request)
    if not marks:
        return False
    # The shared cache's reads miss while Redis is down (core/cache.py); here that would send a caller who just
    # wrote to the replica, so ask in the way that raises (a replica needs REDIS_URL: the cache is always Redis's).
    try:
        return bool(cache.get_many_or_raise(marks))
    except Exception:  # the cache (Redis) is down: the caller may have written, so read the primary
        logger.warning("replica reads: the cache could not be asked whether the caller wrote", exc_info=True)
        return True


def _remember_write(request, response) -> None:
    marks = _caller_marks(request, response)
    if not marks:
        return
    window = math.ceil(settings.DATABASE_REPLICA_MAX_LAG_SECONDS)
    try:
        cache.set_many(dict.fromkeys(marks, 1), timeout=window)
    except Exception:
        logger.warning("replica reads: the caller's write could not be remembered; its reads within %s s may "
                       "miss it", window, exc_info=True)


# --------------------------------------------------------------------------- the one place that decides

def path_pattern(patterns: list[str]) -> re.Pattern:
    """One expression for DATABASE_REPLICA_PATHS (shell-style: `*` matches any run of characters, `/` too)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(pattern)})" for pattern in patterns) or r"(?!)")


class ReplicaReadsMiddleware:
    """Marks the requests whose reads may go to the replica, and remembers who wrote (module docstring).
    Not installed unless DATABASE_REPLICA_URL is set."""

    def __init__(self, get_response):
        if not is_configured():
            raise MiddlewareNotUsed
        self.get_response = get_response
        self.paths = path_pattern(settings.DATABASE_REPLICA_PATHS)

    def __call__(self, request):
        if request.method not in SAFE_METHODS:
            response = self.get_response(request)
            if not 400 <= response.status_code < 500:  # a refused request wrote nothing; a failed one may have
                _remember_write(request, response)
            return response
        if not (self.paths.match(request.path_info) and not _wrote_recently(request) and freshness.usable()):
            return self.get_response(request)
        with replica_reads():
            return self.get_response(request)
