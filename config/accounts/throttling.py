"""Request-rate, auth-failure and link-token-guessing limits, counted in the shared cache (Redis in
production) so that they hold across server processes."""
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


# --- Hosted pages (/pay/<token>, /portal/<token>): a network that keeps opening links with tokens that match
# nothing is guessing; past the limit it gets 429 on every link, valid or not, until its window ends (a valid
# token does not clear the count, or one real link would let a guesser go on for ever).

def _link_failure_key(ip: str | None) -> str:
    return f"linkfail:{ip or 'unknown'}"


def link_token_retry_after(ip: str | None) -> int | None:
    """Seconds this network must wait before opening hosted links again; None when it is not blocked."""
    try:
        failures = cache.get(_link_failure_key(ip), 0)
    except Exception:
        logger.warning("link-token counter unavailable", exc_info=True)
        return None
    return settings.LINK_TOKEN_FAILURE_WINDOW_SECONDS if failures >= settings.LINK_TOKEN_FAILURE_LIMIT else None


def record_bad_link_token(ip: str | None) -> None:
    """Count a hosted-page token that matched nothing."""
    try:
        _count(_link_failure_key(ip), settings.LINK_TOKEN_FAILURE_WINDOW_SECONDS)
    except Exception:
        logger.warning("link-token counter unavailable", exc_info=True)
