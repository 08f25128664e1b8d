"""Auto-instrumentation against the live service: the official OpenAI and Anthropic SDKs pointed at a local
fake endpoint that answers recorded response bodies, and LiteLLM driven by its own offline `mock_response`.
Each model call becomes one event whose tokens the service prices (input net of cache reads)."""
import asyncio
import time
from decimal import Decimal

import anthropic
import openai
import pytest

from agentbilling import Recorder, billing_context, billing_outcome
from agentbilling.integrations.anthropic import instrument_anthropic
from agentbilling.integrations.openai import instrument_openai
from customers.models import UsageEvent
from tests.clients import recorded
from tests.clients.conftest import llm_cost
from tests.clients.fake_http import FakeServer, json_answer, sse_answer

pytestmark = [pytest.mark.usefixtures("database"),
              pytest.mark.filterwarnings("ignore::UserWarning:pydantic")]  # LiteLLM's TypedDicts, at import

CONTEXT = dict(customerExternalId="cust-42", agentCode="support-bot", signalName="llm_calls")


def provider_answers(exchange):
    body = exchange.json()
    if exchange.path.endswith("/chat/completions"):
        if body.get("stream"):
            return sse_answer([(None, chunk) for chunk in recorded.OPENAI_CHAT_STREAM] + [(None, "[DONE]")])
        return json_answer(recorded.OPENAI_CHAT_COMPLETION)
    if exchange.path.endswith("/responses"):
        return json_answer(recorded.OPENAI_RESPONSE)
    if exchange.path.endswith("/messages"):
        if body.get("stream"):
            return sse_answer(recorded.ANTHROPIC_STREAM)
        return json_answer(recorded.ANTHROPIC_MESSAGE)
    return json_answer({"error": {"message": "not recorded"}}, 404)


@pytest.fixture
def provider():
    with FakeServer(provider_answers) as fake:
        yield fake


@pytest.fixture
def recorder(service):
    failures = []
    recorder = Recorder(service.key, base_url=service.url, senders=1, on_failure=failures.append)
    yield recorder
    recorder.close()
    assert failures == []


def stored(service, recorder, **filters):
    assert recorder.flush(timeout=30)
    return list(UsageEvent.objects.filter(book=service.book, **filters).order_by("created_at", "id"))


def tokens(event):
    return event.input_tokens, event.output_tokens, event.cache_read_tokens, event.cache_write_tokens


def test_an_openai_chat_completion_is_one_event_with_input_net_of_cached_tokens(service, provider, recorder):
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"), recorder)
    with billing_context(**CONTEXT, metadata={"ticket": "T-981"}):
        answer = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    assert answer.choices[0].message.content == "Your ticket is resolved."  # the caller's answer, untouched

    [event] = stored(service, recorder)
    assert (event.model, event.model_provider, event.customer_external_id, event.agent_code,
            event.signal_name) == ("gpt-4o-mini-2024-07-18", "openai", "cust-42", "support-bot", "llm_calls")
    assert tokens(event) == (1200 - 1024, 300, 1024, 0)
    assert event.metadata == {"ticket": "T-981"}
    # the dated snapshot resolves to the catalog's gpt-4o-mini, cached tokens at the cache-read rate
    assert event.usage_cost == llm_cost("openai", "gpt-4o-mini", input=176, output=300, cache_read=1024)


def test_openai_streams_responses_and_the_async_client_are_recorded_too(service, provider, recorder):
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"), recorder)
    with billing_context(**CONTEXT):
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}],
                                                stream=True, stream_options={"include_usage": True})
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        client.responses.create(model="gpt-4o-mini", input="Refund order 77")

    async def async_call():
        async_client = instrument_openai(openai.AsyncOpenAI(api_key="sk-test", base_url=provider.url + "/v1"),
                                         recorder)
        with billing_context(**{**CONTEXT, "signalName": "async_llm_calls"}):
            await async_client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}])

    asyncio.run(async_call())
    assert text == "Done."
    events = stored(service, recorder)
    assert sorted((tokens(event), event.signal_name) for event in events) == sorted([
        ((80, 5, 0, 0), "llm_calls"),  # the stream, recorded when it ended
        ((176, 300, 1024, 0), "async_llm_calls"),
        ((2000 - 1536, 120, 1536, 0), "llm_calls"),  # Responses API: input_tokens_details.cached_tokens
    ])


