"""One HTTP exchange with the service, and when to try it again.

Which failures are retried (spec §7):
- 429: always (the rate limiter refuses a request before it does anything), after `Retry-After`;
- 502, 503, 504 and connection errors: transient; retried for reads, for usage records (every record carries
  an idempotency key, so a replay stores nothing twice) and for writes only when the answer says nothing
  ran (`503 auth_unavailable`: the key could not be checked);
- 500: "retry once", for reads and usage records;
- every other 4xx: never (the same request fails the same way).

How a request is made and retried is written once, as a plan (a generator yielding `Exchange` and `Sleep`
steps, see `Plan`); `SyncTransport` (httpx.Client) and `AsyncTransport` (httpx.AsyncClient) differ only in how
they carry a step out. The client's resources build their calls on the same plans, so `Client` and
`AsyncClient` share one definition of each call.
"""
from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from email.utils import parsedate_to_datetime
from typing import Any, AsyncIterator, Generator, Iterator, Mapping, TypeVar, Union
from uuid import UUID

import httpx

from agentbilling import _json
from agentbilling.errors import APIConnectionError, APIError, MissingAPIKeyError, error_class

DEFAULT_BASE_URL = "http://127.0.0.1:8000"
API_KEY_ENV, BASE_URL_ENV = "AGENTBILLING_API_KEY", "AGENTBILLING_BASE_URL"
TRANSIENT_STATUSES = frozenset({502, 503, 504})
USER_AGENT = "agentbilling-python/0.1.0"
T = TypeVar("T")


