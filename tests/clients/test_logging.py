"""What the client says when usage is lost, against the live service: every refused or dropped batch logged at
WARNING once per cause with its count (a wrong key's 401 included), a missing key one error at start-up instead
of one per model call, and a stream its caller stops reading logged with what was not recorded (recorded with
the usage known by then, when there is some)."""
import asyncio
import gc
import logging
import time

import anthropic
import openai
import pytest

from agentbilling import Client, MissingAPIKeyError, Recorder, billing_context, set_default_recorder
from agentbilling import instrumentation
from agentbilling.integrations.anthropic import instrument_anthropic
from agentbilling.integrations.openai import instrument_openai
from customers.models import UsageEvent
from tests.clients.conftest import llm_cost
from tests.clients.fake_http import FakeServer, json_answer
from tests.clients.test_integrations import CONTEXT, provider, provider_answers  # noqa: F401 (fixture)

pytestmark = [pytest.mark.usefixtures("database"), pytest.mark.filterwarnings("ignore::UserWarning:pydantic")]


def fields(number: int = 0, **overrides) -> dict:
    return {"customerExternalId": f"cust-{number % 3}", "agentCode": "support-bot", "signalName": "llm_calls",
            "model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 1000, "outputTokens": 100,
            **overrides}


def warnings_of(caplog, logger: str) -> list[str]:
    return [record.getMessage() for record in caplog.records
            if (record.name == logger or record.name.startswith(logger + ".")) and record.levelno == logging.WARNING]


@pytest.fixture
def no_default_recorder(monkeypatch):
    """No key in the environment, no default recorder, and nothing said yet."""
    monkeypatch.delenv("AGENTBILLING_API_KEY", raising=False)
    previous = instrumentation._default_recorder
    set_default_recorder(None)
    instrumentation._warned.clear()
    yield
    made = instrumentation._default_recorder
    if made is not None and made is not previous:
        made.close()
    set_default_recorder(previous)
    instrumentation._warned.clear()


