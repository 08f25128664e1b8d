"""The raw Redis client, for the few hot-path places that need several commands in one round trip (the
Django cache API makes a round trip per call, and two for `incr`). None without REDIS_URL: callers fall
back to the Django cache (local memory in the zero-setup `make run`).

Both this client and the shared cache (core/cache.py) connect through `FailFastConnection`: every caller of
Redis treats it as optional (a miss, a skipped count, a task left to its sweep), so once it has failed to connect
or to answer in time, the process stops waiting on it for a few seconds."""
import time
from functools import lru_cache

import redis
from django.conf import settings

# After Redis failed to connect or to answer within its timeout, a process opens no connection to it for this
# long: against a Redis that does not answer (a partition, a stalled server) each attempt waits the full timeout
# (2 s), and a usage batch asks it two or three times. A refused connection costs nothing to find out, but it is
# the same outage.
UNREACHABLE_PAUSE_SECONDS = 5
_unreachable_until = 0.0  # time.monotonic() before which no connection to Redis is opened


def _failed() -> None:
    global _unreachable_until
    _unreachable_until = time.monotonic() + UNREACHABLE_PAUSE_SECONDS


def mark_unreachable() -> None:
    """Redis failed to connect or to answer in time elsewhere (the broker's connection): the raw client and the
    cache do not connect for `UNREACHABLE_PAUSE_SECONDS` either."""
    _failed()


def unreachable() -> bool:
    """Redis failed to connect or to answer moments ago (within `UNREACHABLE_PAUSE_SECONDS`)."""
    return time.monotonic() < _unreachable_until


def reachable_again() -> None:
    """Connect at the next command (a test that brings its Redis back)."""
    global _unreachable_until
    _unreachable_until = 0.0


class _FailFast:
    """For `UNREACHABLE_PAUSE_SECONDS` after Redis failed to connect or to answer in time, refuse to connect at
    once instead of waiting for the timeout again. redis-py drops a connection whose read timed out, so the next
    command on it connects anew and is refused the same way."""

    def connect(self):
        if time.monotonic() < _unreachable_until:
            raise redis.ConnectionError("Redis failed moments ago; not asked again for a few seconds.")
        try:
            super().connect()
        except (redis.ConnectionError, redis.TimeoutError):
            _failed()
            raise

    def read_response(self, *args, **kwargs):
        try:
            return super().read_response(*args, **kwargs)
        except redis.TimeoutError:
            _failed()
            raise


class FailFastConnection(_FailFast, redis.Connection):
    pass


class FailFastSSLConnection(_FailFast, redis.SSLConnection):
    pass


class FailFastUnixConnection(_FailFast, redis.UnixDomainSocketConnection):
    pass


def fail_fast_connection_class(url: str) -> type:
    """The connection class for a Redis URL (its scheme picks TLS or a Unix socket, as redis-py's would)."""
    scheme = url.split("://", 1)[0].lower()
    return {"rediss": FailFastSSLConnection, "unix": FailFastUnixConnection}.get(scheme, FailFastConnection)


@lru_cache(maxsize=1)
def redis_client() -> redis.Redis | None:
    # One client (and connection pool) per process; redis-py reopens its connections after a fork.
    if not settings.REDIS_URL:
        return None
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=settings.REDIS_TIMEOUT_SECONDS,
                                socket_timeout=settings.REDIS_TIMEOUT_SECONDS,
                                connection_class=fail_fast_connection_class(settings.REDIS_URL))
