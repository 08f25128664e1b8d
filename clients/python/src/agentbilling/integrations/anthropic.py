"""Anthropic: record one event per model call made through an `anthropic.Anthropic` / `AsyncAnthropic`
client.

    from anthropic import Anthropic
    from agentbilling.integrations.anthropic import instrument_anthropic

    client = instrument_anthropic(Anthropic())

Instrumented on the client instance given: `messages.create`, streamed (`stream=True`) or not, and the
`messages.stream(...)` helper (recorded when its `with` block ends). A stream its caller closes or drops
before the message ends is recorded with the usage known then (`message_start`'s input and cache counts, the
output counted so far), and a warning says that the rest of its output is not. `with_raw_response` calls are not
instrumented.

Tokens: Anthropic's `input_tokens` already excludes the cache, which it reports apart, so
`inputTokens = input_tokens`, `cacheReadTokens = cache_read_input_tokens`, `outputTokens = output_tokens`; cache
writes of the two lifetimes, which Anthropic bills at different rates, go apart: `cacheWrite1hTokens =
cache_creation.ephemeral_1h_input_tokens` and `cacheWriteTokens` the rest of `cache_creation_input_tokens` (the
5-minute writes). `serviceTier` is the answer's `usage.service_tier` (`standard`, `priority`, or `batch` for a
Message Batches result: record those with `model_call(result.message, provider=...)` and `emit`). A stream's usage comes from
`message_start` (input and cache counts) and the last `message_delta` (cumulative output, and any input or
cache counts it repeats). `modelProvider` is `anthropic` (`bedrock` for `AnthropicBedrock`, `vertex_ai` for
`AnthropicVertex`; override with `model_provider=`).
"""
from __future__ import annotations

import functools
from typing import Any, TypeVar

from agentbilling.context import ModelCall, current_billing_context
from agentbilling.instrumentation import (StreamProxy, check_recording, emit, field, service_tier, stream_abandoned,
                                          whole)
from agentbilling.integrations._wrapping import wrap_call

T = TypeVar("T")
COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")


def provider_of(client) -> str:
    name = type(client).__name__.lower()
    if "bedrock" in name:
        return "bedrock"
    if "vertex" in name:
        return "vertex_ai"
    return "anthropic"


def call_from_usage(usage: Any, *, model: str, provider: str) -> ModelCall:
    writes = whole(field(usage, "cache_creation_input_tokens"))
    one_hour = min(whole(field(field(usage, "cache_creation"), "ephemeral_1h_input_tokens")), writes)
    return ModelCall(model=model, modelProvider=provider, inputTokens=whole(field(usage, "input_tokens")),
                     outputTokens=whole(field(usage, "output_tokens")),
                     cacheReadTokens=whole(field(usage, "cache_read_input_tokens")),
                     cacheWriteTokens=writes - one_hour, cacheWrite1hTokens=one_hour,
                     serviceTier=service_tier(field(usage, "service_tier")))


def model_call(message: Any, *, provider: str, requested_model: str | None = None) -> ModelCall | None:
    usage = field(message, "usage")
    model = field(message, "model") or requested_model
    if usage is None or not model:
        return None
    return call_from_usage(usage, model=model, provider=provider)


class _StreamUsage:
    """Adds up a message stream's events into one usage."""

    def __init__(self, requested_model: str | None):
        self.model = requested_model
        self.counts: dict[str, Any] = {}
        self.started = False
        self.finished = False  # the last message_delta (with the stop reason) came: the usage is whole

    def observe(self, event: Any) -> None:
        kind = field(event, "type")
        if kind == "message_start":
            message = field(event, "message")
            self.model = field(message, "model") or self.model
            self._take(field(message, "usage"))
            self.started = True
        elif kind == "message_delta":
            self._take(field(event, "usage"))
            self.finished = self.finished or field(field(event, "delta"), "stop_reason") is not None

    def _take(self, usage: Any) -> None:
        for name in COUNTS:  # counts are cumulative: the latest non-null value is the total
            value = field(usage, name)
            if value is not None:
                self.counts[name] = whole(value)
        for name in ("cache_creation", "service_tier"):  # the writes' lifetimes, the tier: latest given
            value = field(usage, name)
            if value is not None:
                self.counts[name] = value

    def call(self, provider: str) -> ModelCall | None:
        if not self.started or not self.model:
            return None
        return call_from_usage(self.counts, model=self.model, provider=provider)