def test_a_wrong_key_logs_each_refused_batch_once_with_its_count(service, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    wrong = service.key[:-4] + ("aaaa" if service.key[-4:] != "aaaa" else "bbbb")  # well-formed, unknown
    recorder = Recorder(wrong, base_url=service.url, senders=1)
    for number in range(3):
        recorder.record(**fields(number))
    assert recorder.flush(timeout=30)
    first = warnings_of(caplog, "agentbilling.recorder")
    for number in range(2):
        recorder.record(**fields(number))
    assert recorder.flush(timeout=30)
    recorder.close()

    lines = warnings_of(caplog, "agentbilling.recorder")
    assert len(lines) == 2, lines  # one line per batch, not one per record
    assert first == ["agentbilling: 3 usage records not recorded (HTTP 401): Invalid API key. (check the API key: "
                     "AGENTBILLING_API_KEY or api_key=)"]
    assert lines[1].startswith("agentbilling: 2 usage records not recorded (HTTP 401): ")
    assert recorder.stats.failed == 5 and recorder.stats.stored == 0
    assert UsageEvent.objects.filter(book=service.book).count() == 0


def test_a_batchs_failures_are_logged_once_per_cause_with_their_counts(service, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    recorder = Recorder(service.key, base_url=service.url, senders=1)
    recorder.record(**fields(0))  # stored with its cost: nothing to say
    for number in range(2):
        recorder.record(**fields(number, model="no-such-model-9000"))
    for number in range(3):
        recorder.record(**fields(number, signalName="s" * 300))
    assert recorder.flush(timeout=30)
    recorder.close()

    lines = sorted(warnings_of(caplog, "agentbilling.recorder"))
    assert len(lines) == 2, lines
    assert lines[0].startswith("agentbilling: 2 usage records stored without a cost (unknown_model): ")
    assert "no-such-model-9000" in lines[0]
    assert lines[1].startswith("agentbilling: 3 usage records not recorded (invalid_record): ")
    assert recorder.stats.stored == 3 and recorder.stats.failed == 5


def test_records_a_closing_recorder_could_not_deliver_are_logged_with_their_count(service, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    with FakeServer(lambda exchange: json_answer({"message": "down"}, 503, {"Retry-After": "5"})) as down:
        recorder = Recorder(service.key, base_url=down.url, senders=1)
        for number in range(4):
            recorder.record(**fields(number))
        recorder.close(timeout=0.5)
    assert warnings_of(caplog, "agentbilling.recorder") == [
        "agentbilling: 4 usage records not recorded (shutdown_unsent): the recorder closed before the service took "
        "this record"]
    assert recorder.stats.dropped == 4


def test_a_full_buffer_says_when_it_starts_dropping_and_how_many_it_dropped(service, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    failures = []
    with FakeServer(lambda exchange: json_answer({"message": "down"}, 503, {"Retry-After": "5"})) as down:
        recorder = Recorder(service.key, base_url=down.url, senders=1, batch_size=100, max_buffer=200,
                            on_failure=failures.append)
        for number in range(500):
            recorder.record(**fields(number))
        assert len(warnings_of(caplog, "agentbilling.recorder")) == 1  # once, not once per record dropped
        recorder.close(timeout=0.3)
    full = sum(failure.code == "buffer_full" for failure in failures)
    unsent = sum(failure.code == "shutdown_unsent" for failure in failures)
    assert full + unsent == 500 and full >= 200
    started, ended, *at_close = warnings_of(caplog, "agentbilling.recorder")
    assert started == ("agentbilling: usage recorder buffer full (200 records): dropping new records until the "
                       "service takes the backlog")
    assert ended == (f"agentbilling: {full} usage records not recorded (buffer_full): dropped on arrival while 200 "
                     "records waited")
    # the batch the sender held and the buffer's rest, each a line with its count
    counts = [int(line.split()[1]) for line in at_close]
    assert sum(counts) == unsent and all(line.endswith("(shutdown_unsent): the recorder closed before the service "
                                                       "took this record") for line in at_close), at_close


def test_a_missing_key_is_one_error_at_start_up_not_one_per_model_call(service, provider, no_default_recorder, caplog,
                                                                       monkeypatch):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    with pytest.raises(MissingAPIKeyError, match="no API key: pass api_key= or set AGENTBILLING_API_KEY"):
        Recorder()
    with pytest.raises(MissingAPIKeyError):
        Client()
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"))
    said = [(record.levelno, record.getMessage(), record.exc_info) for record in caplog.records
            if record.name.startswith("agentbilling")]
    assert said == [(logging.ERROR, instrumentation.NO_KEY, None)]  # at instrumentation, before any call

    with billing_context(**CONTEXT):
        for _ in range(3):
            answer = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}])
            assert answer.choices[0].message.content == "Your ticket is resolved."  # the call itself unharmed
    assert len([record for record in caplog.records if record.name.startswith("agentbilling")]) == 1  # nothing
    # more per call, and no traceback

    monkeypatch.setenv("AGENTBILLING_API_KEY", service.key)  # a key set later: the next call is recorded
    monkeypatch.setenv("AGENTBILLING_BASE_URL", service.url)
    with billing_context(**CONTEXT):
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}])
    assert instrumentation._default_recorder.flush(timeout=30)
    assert UsageEvent.objects.filter(book=service.book).count() == 1


def test_a_missing_key_met_at_the_first_call_is_said_once(provider, no_default_recorder, caplog, monkeypatch):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    monkeypatch.setenv("AGENTBILLING_API_KEY", "svc_sk_test_set-when-instrumented")
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"))
    monkeypatch.delenv("AGENTBILLING_API_KEY")  # and gone by the first call
    with billing_context(**CONTEXT):
        for _ in range(3):
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}])
    assert [(record.levelno, record.getMessage(), record.exc_info) for record in caplog.records
            if record.name.startswith("agentbilling")] == [(logging.ERROR, instrumentation.NO_KEY, None)]


@pytest.fixture
def recorder(service):
    recorder = Recorder(service.key, base_url=service.url, senders=1)
    yield recorder
    recorder.close()


def stream_warnings(caplog) -> list[str]:
    return warnings_of(caplog, "agentbilling")


def test_an_openai_stream_closed_before_its_usage_is_logged_as_not_recorded(service, provider, recorder, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"), recorder)
    with billing_context(**CONTEXT):
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}],
                                                stream=True, stream_options={"include_usage": True})
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                break  # the caller has what it wanted
        stream.close()
    assert stream_warnings(caplog) == [
        "agentbilling: a stream from openai (gpt-4o-mini) closed after 2 chunks, before its end: not recorded (its "
        "usage comes at the end of the stream; read the stream to its end, or close it only after its last chunk)"]
    assert recorder.flush(timeout=30) and recorder.stats.recorded == 0


