"""The buffered recorder: the hot path of an integration.

    recorder = Recorder()                       # $AGENTBILLING_API_KEY, $AGENTBILLING_BASE_URL
    recorder.record(customerExternalId="cust-42", agentCode="support-bot", signalName="tickets_resolved",
                    model="gpt-4o", modelProvider="openai", inputTokens=1200, outputTokens=300)

`record(...)` checks the record, gives it an idempotency key when it has none, appends it to an in-memory
buffer and returns the key at once. Background senders (threads for `Recorder`, tasks for `AsyncRecorder`)
send the buffer in batches of up to 100 records (spec §8): as soon as 100 are waiting, else when the oldest
has waited `flush_interval` seconds, and on `flush()`, `close()` and at interpreter exit.

Delivery (spec §7):
- 429: wait `Retry-After`, send again; 502, 503, 504 and connection errors: back off exponentially (with
  jitter) and send again, for as long as the recorder runs (or `max_attempts`). The batch keeps its
  idempotency keys, so a request that was stored but whose answer was lost is a replay, never a duplicate.
- 500: sent again `retry_policy.server_error_retries` times (once), then its records are failures.
- 400 naming records (`records[3]: ...`): those records are failures, the rest is sent again at once.
- any other error status (401 revoked key, 403 ...): the batch's records are failures.
- 200: each `results.failed[]` entry is a failure; `stored: true` ones are stored (cost null, backfilled
  once the model is mapped) and are never sent again, `stored: false` ones are not stored.
Failures go to `on_failure(RecordFailure)`, called from the sender, and are logged at WARNING on the
`agentbilling.recorder` logger: one line per batch and cause (HTTP status and code), with the number of records,
whether they were stored (without a cost) or not, and the service's message.

Bounded memory: at most `max_buffer` records wait (default 10,000), plus the batches being sent (one per
sender). A record arriving at a full buffer is dropped, not the ones already waiting: it is counted in
`stats.dropped`, reported to `on_failure` with code `buffer_full`, and logged twice per episode: when it starts,
and with the count of records dropped when it ends (the buffer back under half full, or the recorder closed).
Records still unsent when `close()` gives up (after `shutdown_timeout`) are dropped the same way with code
`shutdown_unsent`.
"""
from __future__ import annotations

import asyncio
import atexit
import logging
import math
import os
import re
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Callable, Iterable, Sequence

import httpx

from agentbilling import _json
from agentbilling._http import AsyncTransport, RetryPolicy, SyncTransport
from agentbilling.resources._base import MAX_RECORDS_PER_REQUEST, new_idempotency_key
from agentbilling.errors import APIConnectionError, APIError

logger = logging.getLogger("agentbilling.recorder")

TOKEN_FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "cacheWrite1hTokens")
SERVICE_TIERS = ("standard", "batch", "flex", "priority")
ENVIRONMENTS = ("production", "staging", "development", "testing")
RECORD_INDEX = re.compile(r"^records\[(\d+)\]")

# Failure codes the recorder itself gives (the service's own codes, e.g. `invalid_record`, `unknown_model`,
# pass through as they are).
BUFFER_FULL = "buffer_full"
SHUTDOWN_UNSENT = "shutdown_unsent"
RETRIES_EXHAUSTED = "retries_exhausted"
SERVER_ERROR = "server_error"


@dataclass(frozen=True)
class RecordFailure:
    """A record that was not stored, or stored without a cost (`stored: true`: never resend it)."""

    record: dict
    code: str
    message: Any
    stored: bool
    status: int | None = None  # the HTTP status when the whole request failed
    event_id: str | None = None


@dataclass(frozen=True)
class RecorderStats:
    recorded: int  # accepted by record()
    queued: int  # waiting in the buffer
    in_flight: int  # in batches being sent
    stored: int  # stored by the service (with or without a cost; replays included)
    failed: int  # reported to on_failure (stored: true ones included; dropped ones not)
    dropped: int  # never delivered: buffer full, or unsent at shutdown
    retries: int  # requests sent again


