"""What the integrations share: the default recorder, turning one model call into a record, and reading
fields from provider objects (SDK models or plain dicts)."""
from __future__ import annotations

import logging
import os
import threading
from typing import Any

from agentbilling._http import API_KEY_ENV
from agentbilling.context import BillingContext, ModelCall, current_billing_context
from agentbilling.errors import MissingAPIKeyError

logger = logging.getLogger("agentbilling")

_default_recorder = None
_default_lock = threading.Lock()
_warned: set[str] = set()


def init(api_key: str | None = None, *, base_url: str | None = None, **options):
    """Create the default `Recorder` that instrumented clients use when given none (options as Recorder's).
    Without it, the first instrumented call makes one from $AGENTBILLING_API_KEY and $AGENTBILLING_BASE_URL."""
    global _default_recorder
    from agentbilling.recorder import Recorder

    with _default_lock:
        if _default_recorder is not None:
            _default_recorder.close()
        _default_recorder = Recorder(api_key, base_url=base_url, **options)
        return _default_recorder


def set_default_recorder(recorder) -> None:
    global _default_recorder
    with _default_lock:
        _default_recorder = recorder


def default_recorder():
    global _default_recorder
    with _default_lock:
        if _default_recorder is None:
            from agentbilling.recorder import Recorder

            _default_recorder = Recorder()
        return _default_recorder


def recorder_for(context: BillingContext | None, recorder=None):
    return (context.recorder if context and context.recorder else None) or recorder or default_recorder()


NO_KEY = (f"agentbilling: no API key (set {API_KEY_ENV}, call agentbilling.init(api_key=...), or give the "
          f"integration a Recorder): instrumented model calls are not recorded until there is one")


def check_recording(recorder=None) -> None:
    """At instrumentation (the application's start-up): when calls would go to the default recorder and it cannot
    be made for want of a key, say so once, as an error, instead of once per model call later."""
    if recorder is None and _default_recorder is None and not os.environ.get(API_KEY_ENV):
        _error_once("no-key", NO_KEY)


def field(source: Any, name: str, default: Any = None) -> Any:
    """`source.name` or `source[name]`: SDK objects and dicts alike."""
    if source is None:
        return default
    if isinstance(source, dict):
        value = source.get(name, default)
    else:
        value = getattr(source, name, default)
    return default if value is None else value


def whole(value: Any) -> int:
    try:
        return max(int(value or 0), 0)
    except (TypeError, ValueError):
        return 0


# The tier names providers answer with -> the service's `serviceTier`. OpenAI answers `default` (or `scale`) for
# standard processing, `flex` and `priority`; Anthropic `standard`, `priority` and `batch` (Message Batches).
SERVICE_TIER_NAMES = {"default": "standard", "auto": "standard", "scale": "standard", "standard": "standard",
                      "flex": "flex", "priority": "priority", "batch": "batch"}


def service_tier(value: Any) -> str:
    """The service tier a provider's answer names, as the service prices it (unknown names: standard)."""
    return SERVICE_TIER_NAMES.get(str(value).strip().lower(), "standard") if value else "standard"


def _warn_once(key: str, message: str, *args) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(message, *args)


def _error_once(key: str, message: str, *args) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.error(message, *args)


def emit(call: ModelCall | None, *, context: BillingContext | None = None, recorder=None,
         signal_name: str | None = None) -> None:
    """Record one model call under the caller's context: into its open outcome, or as its own cost event.
    Never raises into the caller's code (a call without a context is skipped with one warning)."""
    if call is None:
        return
    context = context if context is not None else current_billing_context()
    try:
        if context is not None and context.outcome is not None:
            context.outcome.add(call, recorder)
            return
        signal = signal_name or (context.signalName if context else None)
        customer = context.customerExternalId if context else None
        agent = context.agentCode if context else None
        if not (customer and agent and signal):
            _warn_once("no-context", "agentbilling: a %s call ran outside billing_context(customerExternalId=, "
                       "agentCode=, signalName=): not recorded", call.modelProvider)
            return
        recorder_for(context, recorder).record(
            customerExternalId=customer, agentCode=agent, signalName=signal, model=call.model,
            modelProvider=call.modelProvider, inputTokens=call.inputTokens, outputTokens=call.outputTokens,
            cacheReadTokens=call.cacheReadTokens, cacheWriteTokens=call.cacheWriteTokens,
            cacheWrite1hTokens=call.cacheWrite1hTokens or None,
            serviceTier=call.serviceTier if call.serviceTier != "standard" else None,
            metadata=dict(context.metadata) or None, environment=context.environment)
    except MissingAPIKeyError:
        _error_once("no-key", NO_KEY)  # said once (at instrumentation, or here); a key set later is picked up
    except Exception:
        logger.exception("agentbilling: could not record a %s call", call.modelProvider)


