"""LiteLLM: a callback recording one event per successful model call, whatever the provider.

    import litellm
    from agentbilling.integrations.litellm import BillingCallback

    litellm.callbacks = [BillingCallback()]

Works for `litellm.completion` / `acompletion` (streamed or not), embeddings and the proxy's callback hook.
The billing context is read when the call starts (`log_pre_api_call`, in the caller's task or thread) and
kept with the call, because LiteLLM may run success callbacks in a thread pool where the caller's
`contextvars` are not set. A call is recorded once even where LiteLLM calls both the sync and the async hook.

Tokens: LiteLLM reports OpenAI-shaped usage whose `prompt_tokens` include cache reads and cache writes
(for Anthropic it adds `cache_read_input_tokens` and `cache_creation_input_tokens` to `input_tokens`), so
`cacheReadTokens = prompt_tokens_details.cached_tokens`, `cacheWriteTokens = cache_creation_input_tokens`
(or `prompt_tokens_details.cache_creation_tokens`), `inputTokens = prompt_tokens - cacheRead - cacheWrite`,
`outputTokens = completion_tokens`; of the cache writes, the 1-hour ones
(`prompt_tokens_details.cache_creation_token_details.ephemeral_1h_input_tokens`) are `cacheWrite1hTokens`.
`serviceTier` is the answer's `service_tier` (or the call's `service_tier` parameter). `modelProvider` is LiteLLM's `custom_llm_provider` (`openai`,
`anthropic`, `bedrock`, `vertex_ai`, ...; the service's catalog uses the same names), `model` the answer's
model (or the requested one, without its `provider/` prefix).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from agentbilling.context import BillingContext, ModelCall, current_billing_context
from agentbilling.instrumentation import check_recording, emit, field, service_tier, whole

_CONTEXT_KEY = "agentbilling_context"


def model_call(kwargs: dict, response: Any) -> ModelCall | None:
    usage = field(response, "usage")
    if usage is None:
        return None
    litellm_params = kwargs.get("litellm_params") or {}
    provider = (kwargs.get("custom_llm_provider") or litellm_params.get("custom_llm_provider")
                or field(kwargs.get("standard_logging_object"), "custom_llm_provider"))
    model = field(response, "model") or kwargs.get("model")
    if not provider or not model:
        return None
    if isinstance(model, str) and model.startswith(provider + "/"):
        model = model[len(provider) + 1:]
    details = field(usage, "prompt_tokens_details")
    prompt = whole(field(usage, "prompt_tokens"))
    cache_read = whole(field(details, "cached_tokens") or field(usage, "cache_read_input_tokens"))
    cache_write = whole(field(usage, "cache_creation_input_tokens") or field(details, "cache_creation_tokens")
                        or field(details, "cache_write_tokens"))
    cache_read = min(cache_read, prompt)
    cache_write = min(cache_write, prompt - cache_read)
    one_hour = min(whole(field(field(details, "cache_creation_token_details"), "ephemeral_1h_input_tokens")
                         or field(field(usage, "cache_creation"), "ephemeral_1h_input_tokens")), cache_write)
    tier = field(response, "service_tier") or (kwargs.get("optional_params") or {}).get("service_tier")
    return ModelCall(model=model, modelProvider=provider, inputTokens=prompt - cache_read - cache_write,
                     outputTokens=whole(field(usage, "completion_tokens")), cacheReadTokens=cache_read,
                     cacheWriteTokens=cache_write - one_hour, cacheWrite1hTokens=one_hour,
                     serviceTier=service_tier(tier))


class BillingCallback(CustomLogger):
    """`litellm.callbacks = [BillingCallback(recorder)]`: records each successful call with the current
    `billing_context` into `recorder` (default: the package's default recorder); `signal_name` overrides the
    context's signal."""

    def __init__(self, recorder=None, *, signal_name: str | None = None, **kwargs):
        super().__init__(**kwargs)
        check_recording(recorder)
        self.recorder, self.signal_name = recorder, signal_name
        self._recorded: OrderedDict[str, None] = OrderedDict()  # call ids already recorded (bounded)
        self._lock = threading.Lock()

    def log_pre_api_call(self, model, messages, kwargs):
        context = current_billing_context()
        if context is not None and isinstance(kwargs, dict):
            kwargs[_CONTEXT_KEY] = context

    def log_success_event(self, kwargs, response_obj, start_time, end_time):
        self._record(kwargs, response_obj)

    async def async_log_success_event(self, kwargs, response_obj, start_time, end_time):
        self._record(kwargs, response_obj)

    def _first_time(self, call_id: str | None) -> bool:
        if not call_id:
            return True
        with self._lock:
            if call_id in self._recorded:
                return False
            self._recorded[call_id] = None
            if len(self._recorded) > 10_000:
                self._recorded.popitem(last=False)
            return True

    def _record(self, kwargs: dict, response_obj: Any) -> None:
        call = model_call(kwargs, response_obj)
        if call is None or not self._first_time(kwargs.get("litellm_call_id")):
            return
        context: BillingContext | None = kwargs.get(_CONTEXT_KEY) or current_billing_context()
        emit(call, context=context, recorder=self.recorder, signal_name=self.signal_name)
