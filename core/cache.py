"""The shared cache (Redis) as an optimisation that may be missing: while Redis does not answer, a read is a
miss and a write is skipped, logged once a minute, never an error. Every value kept in it can be computed again
(credit balances for 30 seconds, rate counters, replica marks), and the request that would have written it may
already have committed its own writes: a request whose writes committed never answers 5xx because Redis went
away (docs/decisions/reliability.md)."""
import logging

import redis
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache

from core.logs import WarnedOncePer
from core.redis_client import fail_fast_connection_class

logger = logging.getLogger("billing.cache")
_unavailable_warning = WarnedOncePer(logger)


def _unavailable(operation: str) -> None:
    _unavailable_warning.warning("shared cache unavailable (Redis): %s skipped", operation)


class ResilientRedisCache(RedisCache):
    """Django's Redis cache whose reads miss and whose writes are skipped while Redis is unreachable. `incr`
    still raises (a counter has no sensible default; its callers decide, accounts/throttling.py). It connects
    through a fail-fast connection (core/redis_client.py): after a failure it does not wait on Redis again for a
    few seconds."""

    def __init__(self, server, params):
        options = dict(params.get("OPTIONS") or {})
        first = server[0] if isinstance(server, (list, tuple)) else server.split(",")[0]
        options.setdefault("connection_class", fail_fast_connection_class(first.strip()))
        super().__init__(server, {**params, "OPTIONS": options})

    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except redis.RedisError:
            _unavailable("get")
            return default

    def get_many(self, keys, version=None):
        try:
            return super().get_many(keys, version)
        except redis.RedisError:
            _unavailable("get_many")
            return {}

    def get_many_or_raise(self, keys, version=None):
        """`get_many` that raises while Redis does not answer, for a caller to whom "nothing cached" and "could not
        ask" must differ (core/replica.py: a caller that may have written reads the primary)."""
        return super().get_many(keys, version)

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().set(key, value, timeout, version)
        except redis.RedisError:
            _unavailable("set")

    def set_many(self, data, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().set_many(data, timeout, version)
        except redis.RedisError:
            _unavailable("set_many")
            return list(data)

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            return super().add(key, value, timeout, version)
        except redis.RedisError:
            _unavailable("add")
            return False

    def delete(self, key, version=None):
        try:
            return super().delete(key, version)
        except redis.RedisError:
            _unavailable("delete")
            return False