def test_an_openai_stream_dropped_unread_is_logged_too(service, provider, recorder, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"), recorder)

    def first_word():
        with billing_context(**CONTEXT):
            stream = client.chat.completions.create(model="gpt-4o-mini", stream=True,
                                                    messages=[{"role": "user", "content": "Hi"}],
                                                    stream_options={"include_usage": True})
            return next(iter(stream)).choices[0].delta.role  # the stream goes out of scope unread

    assert first_word() == "assistant"
    gc.collect()
    deadline = time.monotonic() + 10
    while not stream_warnings(caplog) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert [line.split(":", 2)[1] for line in stream_warnings(caplog)] == [
        " a stream from openai (gpt-4o-mini) closed after 1 chunk, before its end"]


def test_an_openai_stream_closed_after_its_usage_is_recorded_without_a_word(service, provider, recorder, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    client = instrument_openai(openai.OpenAI(api_key="sk-test", base_url=provider.url + "/v1"), recorder)
    with billing_context(**CONTEXT):
        stream = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}],
                                                stream=True, stream_options={"include_usage": True})
        for chunk in stream:
            if chunk.usage:
                break  # the last chunk: nothing is lost
        stream.close()
    assert stream_warnings(caplog) == []
    assert recorder.flush(timeout=30)
    [event] = UsageEvent.objects.filter(book=service.book)
    assert (event.input_tokens, event.output_tokens) == (80, 5)


def test_an_anthropic_stream_closed_early_is_recorded_with_the_usage_known_then(service, provider, recorder,
                                                                                 caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    client = instrument_anthropic(anthropic.Anthropic(api_key="sk-ant-test", base_url=provider.url), recorder)
    with billing_context(**CONTEXT):
        with client.messages.create(model="claude-sonnet-4-5", max_tokens=256, stream=True,
                                    messages=[{"role": "user", "content": "Clause?"}]) as stream:
            for event in stream:
                if event.type == "content_block_delta":
                    break  # the first words are enough: the rest of the output is never generated for the caller

    assert stream_warnings(caplog) == [
        "agentbilling: a stream from anthropic (claude-sonnet-4-5) closed after 3 chunks, before its end: recorded "
        "with the usage known then (25 input, 1 output tokens); the output tokens generated after it are not recorded"]
    assert recorder.flush(timeout=30)
    [event] = UsageEvent.objects.filter(book=service.book)
    # message_start's counts: 25 input, 3,000 read from the cache, 1 output token so far
    assert (event.input_tokens, event.output_tokens, event.cache_read_tokens) == (25, 1, 3000)
    assert event.usage_cost == llm_cost("anthropic", "claude-sonnet-4-5", input=25, output=1, cache_read=3000)


def test_an_anthropic_stream_helper_left_early_is_logged_too(service, provider, recorder, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")
    client = instrument_anthropic(anthropic.Anthropic(api_key="sk-ant-test", base_url=provider.url), recorder)
    with billing_context(**CONTEXT):
        with client.messages.stream(model="claude-sonnet-4-5", max_tokens=256,
                                    messages=[{"role": "user", "content": "Once more"}]) as helper:
            for text in helper.text_stream:
                break
    [line] = stream_warnings(caplog)
    assert line.startswith("agentbilling: a stream from anthropic (claude-sonnet-4-5) closed, before its end: recorded "
                           "with the usage known then (25 input, 1 output tokens)")
    assert recorder.flush(timeout=30) and recorder.stats.recorded == 1


def test_an_async_openai_stream_closed_early_is_logged(service, provider, recorder, caplog):
    caplog.set_level(logging.WARNING, logger="agentbilling")

    async def first_words():
        client = instrument_openai(openai.AsyncOpenAI(api_key="sk-test", base_url=provider.url + "/v1"), recorder)
        with billing_context(**CONTEXT):
            stream = await client.chat.completions.create(model="gpt-4o-mini", stream=True,
                                                          messages=[{"role": "user", "content": "Hi"}],
                                                          stream_options={"include_usage": True})
            async for chunk in stream:
                break
            await stream.close()

    asyncio.run(first_words())
    assert [line.split(":", 2)[1] for line in stream_warnings(caplog)] == [
        " a stream from openai (gpt-4o-mini) closed after 1 chunk, before its end"]