def _wrap_create(create, *, provider: str, recorder, signal_name: str | None):
    def handle(result, context, requested_model, streamed):
        if streamed:
            usage = _StreamUsage(requested_model)

            def finish(complete, chunks):
                if complete:
                    emit(usage.call(provider), context=context, recorder=recorder, signal_name=signal_name)
                else:
                    stream_abandoned(usage.call(provider), provider=provider, model=usage.model, chunks=chunks,
                                     complete_usage=usage.finished, context=context, recorder=recorder,
                                     signal_name=signal_name)

            return StreamProxy(result, usage.observe, finish)
        emit(model_call(result, provider=provider, requested_model=requested_model), context=context,
             recorder=recorder, signal_name=signal_name)
        return result

    return wrap_call(create, handle)


class _StreamManagerProxy:
    """`messages.stream(...)` returns a manager; record the final snapshot's usage when its block ends."""

    def __init__(self, manager, record):
        self._manager, self._record, self._stream = manager, record, None

    def __enter__(self):
        self._stream = self._manager.__enter__()
        return self._stream

    def __exit__(self, *exc):
        try:
            return self._manager.__exit__(*exc)
        finally:
            self._record(self._stream)

    async def __aenter__(self):
        self._stream = await self._manager.__aenter__()
        return self._stream

    async def __aexit__(self, *exc):
        try:
            return await self._manager.__aexit__(*exc)
        finally:
            self._record(self._stream)

    def __getattr__(self, name):
        return getattr(self._manager, name)


def _wrap_stream(stream_method, *, provider: str, recorder, signal_name: str | None):
    @functools.wraps(stream_method)
    def wrapper(*args, **kwargs):
        context = current_billing_context()

        def record(stream):
            try:
                snapshot = stream.current_message_snapshot if stream is not None else None
            except Exception:  # nothing read yet: the helper has no snapshot
                snapshot = None
            call = model_call(snapshot, provider=provider, requested_model=kwargs.get("model"))
            if field(snapshot, "stop_reason") is not None:
                emit(call, context=context, recorder=recorder, signal_name=signal_name)
            else:  # the block ended before the message did
                stream_abandoned(call, provider=provider, model=field(snapshot, "model") or kwargs.get("model"),
                                 chunks=None, complete_usage=False, context=context, recorder=recorder,
                                 signal_name=signal_name)

        return _StreamManagerProxy(stream_method(*args, **kwargs), record)
    wrapper._agentbilling_original = stream_method
    return wrapper


def instrument_anthropic(client: T, recorder=None, *, signal_name: str | None = None,
                         model_provider: str | None = None) -> T:
    """Instrument this client (returned). Calls are recorded with the current `billing_context` into
    `recorder` (default: the package's default recorder); `signal_name` overrides the context's signal."""
    check_recording(recorder)
    provider = model_provider or provider_of(client)
    messages = getattr(client, "messages", None)
    if messages is None:
        return client
    create = getattr(messages, "create", None)
    if create is not None and not hasattr(create, "_agentbilling_original"):
        messages.create = _wrap_create(create, provider=provider, recorder=recorder, signal_name=signal_name)
    stream = getattr(messages, "stream", None)
    if stream is not None and not hasattr(stream, "_agentbilling_original"):
        messages.stream = _wrap_stream(stream, provider=provider, recorder=recorder, signal_name=signal_name)
    return client
