"""The buffered recorder against the live service: batching, idempotency keys and replays, retries through
real 429s (the service's own rate limiter) and real 503s (its database cut off), 5xx and dropped
connections from a fake server in front of it, per-record failures, bounded memory, exit."""
import asyncio
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from agentbilling import AsyncRecorder, Recorder, RetryPolicy
from accounts import throttling
from customers.models import UsageEvent
from tests.clients.conftest import llm_cost
from tests.clients.fake_http import FakeServer, json_answer
from tests.reliability.test_faults import database_behind_proxy  # noqa: F401  (fixture)

pytestmark = pytest.mark.usefixtures("database")

D = Decimal
FAST = RetryPolicy(backoff_base=0.01, backoff_max=0.05)


def events(service):
    return UsageEvent.objects.filter(book=service.book)


def fields(number: int = 0, **overrides) -> dict:
    return {"customerExternalId": f"cust-{number % 3}", "agentCode": "support-bot", "signalName": "llm_calls",
            "model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 1000, "outputTokens": 100,
            **overrides}


def counting_client(sizes: list):
    """An httpx client that notes the number of records in each usage batch it sends."""
    def note(request: httpx.Request):
        if request.url.path == "/v1/usage/record":
            sizes.append(request.content.count(b'"idempotencyKey"'))
    return httpx.Client(event_hooks={"request": [note]}, timeout=30)


def test_records_go_in_batches_of_at_most_100_and_each_is_stored_once_with_its_cost(service):
    url, key = service
    sizes: list[int] = []
    recorder = Recorder(key, base_url=url, flush_interval=60, senders=1, http_client=counting_client(sizes))
    keys = [recorder.record(**fields(i)) for i in range(250)]

    assert recorder.flush(timeout=30)
    assert sorted(sizes, reverse=True) == [100, 100, 50]  # two full batches sent by size, the rest by flush()
    stored = events(service)
    assert stored.count() == 250 and len(set(keys)) == 250
    assert set(stored.values_list("idempotency_key", flat=True)) == set(keys)  # every record got its own key
    assert {event.usage_cost for event in stored} == {llm_cost("openai", "gpt-4o-mini", input=1000, output=100)}
    stats = recorder.stats
    assert (stats.stored, stats.failed, stats.dropped, stats.queued, stats.in_flight) == (250, 0, 0, 0, 0)
    recorder.close()


def test_a_partial_batch_is_sent_after_the_flush_interval_without_any_flush_call(service):
    url, key = service
    recorder = Recorder(key, base_url=url, flush_interval=0.2, senders=1)
    recorder.record(**fields())
    deadline = time.monotonic() + 10
    while recorder.stats.stored < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert events(service).count() == 1
    recorder.close()


def test_a_replayed_idempotency_key_stores_one_event_and_sending_it_again_is_harmless(service):
    url, key = service
    for _ in range(2):  # two processes' recorders sending the same record
        with Recorder(key, base_url=url) as recorder:
            assert recorder.record(**fields(idempotencyKey="ticket-981")) == "ticket-981"
    assert events(service).filter(idempotency_key="ticket-981").count() == 1


def test_a_429_from_the_rate_limiter_is_retried_after_its_retry_after(service, settings, monkeypatch):
    url, key = service
    settings.API_RATE_LIMIT_PER_MINUTE = 1  # the service's own limiter: the second request of a minute is a 429
    clock = {"now": time.time()}
    monkeypatch.setattr(throttling, "time", type("Clock", (), {"time": staticmethod(lambda: clock["now"])}))
    waits: list[float] = []

    def wait(seconds):  # time passes for the limiter as the recorder waits
        waits.append(seconds)
        clock["now"] += seconds

    recorder = Recorder(key, base_url=url, senders=1, flush_interval=60, sleep=wait)
    for i in range(150):
        recorder.record(**fields(i))
    assert recorder.flush(timeout=30)

    assert len(waits) == 1 and 1 <= waits[0] <= 60  # Retry-After: the seconds left in the limiter's minute
    assert events(service).count() == 150
    assert recorder.stats.retries == 1 and recorder.stats.failed == 0
    recorder.close()


# The one test on pytest-django's own `live_server` (a transactional database, restored from its serialized
# copy): the reliability suite's proxy cuts the database off the way a stopped server would.
@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_503_while_the_database_is_down_is_retried_until_it_is_back(live_server, api,
                                                                      database_behind_proxy):  # noqa: F811
    failures, waits = [], []
    database_behind_proxy.cut()

    def wait(seconds):
        waits.append(seconds)
        if len(waits) == 2:  # down for two attempts, then back
            database_behind_proxy.restore()

    recorder = Recorder(api.raw_key, base_url=live_server.url, senders=1, retry_policy=FAST, sleep=wait,
                        on_failure=failures.append)
    for i in range(10):
        recorder.record(**fields(i))
    assert recorder.flush(timeout=30)
    recorder.close()

    assert len(waits) == 2 and failures == []  # two 503s (the key could not be checked), then stored
    assert UsageEvent.objects.count() == 10


@pytest.mark.parametrize("status", [500, 502, 504, "drop"])
def test_a_transient_failure_in_front_of_the_service_is_retried_and_stores_once(service, status):
    url, key = service
    seen = []

    def answers(exchange):
        seen.append(exchange)
        if len(seen) == 1:
            return "drop" if status == "drop" else json_answer({"message": "upstream trouble"}, status)
        return None  # the live service

    with FakeServer(answers, upstream=url) as front:
        recorder = Recorder(key, base_url=front.url, senders=1, retry_policy=FAST)
        for i in range(5):
            recorder.record(**fields(i))
        assert recorder.flush(timeout=30)
        recorder.close()
    assert len(seen) == 2 and seen[0].body == seen[1].body  # the same batch, the same idempotency keys
    assert events(service).count() == 5 and recorder.stats.retries == 1


