"""The raw Redis client, for the few hot-path places that need several commands in one round trip (the
Django cache API makes a round trip per call, and two for `incr`). None without REDIS_URL: callers fall
back to the Django cache (local memory in the zero-setup `make run`)."""
from functools import lru_cache

import redis
from django.conf import settings


@lru_cache(maxsize=1)
def redis_client() -> redis.Redis | None:
    # One client (and connection pool) per process; redis-py reopens its connections after a fork.
    if not settings.REDIS_URL:
        return None
    return redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=settings.REDIS_TIMEOUT_SECONDS,
                                socket_timeout=settings.REDIS_TIMEOUT_SECONDS)