def resolve_settings(api_key: str | None, base_url: str | None) -> tuple[str, str]:
    api_key = api_key or os.environ.get(API_KEY_ENV)
    if not api_key:
        raise MissingAPIKeyError(f"agentbilling: no API key: pass api_key= or set {API_KEY_ENV} (a secret key, "
                                 "svc_sk_...)")
    base_url = (base_url or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")
    return api_key, base_url


def default_headers(api_key: str) -> dict[str, str]:
    return {"x-api-key": api_key, "Accept": "application/json", "User-Agent": USER_AGENT}


@dataclass(frozen=True)
class RetryPolicy:
    """How long to wait between attempts: `Retry-After` when the service sends one (capped at
    `max_retry_after`), else exponential backoff from `backoff_base` doubling up to `backoff_max`, with jitter
    (a random factor between 0.5 and 1) so that many clients do not retry in step."""

    max_retries: int = 2  # extra attempts after the first, for the typed client's calls
    backoff_base: float = 0.5
    backoff_max: float = 30.0
    max_retry_after: float = 120.0
    server_error_retries: int = 1  # 500 is retried this many times ("retry once")

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        ceiling = min(self.backoff_max, self.backoff_base * (2 ** attempt))
        return ceiling * (0.5 + random.random() / 2)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """`Retry-After` as seconds: a number, or an HTTP date."""
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(moment.timestamp() - time.time(), 0.0)


def query_params(params: Mapping[str, Any] | None) -> dict[str, str]:
    """Query values as the service reads them: booleans `true`/`false`, Decimals by their digits, instants
    ISO 8601; None leaves a parameter out."""
    out: dict[str, str] = {}
    for name, value in (params or {}).items():
        if value is None:
            continue
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        elif isinstance(value, Decimal):
            out[name] = _json.decimal_text(value)
        elif isinstance(value, datetime):
            out[name] = _json.instant_text(value)
        elif isinstance(value, (date, UUID)):
            out[name] = str(value)
        else:
            out[name] = str(value)
    return out


def error_from_response(response: httpx.Response) -> APIError:
    body: Any = None
    message: str | list[str] = response.reason_phrase or f"HTTP {response.status_code}"
    code = None
    try:
        body = _json.loads(response.content) if response.content else None
    except ValueError:
        body = response.text
    if isinstance(body, dict):
        message = body.get("message", message)
        code = body.get("code")
    cls = error_class(response.status_code, code)
    return cls(response.status_code, message, code, body=body, headers=response.headers,
               retry_after=retry_after_seconds(response.headers))


def should_retry(error: Exception, *, attempt: int, policy: RetryPolicy, method: str, replay_safe: bool) -> bool:
    """Whether the request that failed with `error` on try number `attempt` (0-based) may be sent again.
    `replay_safe`: sending it twice does no harm (reads; usage records with idempotency keys)."""
    if attempt >= policy.max_retries:
        return False
    if isinstance(error, APIConnectionError):
        return replay_safe
    if not isinstance(error, APIError):
        return False
    if error.status == 429:
        return True
    if error.status == 503 and error.code == "auth_unavailable":
        return True  # the key could not be checked: nothing ran
    if error.status in TRANSIENT_STATUSES:
        return replay_safe
    if error.status == 500:
        return replay_safe and attempt < policy.server_error_retries
    return False


def is_replay_safe(method: str) -> bool:
    return method in ("GET", "HEAD", "OPTIONS")


@dataclass(frozen=True)
class Exchange:
    """A step of a plan: one HTTP request to send; the executor answers it with the `httpx.Response`, or throws
    `APIConnectionError` into the plan when no answer came."""

    method: str
    url: str
    params: dict
    content: bytes | None
    headers: dict

    def perform(self, http, sleep):
        return http.request(self.method, self.url, params=self.params, content=self.content, headers=self.headers)


@dataclass(frozen=True)
class Sleep:
    """A step of a plan: wait this many seconds (between retries, between polls of a job)."""

    seconds: float

    def perform(self, http, sleep):
        return sleep(self.seconds)


# A plan is a generator that yields `Exchange` and `Sleep` steps and returns its result: the client's calls are
# written once as plans, and the sync and asyncio transports differ only in how they carry out a step.
Plan = Generator[Union[Exchange, Sleep], Any, T]


def ready(value: T) -> Plan[T]:
    """A plan that needs no step (the answer is already known)."""
    return value
    yield  # never reached: its presence makes this function a generator, hence a plan


class Driven:
    """Walks a plan: iterating gives its steps; set `reply` to the step's outcome (an exception is thrown into the
    plan) before asking for the next one; `result` is what the plan returned."""

    def __init__(self, plan: Plan):
        self.plan, self.reply, self.result = plan, None, None

    def __iter__(self):
        return self

    def __next__(self):
        reply, self.reply = self.reply, None
        try:
            if isinstance(reply, BaseException):
                return self.plan.throw(reply)
            return self.plan.send(reply)
        except StopIteration as finished:
            self.result = finished.value
            raise StopIteration from None

    def answering(self, step) -> "_Answering":
        return _Answering(self, step)


class _Answering:
    """Around carrying out one step: a connection failure becomes the step's reply (thrown into the plan, which
    decides whether to retry), not an exception of the executor."""

    def __init__(self, driven: Driven, step):
        self.driven, self.step = driven, step

    def __enter__(self):
        return self

    def __exit__(self, kind, failure, traceback) -> bool:
        if isinstance(failure, httpx.TransportError):
            step = self.step
            self.driven.reply = APIConnectionError(
                f"{step.method} {step.url}: {failure.__class__.__name__}: {failure}")
            self.driven.reply.__cause__ = failure
            return True
        return False


class Transport:
    """A connection pool to one service with one key. The request logic (headers, JSON body, error answers,
    retries) is written once here as plans; `SyncTransport` and `AsyncTransport` carry them out."""

    def __init__(self, api_key: str | None, base_url: str | None, *, policy: RetryPolicy | None, http, sleep):
        self.api_key, self.base_url = resolve_settings(api_key, base_url)
        self.policy = policy or RetryPolicy()
        self.headers = default_headers(self.api_key)
        self.http, self.sleep = http, sleep

    def attempt(self, method: str, path: str, *, params=None, body: Any = None) -> Plan[httpx.Response]:
        """One attempt; an error status or a connection failure raises."""
        headers = self.headers
        content = None
        if body is not None:
            content = _json.dumps(body)
            headers = {**headers, "Content-Type": "application/json"}
        response = yield Exchange(method, self.base_url + path, query_params(params), content, headers)
        if response.status_code >= 400:
            raise error_from_response(response)
        return response

    def retried(self, method: str, path: str, *, params=None, body: Any = None,
                replay_safe: bool | None = None) -> Plan[httpx.Response]:
        """Attempts until one succeeds or `should_retry` says stop, waiting `policy.delay` between them."""
        replay_safe = is_replay_safe(method) if replay_safe is None else replay_safe
        attempt = 0
        while True:
            try:
                return (yield from self.attempt(method, path, params=params, body=body))
            except (APIError, APIConnectionError) as error:
                if not should_retry(error, attempt=attempt, policy=self.policy, method=method,
                                    replay_safe=replay_safe):
                    raise
                yield Sleep(self.policy.delay(attempt, getattr(error, "retry_after", None)))
                attempt += 1


class SyncTransport(Transport):
    """Carries plans out with `httpx.Client`, blocking; `send_once` and `request` return the response or raise."""

    def __init__(self, api_key: str | None = None, base_url: str | None = None, *, timeout: float = 30.0,
                 policy: RetryPolicy | None = None, http_client: httpx.Client | None = None, sleep=time.sleep):
        self._owns_client = http_client is None
        super().__init__(api_key, base_url, policy=policy, http=http_client or httpx.Client(timeout=timeout),
                         sleep=sleep)

    def run(self, plan: Plan[T]) -> T:
        driven = Driven(plan)
        for step in driven:
            with driven.answering(step):
                driven.reply = step.perform(self.http, self.sleep)
        return driven.result

    def walk(self, first_page: Plan) -> Iterator:
        """Every item of the list whose first page `first_page` fetches, page after page, each once (`_first_time`)."""
        page, seen = self.run(first_page), set()
        while page is not None:
            yield from (item for item in page.items if _first_time(item, seen))
            page = self.run(page.next_plan())

    def send_once(self, method: str, path: str, *, params=None, body: Any = None) -> httpx.Response:
        return self.run(self.attempt(method, path, params=params, body=body))

    def request(self, method: str, path: str, *, params=None, body: Any = None,
                replay_safe: bool | None = None) -> httpx.Response:
        return self.run(self.retried(method, path, params=params, body=body, replay_safe=replay_safe))

    def close(self) -> None:
        if self._owns_client:
            self.http.close()


def _first_time(item, seen: set) -> bool:
    """Whether a walk has not yielded this item yet (by its `id`; an item without one always passes). Lists page by
    offset, newest first: a row created while a walk goes on lands ahead of it and pushes the rows after it down, so
    the next page began with the last row of the one before, yielded (and summed) twice."""
    identity = item.get("id") if isinstance(item, dict) else getattr(item, "id", None)
    if identity is None:
        return True
    if identity in seen:
        return False
    seen.add(identity)
    return True


class AsyncTransport(Transport):
    """Carries the same plans out with `httpx.AsyncClient`: every method is a coroutine (`walk` an async
    iterator)."""

    def __init__(self, api_key: str | None = None, base_url: str | None = None, *, timeout: float = 30.0,
                 policy: RetryPolicy | None = None, http_client: httpx.AsyncClient | None = None, sleep=None):
        self._owns_client = http_client is None
        super().__init__(api_key, base_url, policy=policy, http=http_client or httpx.AsyncClient(timeout=timeout),
                         sleep=sleep or asyncio.sleep)

    async def run(self, plan: Plan[T]) -> T:
        driven = Driven(plan)
        for step in driven:
            with driven.answering(step):
                driven.reply = await step.perform(self.http, self.sleep)
        return driven.result

    async def walk(self, first_page: Plan) -> AsyncIterator:
        page, seen = await self.run(first_page), set()
        while page is not None:
            for item in page.items:
                if _first_time(item, seen):
                    yield item
            page = await self.run(page.next_plan())

    async def send_once(self, method: str, path: str, *, params=None, body: Any = None) -> httpx.Response:
        return await self.run(self.attempt(method, path, params=params, body=body))

    async def request(self, method: str, path: str, *, params=None, body: Any = None,
                      replay_safe: bool | None = None) -> httpx.Response:
        return await self.run(self.retried(method, path, params=params, body=body, replay_safe=replay_safe))

    async def aclose(self) -> None:
        if self._owns_client:
            await self.http.aclose()