def test_a_500_is_retried_once_then_its_records_are_failures_safe_to_resend(service):
    url, key = service
    failures = []
    with FakeServer(lambda exchange: json_answer({"message": "Internal server error."}, 500)) as broken:
        recorder = Recorder(key, base_url=broken.url, senders=1, retry_policy=FAST, on_failure=failures.append)
        recorder.record(**fields())
        assert recorder.flush(timeout=30)
        recorder.close()
    assert len(broken.exchanges) == 2  # spec §7: "retry once"
    assert [(f.code, f.stored, f.status) for f in failures] == [("server_error", False, 500)]
    assert failures[0].record["idempotencyKey"]  # resending it later is still a replay


def test_per_record_failures_reach_the_callback_and_stored_ones_are_never_resent(service):
    url, key = service
    failures = []
    sizes: list[int] = []
    recorder = Recorder(key, base_url=url, senders=1, on_failure=failures.append, http_client=counting_client(sizes))
    recorder.record(**fields(0))
    unknown = recorder.record(**fields(1, model="no-such-model-9000"))
    too_long = recorder.record(**fields(2, signalName="s" * 300))
    assert recorder.flush(timeout=30)
    recorder.close()

    by_key = {failure.record["idempotencyKey"]: failure for failure in failures}
    assert set(by_key) == {unknown, too_long}
    assert (by_key[unknown].code, by_key[unknown].stored) == ("unknown_model", True) and by_key[unknown].event_id
    assert (by_key[too_long].code, by_key[too_long].stored) == ("invalid_record", False)
    assert sizes == [3]  # one request: per-record failures are answers, not reasons to resend
    assert events(service).count() == 2  # the priced one and the one stored with cost null
    assert recorder.stats.stored == 2 and recorder.stats.failed == 2


def test_a_batch_refused_for_one_malformed_record_sends_its_other_records_again(service):
    url, key = service
    failures = []
    recorder = Recorder(key, base_url=url, senders=1, on_failure=failures.append)
    recorder.record(**fields(0))
    # record_prepared skips the client's own checks: the service refuses the mixed shape with a 400 naming it
    recorder.record_prepared({**fields(1), "services": [{"model": "gpt-4o-mini", "modelProvider": "openai"}],
                              "idempotencyKey": "mixed-shape"})
    recorder.record(**fields(2))
    assert recorder.flush(timeout=30)
    recorder.close()
    assert [(f.record["idempotencyKey"], f.code, f.status) for f in failures] == [
        ("mixed-shape", "invalid_record", 400)]
    assert "records[1]" in failures[0].message
    assert events(service).count() == 2


def test_a_full_buffer_drops_new_records_counts_them_and_closing_drops_the_rest(service):
    url, key = service
    failures = []
    with FakeServer(lambda exchange: json_answer({"message": "down"}, 503, {"Retry-After": "1"})) as down:
        recorder = Recorder(key, base_url=down.url, senders=1, batch_size=100, max_buffer=200,
                            on_failure=failures.append)
        keys = [recorder.record(**fields(i)) for i in range(500)]
        stats = recorder.stats
        assert stats.queued + stats.in_flight <= 300  # the cap, plus the batch being retried
        assert stats.dropped == 500 - stats.queued - stats.in_flight
        assert {f.code for f in failures} == {"buffer_full"} and len(failures) == stats.dropped
        assert {f.record["idempotencyKey"] for f in failures} <= set(keys[200:])  # refused on arrival
        recorder.close(timeout=0.2)
    assert recorder.stats.dropped == 500 and len(failures) == 500  # nothing lost silently
    assert {f.code for f in failures} == {"buffer_full", "shutdown_unsent"}


def test_records_left_in_the_buffer_are_sent_at_interpreter_exit(service):
    url, key = service
    client_source = Path(__file__).resolve().parents[2] / "clients" / "python" / "src"
    script = (f"import sys; sys.path.insert(0, {str(client_source)!r})\n"
              "from agentbilling import Recorder\n"
              f"recorder = Recorder({key!r}, base_url={url!r}, flush_interval=3600)\n"
              "for i in range(7):\n"
              "    recorder.record(customerExternalId='exit-cust', agentCode='support-bot', signalName='llm_calls',"
              " model='gpt-4o-mini', modelProvider='openai', inputTokens=10)\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert events(service).filter(customer_external_id="exit-cust").count() == 7


def test_the_asyncio_recorder_batches_and_retries_like_the_threaded_one(service):
    url, key = service
    seen = []

    def answers(exchange):
        seen.append(exchange)
        return json_answer({"message": "busy"}, 429, {"Retry-After": "0"}) if len(seen) == 1 else None

    async def main(front_url):
        async with AsyncRecorder(key, base_url=front_url, flush_interval=60, retry_policy=FAST) as recorder:
            for i in range(130):
                recorder.record(**fields(i))
            assert await recorder.flush(timeout=30)
            return recorder.stats

    with FakeServer(answers, upstream=url) as front:
        stats = asyncio.run(main(front.url))
    assert events(service).count() == 130
    assert stats.retries == 1 and stats.stored == 130
    sizes = sorted(exchange.body.count(b'"idempotencyKey"') for exchange in seen)
    assert sizes in ([30, 100, 100], [30, 30, 100])  # 100 + 30, in flight together; the one refused, sent again
