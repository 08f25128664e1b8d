"""Request-rate, auth-failure and link-token-guessing limits, counted in the shared cache (Redis in
production) so that they hold across server processes."""
import logging
import time

from django.conf import settings
from django.core.cache import cache

from core.errors import RateLimited
from core.logs import WarnedOncePer
from core.redis_client import redis_client

logger = logging.getLogger("billing.throttling")

# While Redis is down every request skips its count: one warning a minute, not a traceback per request.
_unavailable_warning = WarnedOncePer(logger)


def _count(key: str, ttl: int) -> int:
    """Increment a windowed counter; the first hit creates it with its time to live."""
    if cache.add(key, 1, ttl):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, ttl)
        return 1


def _rate_key(key_id, window: int) -> str:
    return f"rate:{key_id}:{window}"


def admit_key(key_id, ip: str | None) -> None:
    """A request with an accepted key: count it against the key's requests per minute (fixed one-minute
    windows; 429 with Retry-After past the limit) and clear the network's failed-key count, in one round
    trip to Redis."""
    limit = settings.API_RATE_LIMIT_PER_MINUTE
    now = time.time()
    window = int(now // 60)
    try:
        client = redis_client()
        if client is None:
            clear_auth_failures(ip)
            used = _count(_rate_key(key_id, window), 61) if limit > 0 else 0
        else:
            rate_key = cache.make_key(_rate_key(key_id, window))  # the keys the Django cache API uses
            pipeline = client.pipeline(transaction=False)
            pipeline.delete(cache.make_key(_failure_key(ip)))
            if limit > 0:
                pipeline.set(rate_key, 0, nx=True, ex=61)
                pipeline.incr(rate_key)
            used = pipeline.execute()[-1] if limit > 0 else 0
    except Exception:  # the limiter must never take the API down with it
        _unavailable_warning.warning("rate limiter unavailable (Redis): requests are not counted meanwhile")
        return
    if limit > 0 and used > limit:
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


# --- Hosted pages (/pay/<token>, /portal/<token>): the token is looked up first, so a valid one always opens
# whatever its network did before (behind a proxy many customers share one address; a guesser must not lock
# them out). Only misses are counted, per network; past the limit each further miss is a 429 with Retry-After
# instead of a 404. Link tokens carry 256 random bits, so guessing cannot succeed anyway: the limit tells a
# misbehaving client to back off and puts the guessing in the logs. A valid token neither counts nor clears the
# count (one real link must not reset a guesser's budget).

def _link_failure_key(ip: str | None) -> str:
    return f"linkfail:{ip or 'unknown'}"


def bad_link_token_retry_after(ip: str | None) -> int | None:
    """Count a hosted-page token that matched nothing; the seconds this network must wait (answer 429) once
    it is past LINK_TOKEN_FAILURE_LIMIT misses in the window, else None (answer 404)."""
    limit = settings.LINK_TOKEN_FAILURE_LIMIT
    try:
        failures = _count(_link_failure_key(ip), settings.LINK_TOKEN_FAILURE_WINDOW_SECONDS)
    except Exception:  # the limiter must never take the pages down with it
        logger.warning("link-token counter unavailable", exc_info=True)
        return None
    if failures <= limit:
        return None
    if failures == limit + 1:
        logger.warning("hosted-link tokens are being guessed: %s unknown tokens from %s", failures, ip or "unknown")
    return settings.LINK_TOKEN_FAILURE_WINDOW_SECONDS


# --- The console's sign-in page (/admin/login/): the same rule as for link tokens. Failed sign-ins are counted per
# network; past ADMIN_LOGIN_FAILURE_LIMIT in the window each further failure is answered 429 with Retry-After (and
# the first one logged as a warning), while a valid username and password always sign in, whatever the network
# did before (operators behind one proxy share an address; a guesser must not lock them out). Guessing itself is
# paid per attempt by the password hasher.

def _login_failure_key(ip: str | None) -> str:
    return f"loginfail:{ip or 'unknown'}"


def failed_login_retry_after(ip: str | None) -> int | None:
    """Count a failed sign-in from this network; the seconds to send in Retry-After (answer 429) once it is past
    ADMIN_LOGIN_FAILURE_LIMIT failures in the window, else None (the page's usual error)."""
    limit = settings.ADMIN_LOGIN_FAILURE_LIMIT
    try:
        failures = _count(_login_failure_key(ip), settings.ADMIN_LOGIN_FAILURE_WINDOW_SECONDS)
    except Exception:  # the limiter must never take the console down with it
        logger.warning("sign-in failure counter unavailable", exc_info=True)
        return None
    if failures <= limit:
        return None
    if failures == limit + 1:
        logger.warning("console sign-ins are being guessed: %s failures from %s", failures, ip or "unknown")
    return settings.ADMIN_LOGIN_FAILURE_WINDOW_SECONDS