def build_record(*, customerExternalId: str, agentCode: str, signalName: str, model: str | None = None,
                 modelProvider: str | None = None, inputTokens: int | None = None, outputTokens: int | None = None,
                 cacheReadTokens: int | None = None, cacheWriteTokens: int | None = None,
                 cacheWrite1hTokens: int | None = None, serviceTier: str | None = None,
                 quantity: int | Decimal | float | None = None, usageDate: datetime | str | None = None,
                 metadata: dict | None = None, environment: str | None = None, idempotencyKey: str | None = None,
                 services: Sequence[dict] | None = None) -> dict:
    """One usage record as the API takes it, checked the way the service checks its shape (so a mistake raises
    here, in the caller, instead of failing a batch later): the three names, exactly one of `model` +
    `modelProvider` (single-service) or `services` (multi-service, tokens inside each entry), whole token
    counts >= 0, quantity >= 0."""
    record: dict[str, Any] = {}
    for name, value in (("customerExternalId", customerExternalId), ("agentCode", agentCode),
                        ("signalName", signalName)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"{name} is required (a non-empty string)")
        record[name] = value
    tokens = {name: value for name, value in (("inputTokens", inputTokens), ("outputTokens", outputTokens),
                                                ("cacheReadTokens", cacheReadTokens),
                                                ("cacheWriteTokens", cacheWriteTokens),
                                                ("cacheWrite1hTokens", cacheWrite1hTokens)) if value is not None}
    for name, value in tokens.items():
        _check_tokens(name, value)
    if serviceTier is not None:
        _check_tier("serviceTier", serviceTier)
        tokens["serviceTier"] = serviceTier
    if services is not None:
        if model is not None or modelProvider is not None or tokens:
            raise ValueError("Send either model and modelProvider (single-service shape) or services "
                             "(multi-service shape, tokens inside each service), not both")
        if not services:
            raise ValueError("services needs at least one entry")
        checked = []
        for position, service in enumerate(services):
            entry = dict(service)
            if not entry.get("model") or not entry.get("modelProvider"):
                raise ValueError(f"services[{position}] needs model and modelProvider")
            for name in TOKEN_FIELDS:
                if entry.get(name) is not None:
                    _check_tokens(f"services[{position}].{name}", entry[name])
            if entry.get("serviceTier") is not None:
                _check_tier(f"services[{position}].serviceTier", entry["serviceTier"])
            if entry.get("quantity") is not None:
                _check_quantity(entry["quantity"])
            checked.append(entry)
        record["services"] = checked
    else:
        if not model or not modelProvider:
            raise ValueError("Send model and modelProvider (single-service shape) or services "
                             "(multi-service shape); neither was given")
        record["model"], record["modelProvider"] = model, modelProvider
        record.update(tokens)
    if quantity is not None:
        _check_quantity(quantity)
        record["quantity"] = quantity
    if usageDate is not None:
        record["usageDate"] = usageDate
    if metadata:
        record["metadata"] = metadata
    if environment is not None:
        if environment not in ENVIRONMENTS:
            raise ValueError(f"environment must be one of {', '.join(ENVIRONMENTS)}")
        record["environment"] = environment
    if idempotencyKey is not None and (not isinstance(idempotencyKey, str) or len(idempotencyKey) > 255):
        raise ValueError("idempotencyKey is a string of at most 255 characters")
    record["idempotencyKey"] = idempotencyKey or new_idempotency_key()
    return record


def _check_tier(name: str, value) -> None:
    if value not in SERVICE_TIERS:
        raise ValueError(f"{name} must be one of {', '.join(SERVICE_TIERS)}")


def _check_tokens(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a whole number >= 0")


def _check_quantity(value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal, float)):
        raise ValueError("quantity must be a number >= 0")
    finite = value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)
    if not finite or value < 0:
        raise ValueError("quantity must be a finite number >= 0")