def test_an_anthropic_message_records_cache_reads_and_writes_apart_from_input(service, provider, recorder):
    client = instrument_anthropic(anthropic.Anthropic(api_key="sk-ant-test", base_url=provider.url), recorder)
    with billing_context(**CONTEXT):
        message = client.messages.create(model="claude-sonnet-4-5", max_tokens=256,
                                         messages=[{"role": "user", "content": "Where is renewal?"}])
        streamed = client.messages.create(model="claude-sonnet-4-5", max_tokens=256, stream=True,
                                          messages=[{"role": "user", "content": "And now?"}])
        deltas = [event.type for event in streamed]
        with client.messages.stream(model="claude-sonnet-4-5", max_tokens=256,
                                    messages=[{"role": "user", "content": "Once more"}]) as helper:
            helper_text = helper.get_final_text()

    assert message.content[0].text.startswith("The contract's") and deltas[-1] == "message_stop"
    assert helper_text == "Clause 9."
    events = stored(service, recorder)
    assert {(event.model, event.model_provider) for event in events} == {("claude-sonnet-4-5", "anthropic")}
    first, from_stream, from_helper = sorted(events, key=lambda event: -event.input_tokens - event.output_tokens)
    assert tokens(first) == (50, 100, 1000, 2000)  # Anthropic's input_tokens already exclude the cache
    assert first.usage_cost == llm_cost("anthropic", "claude-sonnet-4-5", input=50, output=100, cache_read=1000,
                                        cache_write=2000)
    assert tokens(from_stream) == tokens(from_helper) == (25, 42, 3000, 0)  # message_start + last message_delta


def test_the_litellm_callback_records_each_mocked_call_once_sync_and_async(service, recorder):
    litellm = pytest.importorskip("litellm")  # installed by requirements.txt; skipped only where it is missing
    from litellm import ModelResponse

    from agentbilling.integrations.litellm import BillingCallback

    anthropic_shaped = ModelResponse(
        model="claude-sonnet-4-5", choices=[{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": "ok"}}],
        usage={"prompt_tokens": 3050, "completion_tokens": 100, "total_tokens": 3150,
               "cache_creation_input_tokens": 2000, "cache_read_input_tokens": 1000})
    previous, litellm.callbacks = litellm.callbacks, [BillingCallback(recorder)]
    try:
        with billing_context(**CONTEXT):
            litellm.completion(model="anthropic/claude-sonnet-4-5", messages=[{"role": "user", "content": "x"}],
                               mock_response=anthropic_shaped)

        async def async_call():
            with billing_context(**{**CONTEXT, "customerExternalId": "cust-7"}):
                await litellm.acompletion(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}],
                                          mock_response="Hello from the mock")
            # LiteLLM runs success callbacks as tasks of this loop or in its own threads
            deadline = time.monotonic() + 20
            while recorder.stats.recorded < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.05)

        asyncio.run(async_call())
    finally:
        litellm.callbacks = previous

    events = stored(service, recorder)
    assert len(events) == 2  # one event per call, none twice
    by_customer = {event.customer_external_id: event for event in events}
    claude = by_customer["cust-42"]
    # LiteLLM folds cache reads and writes into prompt_tokens: 3050 - 1000 - 2000 = 50 not from the cache
    assert (claude.model, claude.model_provider, tokens(claude)) == ("claude-sonnet-4-5", "anthropic",
                                                                     (50, 100, 1000, 2000))
    mini = by_customer["cust-7"]  # mock_response text: LiteLLM counted the tokens itself
    assert (mini.model_provider, mini.input_tokens > 0, mini.output_tokens > 0) == ("openai", True, True)
    assert mini.usage_cost is not None and claude.usage_cost is not None


def test_a_business_outcome_folds_its_model_calls_into_one_event_of_its_signal(service, provider, recorder):
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"), recorder)
    with billing_context(customerExternalId="cust-42", agentCode="support-bot"):
        with billing_outcome("tickets_resolved"):
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "1"}])
            client.responses.create(model="gpt-4o-mini", input="2")
        with pytest.raises(RuntimeError), billing_outcome("tickets_resolved"):
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "3"}])
            raise RuntimeError("the agent gave up")

    resolved, gave_up = sorted(stored(service, recorder), key=lambda event: -event.quantity)
    assert (resolved.signal_name, resolved.quantity, len(resolved.services)) == ("tickets_resolved", 1, 2)
    assert [service["inputTokens"] for service in resolved.services] == [176, 464]
    assert resolved.usage_cost == (llm_cost("openai", "gpt-4o-mini", input=176, output=300, cache_read=1024)
                                   + llm_cost("openai", "gpt-4o-mini", input=464, output=120, cache_read=1536))
    assert gave_up.quantity == 0 and gave_up.usage_cost > 0  # cost kept, nothing billed


def test_a_call_outside_any_billing_context_is_not_recorded(service, provider, recorder):
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"), recorder)
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}])
    assert stored(service, recorder) == [] and recorder.stats.recorded == 0


