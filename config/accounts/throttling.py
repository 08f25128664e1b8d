"""Request-rate and auth-failure limits, counted in the shared cache (Redis in production)
so that they hold across server processes."""
import logging
import time

from django.conf import settings
from django.core.cache import cache

from config.core.errors import RateLimited

logger = logging.getLogger("billing.throttling")


def _count(key: str, ttl: int) -> int:
    """Increment a windowed counter; the first hit creates it with its time to live."""
    if cache.add(key, 1, ttl):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, ttl)
        return 1


def enforce_key_rate(key_id) -> None:
    """429 with Retry-After when a key exceeds its requests per minute (fixed one-minute windows)."""
    limit = settings.API_RATE_LIMIT_PER_MINUTE
    if limit <= 0:
        return
    now = time.time()
    window = int(now // 60)
    try:
        used = _count(f"rate:{key_id}:{window}", 61)
    except Exception:  # the limiter must never take the API down with it
        logger.warning("rate limiter unavailable", exc_info=True)
        return
    if used > limit:
        raise RateLimited(f"Request rate exceeded ({limit} per minute for this key); retry later.",
                          retry_after=60 - int(now % 60))


def _failure_key(ip: str | None) -> str:
    return f"authfail:{ip or 'unknown'}"


def record_auth_failure(ip: str | None) -> None:
    """Count a rejected key from this network; past the limit the network gets 429 until the window ends
    or a key is accepted."""
    try:
        failures = _count(_failure_key(ip), settings.AUTH_FAILURE_WINDOW_SECONDS)
    except Exception:
        logger.warning("auth-failure counter unavailable", exc_info=True)
        return
    if failures > settings.AUTH_FAILURE_LIMIT:
        raise RateLimited("Too many failed API key attempts from this network; retry later.",
                          retry_after=settings.AUTH_FAILURE_WINDOW_SECONDS, code="too_many_auth_failures")


def clear_auth_failures(ip: str | None) -> None:
    try:
        cache.delete(_failure_key(ip))
    except Exception:
        logger.warning("auth-failure counter unavailable", exc_info=True)


def failure_count(key: str) -> int:
    """The current value of a windowed failure counter (0 when absent, or when the cache does not answer)."""
    try:
        return int(cache.get(key) or 0)
    except Exception:
        logger.warning("failure counter unavailable", exc_info=True)
        return 0


def record_failure(key: str, *, window_seconds: int) -> None:
    """Count one failure in a fixed window that starts with the first one (the counter of `_count`)."""
    try:
        _count(key, window_seconds)
    except Exception:
        logger.warning("failure counter unavailable", exc_info=True)