# --------------------------------------------------------------------------- what an answer means

@dataclass
class _Verdict:
    """What to do with a batch after one attempt."""

    failures: list[RecordFailure]
    stored: int = 0
    resend: list[dict] | None = None  # records to send again
    wait: float | None = None  # seconds before sending again (None: at once)
    retried: bool = False


def _answer_verdict(batch: list[dict], body: dict) -> _Verdict:
    failures = []
    stored = len(body["results"]["success"])
    for entry in body["results"]["failed"]:
        index = entry.get("index")
        record = batch[index] if isinstance(index, int) and 0 <= index < len(batch) else {}
        is_stored = bool(entry.get("stored"))
        stored += is_stored
        failures.append(RecordFailure(record=record, code=entry.get("code") or "failed",
                                      message=entry.get("message"), stored=is_stored,
                                      event_id=entry.get("eventId")))
    return _Verdict(failures=failures, stored=stored)


def _error_verdict(batch: list[dict], error: Exception, *, attempt: int, server_errors: int,
                   policy: RetryPolicy, max_attempts: int | None) -> _Verdict:
    transient = isinstance(error, APIConnectionError) or (
        isinstance(error, APIError) and (error.status == 429 or error.status in (502, 503, 504)))
    if isinstance(error, APIError) and error.status == 500 and server_errors < policy.server_error_retries:
        transient = True
    if transient:
        if max_attempts is not None and attempt + 1 >= max_attempts:
            return _fail_all(batch, RETRIES_EXHAUSTED, str(error), getattr(error, "status", None))
        retry_after = error.retry_after if isinstance(error, APIError) else None
        return _Verdict(failures=[], resend=batch, wait=policy.delay(attempt, retry_after), retried=True)
    if isinstance(error, APIError) and error.status == 400:
        named: dict[int, str] = {}
        for message in error.messages:
            match = RECORD_INDEX.match(str(message))
            if match is None:
                named = {}
                break
            named.setdefault(int(match.group(1)), str(message))
        if named and all(0 <= index < len(batch) for index in named):
            failures = [RecordFailure(record=batch[index], code="invalid_record", message=message, stored=False,
                                      status=400) for index, message in sorted(named.items())]
            rest = [record for index, record in enumerate(batch) if index not in named]
            return _Verdict(failures=failures, resend=rest or None)
    if isinstance(error, APIError):
        code = error.code or (SERVER_ERROR if error.status >= 500 else f"http_{error.status}")
        return _fail_all(batch, code, error.message, error.status)
    return _fail_all(batch, "client_error", repr(error), None)


def _fail_all(batch: list[dict], code: str, message, status: int | None) -> _Verdict:
    return _Verdict(failures=[RecordFailure(record=record, code=code, message=message, stored=False,
                                            status=status) for record in batch])


def _log_failures(failures: list[RecordFailure]) -> None:
    """One WARNING per cause among one batch's failures: how many records, stored or not, and why."""
    causes: dict[tuple, list[RecordFailure]] = {}
    for failure in failures:
        causes.setdefault((failure.stored, failure.status, failure.code), []).append(failure)
    for (stored, status, code), alike in causes.items():
        count = f"{len(alike)} usage record{'s' if len(alike) != 1 else ''}"
        outcome = "stored without a cost" if stored else "not recorded"
        cause = code if status is None else f"HTTP {status}" if code == f"http_{status}" else f"HTTP {status} {code}"
        messages = ["; ".join(map(str, failure.message)) if isinstance(failure.message, list)
                    else str(failure.message) for failure in alike]
        message = messages[0] if len(set(messages)) == 1 else f"the first: {messages[0]}"
        hint = HINTS.get(status, "") if not stored else ""
        logger.warning("agentbilling: %s %s (%s): %s%s", count, outcome, cause, message, hint)


# What to do about a whole batch refused for its key.
HINTS = {401: " (check the API key: AGENTBILLING_API_KEY or api_key=)",
         403: " (the key's role or scope does not allow recording usage)"}