def stream_abandoned(call: ModelCall | None, *, provider: str, model: str | None, chunks: int | None,
                     complete_usage: bool,
                     context: BillingContext | None, recorder=None, signal_name: str | None = None) -> None:
    """A stream its caller closed (or dropped) before its end: record what its usage says so far, if anything,
    and log what was not recorded (nothing when the usage had come whole: a caller may stop at the last event)."""
    read = f" after {chunks} chunk{'s' if chunks != 1 else ''}" if chunks is not None else ""
    what = f"a stream from {provider} ({model or 'model unknown'}) closed{read}, before its end"
    if call is None:
        logger.warning("agentbilling: %s: not recorded (its usage comes at the end of the stream; read the stream "
                       "to its end, or close it only after its last chunk)", what)
        return
    emit(call, context=context, recorder=recorder, signal_name=signal_name)
    if not complete_usage:
        logger.warning("agentbilling: %s: recorded with the usage known then (%d input, %d output tokens); the "
                       "output tokens generated after it are not recorded", what, call.inputTokens, call.outputTokens)


def _finish_dropped(finish, chunks: int) -> None:
    try:
        finish(False, chunks)
    except Exception:
        logger.exception("agentbilling: could not record a streamed call")


class StreamProxy:
    """Wraps a provider's stream: passes every chunk through, feeds it to `observe(chunk)`, and calls
    `finish(complete, chunks)` once: `complete=True` when the stream ends, `complete=False` when its caller closes
    it (`close()`, the end of a `with` block) or drops it before its end; `chunks` is how many were read."""

    def __init__(self, stream, observe, finish):
        self._stream, self._observe, self._finish = stream, observe, finish
        self._done = False
        self._iterator = None
        self.chunks = 0

    def _end(self, complete: bool):
        if not self._done:
            self._done = True
            try:
                self._finish(complete, self.chunks)
            except Exception:
                logger.exception("agentbilling: could not record a streamed call")

    def _see(self, chunk):
        self.chunks += 1
        try:
            self._observe(chunk)
        except Exception:
            logger.exception("agentbilling: could not read a stream chunk's usage")

    def __iter__(self):
        return self

    def __next__(self):
        if self._iterator is None:
            self._iterator = iter(self._stream)
        try:
            chunk = next(self._iterator)
        except StopIteration:
            self._end(True)
            raise
        self._see(chunk)
        return chunk

    def __aiter__(self):
        return self

    async def __anext__(self):
        if self._iterator is None:
            self._iterator = self._stream.__aiter__()
        try:
            chunk = await self._iterator.__anext__()
        except StopAsyncIteration:
            self._end(True)
            raise
        self._see(chunk)
        return chunk

    def __enter__(self):
        if hasattr(self._stream, "__enter__"):
            self._stream.__enter__()
        return self

    def __exit__(self, *exc):
        try:
            if hasattr(self._stream, "__exit__"):
                return self._stream.__exit__(*exc)
        finally:
            self._end(False)

    async def __aenter__(self):
        if hasattr(self._stream, "__aenter__"):
            await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc):
        try:
            if hasattr(self._stream, "__aexit__"):
                return await self._stream.__aexit__(*exc)
        finally:
            self._end(False)

    def close(self):
        try:
            if hasattr(self._stream, "close"):
                return self._stream.close()
        finally:
            self._end(False)

    def __del__(self):
        # Dropped unread to its end (a `break` out of the loop, then the last reference goes). The garbage
        # collector may run this inside any code, the recorder's own locked sections included: record from a
        # thread of its own rather than here.
        if self.__dict__.get("_done", True):
            return
        self._done = True
        try:
            threading.Thread(target=_finish_dropped, args=(self._finish, self.chunks), name="agentbilling-stream-end",
                             daemon=True).start()
        except RuntimeError:  # interpreter shutdown: no new threads
            pass

    def __getattr__(self, name):
        return getattr(self._stream, name)