def tier_answers(exchange):
    body = exchange.json()
    if exchange.path.endswith("/chat/completions"):
        return json_answer(recorded.OPENAI_CHAT_FLEX)
    if exchange.path.endswith("/messages"):
        return json_answer(recorded.ANTHROPIC_MESSAGE_CACHE_LIFETIMES)
    return json_answer({"error": {"message": f"not recorded: {body}"}}, 404)


def test_cache_write_lifetimes_and_service_tiers_come_from_the_providers_answers(service, recorder):
    from agentbilling.instrumentation import emit
    from agentbilling.integrations import anthropic as anthropic_integration
    from agentbilling.integrations import openai as openai_integration

    with FakeServer(tier_answers) as fake:
        claude = instrument_anthropic(anthropic.Anthropic(api_key="sk-ant-test", base_url=fake.url), recorder)
        gpt = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=fake.url + "/v1"), recorder)
        with billing_context(**CONTEXT):
            claude.messages.create(model="claude-sonnet-4-5", max_tokens=256,
                                   messages=[{"role": "user", "content": "Summarise"}])
            gpt.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Reconcile"}])
            # results of batch jobs, recorded from their bodies
            result = recorded.ANTHROPIC_BATCH_RESULT["result"]["message"]
            emit(anthropic_integration.model_call(result, provider="anthropic"), recorder=recorder)
            body = recorded.OPENAI_BATCH_OUTPUT_LINE["response"]["body"]
            emit(openai_integration.model_call(body, provider="openai", batch=True), recorder=recorder)

    events = stored(service, recorder)
    lifetimes, batch = sorted((event for event in events if event.model == "claude-sonnet-4-5"),
                              key=lambda event: event.input_tokens)
    flex, batched = sorted((event for event in events if event.model == "gpt-4o-mini-2024-07-18"),
                           key=lambda event: event.input_tokens)
    # 5-minute and 1-hour writes apart: 40 x $3 + 80 x $15 + 1000 x $3.75 + 2000 x $6 per million. Claude
    # Sonnet 4.5 has no priority rate: priced at standard, and the event says so.
    assert (lifetimes.cache_write_tokens, lifetimes.cache_write_1h_tokens, lifetimes.service_tier) == (1000, 2000,
                                                                                                     "priority")
    assert (lifetimes.usage_cost, lifetimes.priced_at_standard_tier) == (Decimal("0.01707"), True)
    # A Message Batches result: 100,000 x $1.50 + 10,000 x $7.50 per million
    assert (batch.service_tier, batch.usage_cost) == ("batch", Decimal("0.225"))
    # gpt-4o-mini at flex, which has no flex price: standard 6000 x $0.15 + 4000 x $0.075 + 2000 x $0.60 per
    # million, and the event says so
    assert (flex.service_tier, flex.input_tokens, flex.cache_read_tokens, flex.usage_cost,
            flex.priced_at_standard_tier) == ("flex", 6000, 4000, Decimal("0.0024"), True)
    # a Batch API output line: batch rates, 1M x $0.075 + 100,000 x $0.30 per million
    assert (batched.service_tier, batched.usage_cost, batched.priced_at_standard_tier) == ("batch", Decimal("0.105"),
                                                                                           False)


def test_the_litellm_integration_reads_one_hour_writes_and_the_tier_from_the_answer(service, recorder):
    """LiteLLM's answer as its callback receives it (a ModelResponse with Anthropic's usage folded into
    prompt_tokens and the lifetimes in prompt_tokens_details), recorded through the integration's reading of it."""
    pytest.importorskip("litellm")
    from litellm import ModelResponse

    from agentbilling.instrumentation import emit
    from agentbilling.integrations.litellm import model_call

    answer = ModelResponse(
        model="claude-sonnet-4-5", choices=[{"index": 0, "finish_reason": "stop",
                                             "message": {"role": "assistant", "content": "ok"}}],
        usage={"prompt_tokens": 3050, "completion_tokens": 100, "total_tokens": 3150,
               "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 0,
               "prompt_tokens_details": {"cached_tokens": 0, "cache_creation_tokens": 3000,
                                         "cache_creation_token_details": {"ephemeral_5m_input_tokens": 1000,
                                                                          "ephemeral_1h_input_tokens": 2000}}},
        service_tier="batch")  # the tier the provider's answer names
    with billing_context(**CONTEXT):
        emit(model_call({"custom_llm_provider": "anthropic", "model": "anthropic/claude-sonnet-4-5"}, answer),
             recorder=recorder)
    [event] = stored(service, recorder)
    assert (event.input_tokens, event.cache_write_tokens, event.cache_write_1h_tokens, event.service_tier) == (
        50, 1000, 2000, "batch")
    # batch: 50 x $1.50 + 100 x $7.50 + 1000 x $1.875 + 2000 x $3 (50% of $6) per million
    assert event.usage_cost == Decimal("0.0087")