# --------------------------------------------------------------------------- what both flavours share

class _RecorderBase:
    def __init__(self, *, batch_size: int, flush_interval: float, max_buffer: int,
                 on_failure: Callable[[RecordFailure], Any] | None, retry_policy: RetryPolicy | None,
                 max_attempts: int | None, shutdown_timeout: float, senders: int):
        if not 1 <= batch_size <= MAX_RECORDS_PER_REQUEST:
            raise ValueError(f"batch_size must be between 1 and {MAX_RECORDS_PER_REQUEST}")
        if max_buffer < batch_size:
            raise ValueError("max_buffer must hold at least one batch")
        self.batch_size, self.flush_interval, self.max_buffer = batch_size, flush_interval, max_buffer
        self.on_failure = on_failure
        self.retry_policy = retry_policy or RetryPolicy(backoff_base=0.5, backoff_max=30.0)
        self.max_attempts, self.shutdown_timeout, self.senders = max_attempts, shutdown_timeout, max(1, senders)
        self._lock = threading.Lock()
        self._buffer: deque[dict] = deque()
        self._first_at: float | None = None  # when the oldest waiting record arrived
        self._in_flight = 0
        self._flushing = 0
        self._closing = False
        self._closed = False
        self._full_episode = False
        self._episode_drops = 0  # records dropped on arrival since the buffer last filled
        self._recorded = self._stored = self._failed = self._dropped = self._retries = 0

    # -- the caller's side

    def record(self, **fields) -> str:
        """Queue one usage record (the API's field names, see `build_record`); returns its idempotency key.
        Raises ValueError at once for a record the service would refuse, RuntimeError after close()."""
        record = build_record(**fields)
        self.record_prepared(record)
        return record["idempotencyKey"]

    def record_prepared(self, record: dict) -> None:
        """Queue a record already built with `build_record`."""
        dropped = False
        episode_drops = 0
        with self._lock:
            if self._closing:
                raise RuntimeError("this recorder is closed")
            if len(self._buffer) >= self.max_buffer:
                self._dropped += 1
                self._episode_drops += 1
                dropped = True
                warn, self._full_episode = not self._full_episode, True
            else:
                self._buffer.append(record)
                self._recorded += 1
                size = len(self._buffer)
                if size == 1:
                    self._first_at = time.monotonic()
                if size == 1 or size % self.batch_size == 0:
                    self._wake_locked()
                if self._full_episode and size < self.max_buffer // 2:
                    self._full_episode = False
                    episode_drops, self._episode_drops = self._episode_drops, 0
        if episode_drops:
            self._log_episode(episode_drops)
        if dropped:
            if warn:
                logger.warning("agentbilling: usage recorder buffer full (%s records): dropping new records until the "
                               "service takes the backlog", self.max_buffer)
            self._report([RecordFailure(record=record, code=BUFFER_FULL, stored=False,
                                        message=f"dropped: {self.max_buffer} records were already waiting")])

    def _log_episode(self, drops: int) -> None:
        logger.warning("agentbilling: %s usage record%s not recorded (%s): dropped on arrival while %s records "
                       "waited", drops, "s" if drops != 1 else "", BUFFER_FULL, self.max_buffer)

    def _end_full_episode(self) -> None:
        """At close: the count of a full-buffer episode still open."""
        with self._lock:
            drops, self._episode_drops, self._full_episode = self._episode_drops, 0, False
        if drops:
            self._log_episode(drops)

    @property
    def stats(self) -> RecorderStats:
        with self._lock:
            return RecorderStats(recorded=self._recorded, queued=len(self._buffer), in_flight=self._in_flight,
                                 stored=self._stored, failed=self._failed, dropped=self._dropped,
                                 retries=self._retries)

    @property
    def dropped(self) -> int:
        return self._dropped

    # -- the senders' side

    def _wake_locked(self) -> None:
        raise NotImplementedError

    def _due_locked(self, now: float) -> bool:
        return bool(self._buffer) and (
            len(self._buffer) >= self.batch_size or self._flushing > 0 or self._closing
            or (self._first_at is not None and now - self._first_at >= self.flush_interval))

    def _take_locked(self) -> list[dict]:
        take = min(len(self._buffer), self.batch_size)
        popleft = self._buffer.popleft
        batch = [popleft() for _ in range(take)]
        self._in_flight += take
        self._first_at = time.monotonic() if self._buffer else None
        return batch

    def _seconds_until_due_locked(self, now: float) -> float | None:
        if not self._buffer or self._first_at is None:
            return None
        return max(self._first_at + self.flush_interval - now, 0.0)

    def _settle(self, verdict: _Verdict, sent: int) -> None:
        """Count a batch's outcome (`sent` records leave the in-flight count) and report its failures."""
        with self._lock:
            self._stored += verdict.stored
            self._failed += len(verdict.failures)
            self._in_flight -= sent
            if verdict.retried:
                self._retries += 1
        _log_failures(verdict.failures)
        self._report(verdict.failures)

    def _drop_unsent(self, records: Iterable[dict]) -> None:
        failures = [RecordFailure(record=record, code=SHUTDOWN_UNSENT, stored=False,
                                  message="the recorder closed before the service took this record")
                    for record in records]
        with self._lock:
            self._dropped += len(failures)
        _log_failures(failures)
        self._report(failures)

    def _report(self, failures: list[RecordFailure]) -> None:
        if not failures or self.on_failure is None:
            return
        for failure in failures:
            try:
                self.on_failure(failure)
            except Exception:  # a broken callback must not stop delivery
                logger.exception("usage recorder on_failure callback raised")


