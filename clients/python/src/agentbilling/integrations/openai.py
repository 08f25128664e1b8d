"""OpenAI: record one event per model call made through an `openai.OpenAI` / `AsyncOpenAI` client.

    from openai import OpenAI
    from agentbilling.integrations.openai import instrument_openai

    client = instrument_openai(OpenAI())

Instrumented on the client instance given (nothing global): `chat.completions.create`, `responses.create`,
`completions.create`, `embeddings.create`, streamed or not. A stream is recorded when it ends; a chat
completion stream reports usage only when asked (`stream_options={"include_usage": True}`): without it
there is nothing to price and the call is not recorded (one warning says so). The usage comes in a stream's
last chunk: a stream its caller closes or drops before then is not recorded, and a warning says so.
`with_raw_response` calls are not instrumented.

Tokens (OpenAI counts cached prompt tokens inside `prompt_tokens` / `input_tokens`):
`inputTokens = prompt_tokens - prompt_tokens_details.cached_tokens`, `cacheReadTokens = cached_tokens`,
`outputTokens = completion_tokens` (`output_tokens` for the Responses API), `cacheWriteTokens = 0` (OpenAI
reports no cache writes). `serviceTier` is the tier the answer says served it (`service_tier`: `default` is
standard, `flex`, `priority`); a call made through the Batch API is recorded from its output file's bodies with
`model_call(body, provider=..., batch=True)` and `emit`. `model` is the model the answer names (a dated snapshot such as
`gpt-4o-2024-08-06`, which the service's catalog resolves), `modelProvider` is `openai` (`azure` for an
`AzureOpenAI` client; override with `model_provider=`).
"""
from __future__ import annotations

from typing import Any, TypeVar

from agentbilling.context import ModelCall
from agentbilling.instrumentation import (StreamProxy, _warn_once, check_recording, emit, field, service_tier,
                                          stream_abandoned, whole)
from agentbilling.integrations._wrapping import wrap_call

T = TypeVar("T")
RESOURCES = (("chat", "completions"), ("responses",), ("completions",), ("embeddings",))


def provider_of(client) -> str:
    return "azure" if "azure" in type(client).__name__.lower() else "openai"


def model_call(response: Any, *, provider: str, requested_model: str | None = None,
               batch: bool = False) -> ModelCall | None:
    """The usage of one OpenAI answer (chat completion, Responses API response, completion, embedding); `batch`:
    a body of a Batch API output file (billed at the batch rates)."""
    usage = field(response, "usage")
    if usage is None:
        return None
    model = field(response, "model") or requested_model
    if not model:
        return None
    if field(usage, "input_tokens") is not None and field(usage, "prompt_tokens") is None:  # Responses API
        prompt, output = whole(field(usage, "input_tokens")), whole(field(usage, "output_tokens"))
        cached = whole(field(field(usage, "input_tokens_details"), "cached_tokens"))
    else:
        prompt, output = whole(field(usage, "prompt_tokens")), whole(field(usage, "completion_tokens"))
        cached = whole(field(field(usage, "prompt_tokens_details"), "cached_tokens"))
    cached = min(cached, prompt)
    return ModelCall(model=model, modelProvider=provider, inputTokens=prompt - cached, outputTokens=output,
                     cacheReadTokens=cached, cacheWriteTokens=0,
                     serviceTier="batch" if batch else service_tier(field(response, "service_tier")))


def _stream_usage_source(chunk: Any) -> Any:
    """The object carrying usage in a stream chunk: the chunk itself (chat, completions) or the response of
    a Responses API `response.completed` event."""
    if field(chunk, "usage") is not None:
        return chunk
    if field(chunk, "type") == "response.completed":
        return field(chunk, "response")
    return None


def _wrap(create, *, provider: str, recorder, signal_name: str | None):
    def observe_stream(stream, context, requested_model):
        seen: list[Any] = []

        def observe(chunk):
            source = _stream_usage_source(chunk)
            if source is not None:
                seen[:] = [source]

        def finish(complete, chunks):
            call = model_call(seen[0], provider=provider, requested_model=requested_model) if seen else None
            if not complete:  # OpenAI sends the usage last: whole once it came, else nothing to record
                stream_abandoned(call, provider=provider, model=requested_model, chunks=chunks, complete_usage=True,
                                 context=context, recorder=recorder, signal_name=signal_name)
            elif call is None:
                _warn_once("openai-stream-usage", "agentbilling: an OpenAI stream ended without usage (pass "
                           "stream_options={'include_usage': True}); not recorded")
            else:
                emit(call, context=context, recorder=recorder, signal_name=signal_name)

        return StreamProxy(stream, observe, finish)

    def handle(result, context, requested_model, streamed):
        if streamed:
            return observe_stream(result, context, requested_model)
        emit(model_call(result, provider=provider, requested_model=requested_model), context=context,
             recorder=recorder, signal_name=signal_name)
        return result

    return wrap_call(create, handle)


def instrument_openai(client: T, recorder=None, *, signal_name: str | None = None,
                      model_provider: str | None = None) -> T:
    """Instrument this client (returned, for `client = instrument_openai(OpenAI())`). Calls are recorded
    with the current `billing_context` into `recorder` (default: the package's default recorder);
    `signal_name` overrides the context's signal for this client's calls. Instrumenting twice is harmless."""
    check_recording(recorder)
    provider = model_provider or provider_of(client)
    for path in RESOURCES:
        resource = client
        for name in path:
            resource = getattr(resource, name, None)
            if resource is None:
                break
        create = getattr(resource, "create", None) if resource is not None else None
        if create is None or hasattr(create, "_agentbilling_original"):
            continue
        resource.create = _wrap(create, provider=provider, recorder=recorder, signal_name=signal_name)
    return client