# --------------------------------------------------------------------------- threads

class Recorder(_RecorderBase):
    """Buffered, batched, retried usage recording from any thread; sends from `senders` daemon threads.

    Arguments: `api_key`, `base_url` (default `$AGENTBILLING_API_KEY`, `$AGENTBILLING_BASE_URL`), or an
    `http_client` (httpx.Client) of your own; `batch_size` (<= 100), `flush_interval` seconds, `max_buffer`
    records, `on_failure(RecordFailure)`, `retry_policy`, `max_attempts` (None: retry transient failures for
    as long as the recorder runs), `shutdown_timeout` seconds for close() and exit, `senders` (batches in
    flight at once; 2-4 keep a busy service's workers fed), `timeout` per request, `sleep` (for tests: called
    instead of waiting between attempts).
    """

    def __init__(self, api_key: str | None = None, *, base_url: str | None = None, batch_size: int = 100,
                 flush_interval: float = 1.0, max_buffer: int = 10_000,
                 on_failure: Callable[[RecordFailure], Any] | None = None, retry_policy: RetryPolicy | None = None,
                 max_attempts: int | None = None, shutdown_timeout: float = 10.0, senders: int = 2,
                 timeout: float = 30.0, http_client: httpx.Client | None = None,
                 sleep: Callable[[float], Any] | None = None):
        super().__init__(batch_size=batch_size, flush_interval=flush_interval, max_buffer=max_buffer,
                         on_failure=on_failure, retry_policy=retry_policy, max_attempts=max_attempts,
                         shutdown_timeout=shutdown_timeout, senders=senders)
        self._transport = SyncTransport(api_key, base_url, timeout=timeout, policy=self.retry_policy,
                                        http_client=http_client)
        self._cond = threading.Condition(self._lock)
        self._abort = threading.Event()
        self._sleep = sleep
        self._threads: list[threading.Thread] = []
        atexit.register(self._at_exit)
        if hasattr(os, "register_at_fork"):
            reference = weakref.ref(self)
            os.register_at_fork(after_in_child=lambda: (recorder := reference()) and recorder._after_fork())

    def record_prepared(self, record: dict) -> None:
        if not self._threads:
            self._start()
        super().record_prepared(record)

    def _start(self) -> None:
        with self._lock:
            if self._threads or self._closing:
                return
            for number in range(self.senders):
                thread = threading.Thread(target=self._run, name=f"agentbilling-sender-{number}", daemon=True)
                self._threads.append(thread)
                thread.start()

    def _after_fork(self) -> None:
        """In a forked child the senders do not exist: start afresh with an empty buffer (the parent sends its
        own records)."""
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._buffer = deque()
        self._threads, self._in_flight, self._first_at = [], 0, None

    def _wake_locked(self) -> None:
        self._cond.notify()

    def _next_batch(self) -> list[dict] | None:
        with self._cond:
            while True:
                if self._abort.is_set():
                    return None
                now = time.monotonic()
                if self._due_locked(now):
                    batch = self._take_locked()
                    if self._due_locked(now):
                        self._cond.notify()  # another full batch waits: wake another sender
                    return batch
                if self._closing and not self._buffer:
                    return None
                self._cond.wait(self._seconds_until_due_locked(now))

    def _run(self) -> None:
        while (batch := self._next_batch()) is not None:
            try:
                self._deliver(batch)
            except Exception:  # never let a sender die with records in hand
                logger.exception("usage recorder sender failed")
                self._settle(_fail_all(batch, "client_error", "unexpected error in the sender", None), len(batch))
            with self._cond:
                if not self._buffer and self._in_flight == 0:
                    self._cond.notify_all()  # flush() waiters
        if self._abort.is_set():
            with self._cond:
                leftover = list(self._buffer)
                self._buffer.clear()
            self._drop_unsent(leftover)

    def _deliver(self, batch: list[dict]) -> None:
        attempt = server_errors = 0
        in_flight = len(batch)
        while batch:
            try:
                response = self._transport.send_once("POST", "/v1/usage/record", body={"records": batch})
                verdict = _answer_verdict(batch, _json.loads(response.content))
            except (APIError, APIConnectionError) as error:
                verdict = _error_verdict(batch, error, attempt=attempt, server_errors=server_errors,
                                         policy=self.retry_policy, max_attempts=self.max_attempts)
                if isinstance(error, APIError) and error.status == 500:
                    server_errors += 1
            resend = verdict.resend or []
            self._settle(verdict, in_flight - len(resend))
            in_flight = len(resend)
            batch = resend
            if batch and verdict.wait is not None:
                attempt += 1
                if not self._pause(verdict.wait):
                    with self._lock:
                        self._in_flight -= len(batch)
                    self._drop_unsent(batch)
                    return

    def _pause(self, seconds: float) -> bool:
        """Wait before the next attempt; False when close() gave up meanwhile."""
        if self._sleep is not None:
            self._sleep(seconds)
            return not self._abort.is_set()
        return not self._abort.wait(seconds)

    def flush(self, timeout: float | None = None) -> bool:
        """Send everything waiting now, without waiting for the interval; block until the buffer is empty and
        nothing is in flight (True), or `timeout` seconds pass (False)."""
        if not self._threads:
            return True
        with self._cond:
            self._flushing += 1
            self._cond.notify_all()
            try:
                return self._cond.wait_for(lambda: not self._buffer and self._in_flight == 0, timeout)
            finally:
                self._flushing -= 1

    def close(self, timeout: float | None = None) -> None:
        """Send what is waiting (up to `timeout`, default `shutdown_timeout` seconds), then stop. Records still
        unsent then are dropped (`shutdown_unsent`). Called at interpreter exit too."""
        timeout = self.shutdown_timeout if timeout is None else timeout
        with self._cond:
            if self._closed:
                return
            self._closing = self._closed = True
            self._cond.notify_all()
        self._end_full_episode()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0))
        if any(thread.is_alive() for thread in self._threads):
            self._abort.set()
            with self._cond:
                self._cond.notify_all()
            for thread in self._threads:
                thread.join(1.0)
        with self._cond:
            leftover = list(self._buffer)
            self._buffer.clear()
        self._drop_unsent(leftover)
        self._transport.close()
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        try:
            self.close()
        except Exception:
            logger.exception("usage recorder failed to close at exit")

    def __enter__(self) -> "Recorder":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --------------------------------------------------------------------------- asyncio

class AsyncRecorder(_RecorderBase):
    """The asyncio flavour: `record(...)` is a plain (non-async) call that returns at once, from the event
    loop's thread or any other; sending runs as tasks on the loop of the first `record()` (up to `senders`
    requests at once). Close it with `await recorder.aclose()` (or `async with AsyncRecorder() as recorder`);
    at interpreter exit, records still waiting are sent synchronously (best effort, `shutdown_timeout`)."""

    def __init__(self, api_key: str | None = None, *, base_url: str | None = None, batch_size: int = 100,
                 flush_interval: float = 1.0, max_buffer: int = 10_000,
                 on_failure: Callable[[RecordFailure], Any] | None = None, retry_policy: RetryPolicy | None = None,
                 max_attempts: int | None = None, shutdown_timeout: float = 10.0, senders: int = 2,
                 timeout: float = 30.0, http_client: httpx.AsyncClient | None = None,
                 sleep: Callable[[float], Any] | None = None):
        super().__init__(batch_size=batch_size, flush_interval=flush_interval, max_buffer=max_buffer,
                         on_failure=on_failure, retry_policy=retry_policy, max_attempts=max_attempts,
                         shutdown_timeout=shutdown_timeout, senders=senders)
        self._api_key, self._base_url, self._timeout = api_key, base_url, timeout
        self._transport = AsyncTransport(api_key, base_url, timeout=timeout, policy=self.retry_policy,
                                         http_client=http_client)
        self._sleep = sleep
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._wakeup: asyncio.Event | None = None
        self._idle: asyncio.Event | None = None
        self._runner: asyncio.Task | None = None
        self._abort = False
        atexit.register(self._at_exit)

    def record_prepared(self, record: dict) -> None:
        if self._runner is None:
            self._start()
        super().record_prepared(record)

    def _start(self) -> None:
        loop = asyncio.get_running_loop()  # the first record() must come from the loop that will send
        self._loop, self._loop_thread = loop, threading.get_ident()
        self._wakeup, self._idle = asyncio.Event(), asyncio.Event()
        self._runner = loop.create_task(self._run(), name="agentbilling-recorder")

    def _wake_locked(self) -> None:
        if self._wakeup is None or self._loop is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._wakeup.set()
        else:
            self._loop.call_soon_threadsafe(self._wakeup.set)

    async def _run(self) -> None:
        limit = asyncio.Semaphore(self.senders)
        sending: set[asyncio.Task] = set()
        while True:
            with self._lock:
                now = time.monotonic()
                batch = self._take_locked() if self._due_locked(now) and not self._abort else None
                finished = (self._closing and not self._buffer) or self._abort
                wait = self._seconds_until_due_locked(now)
            if batch is not None:
                await limit.acquire()
                task = asyncio.get_running_loop().create_task(self._deliver(batch))
                sending.add(task)
                task.add_done_callback(lambda done: (sending.discard(done), limit.release(), self._check_idle()))
                continue
            if finished:
                break
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), wait)
            except asyncio.TimeoutError:
                pass
        if sending:
            await asyncio.gather(*sending, return_exceptions=True)

    def _check_idle(self) -> None:
        with self._lock:
            idle = not self._buffer and self._in_flight == 0
        if idle and self._idle is not None:
            self._idle.set()

    async def _deliver(self, batch: list[dict]) -> None:
        attempt = server_errors = 0
        in_flight = len(batch)
        try:
            while batch:
                try:
                    response = await self._transport.send_once("POST", "/v1/usage/record", body={"records": batch})
                    verdict = _answer_verdict(batch, _json.loads(response.content))
                except (APIError, APIConnectionError) as error:
                    verdict = _error_verdict(batch, error, attempt=attempt, server_errors=server_errors,
                                             policy=self.retry_policy, max_attempts=self.max_attempts)
                    if isinstance(error, APIError) and error.status == 500:
                        server_errors += 1
                resend = verdict.resend or []
                self._settle(verdict, in_flight - len(resend))
                in_flight = len(resend)
                batch = resend
                if batch and verdict.wait is not None:
                    attempt += 1
                    if self._abort:
                        break
                    if self._sleep is not None:
                        outcome = self._sleep(verdict.wait)
                        if asyncio.iscoroutine(outcome):
                            await outcome
                    else:
                        await asyncio.sleep(verdict.wait)
                    if self._abort:
                        break
        except Exception:
            logger.exception("usage recorder sender failed")
            self._settle(_fail_all(batch, "client_error", "unexpected error in the sender", None), in_flight)
            return
        if batch:
            with self._lock:
                self._in_flight -= len(batch)
            self._drop_unsent(batch)

    async def flush(self, timeout: float | None = None) -> bool:
        """Send everything waiting now; True once the buffer is empty and nothing is in flight."""
        if self._runner is None:
            return True
        with self._lock:
            self._flushing += 1
            self._wake_locked()
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                with self._lock:
                    if not self._buffer and self._in_flight == 0:
                        return True
                self._idle.clear()
                self._check_idle()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                try:
                    await asyncio.wait_for(self._idle.wait(), None if remaining is None else min(remaining, 0.5))
                except asyncio.TimeoutError:
                    pass
        finally:
            with self._lock:
                self._flushing -= 1

    async def aclose(self, timeout: float | None = None) -> None:
        """Send what is waiting (up to `timeout`, default `shutdown_timeout`), then stop."""
        timeout = self.shutdown_timeout if timeout is None else timeout
        with self._lock:
            if self._closed:
                return
            self._closing = self._closed = True
            self._wake_locked()
        self._end_full_episode()
        if self._runner is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._runner), timeout)
            except asyncio.TimeoutError:
                self._abort = True
                self._wake_locked()
                try:
                    await asyncio.wait_for(self._runner, 2.0)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    pass
        with self._lock:
            leftover = list(self._buffer)
            self._buffer.clear()
        self._drop_unsent(leftover)
        await self._transport.aclose()
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        """The loop is gone by now: send what still waits over a plain connection, then give up."""
        with self._lock:
            if self._closed:
                return
            self._closing = self._closed = True
            leftover = list(self._buffer)
            self._buffer.clear()
        if not leftover:
            return
        deadline = time.monotonic() + self.shutdown_timeout
        try:
            transport = SyncTransport(self._api_key, self._base_url, timeout=self._timeout, policy=self.retry_policy)
        except Exception:
            self._drop_unsent(leftover)
            return
        try:
            while leftover and time.monotonic() < deadline:
                batch, leftover = leftover[:self.batch_size], leftover[self.batch_size:]
                attempt = server_errors = 0
                while batch and time.monotonic() < deadline:
                    with self._lock:
                        self._in_flight += len(batch)
                    try:
                        response = transport.send_once("POST", "/v1/usage/record", body={"records": batch})
                        verdict = _answer_verdict(batch, _json.loads(response.content))
                    except (APIError, APIConnectionError) as error:
                        verdict = _error_verdict(batch, error, attempt=attempt, server_errors=server_errors,
                                                 policy=self.retry_policy, max_attempts=self.max_attempts)
                        server_errors += isinstance(error, APIError) and error.status == 500
                    resend = verdict.resend or []
                    self._settle(verdict, len(batch))
                    batch = resend
                    if batch and verdict.wait is not None:
                        attempt += 1
                        time.sleep(min(verdict.wait, max(deadline - time.monotonic(), 0)))
                leftover = batch + leftover
        finally:
            transport.close()
        self._drop_unsent(leftover)

    async def __aenter__(self) -> "AsyncRecorder":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
