"""Real parallel requests against a live server on PostgreSQL: the database decides what must be one."""
import json
import threading
import urllib.request
from decimal import Decimal

import pytest

from customers.models import Agent, Customer, Signal, UsageEvent
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PARALLEL = 8


def post_in_parallel(url: str, key: str, bodies: list[dict]) -> list[tuple[int, dict]]:
    """Send every body at the same moment (a barrier releases all threads together)."""
    barrier = threading.Barrier(len(bodies))
    results: list = [None] * len(bodies)

    def send(position: int, body: dict):
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                         headers={"x-api-key": key, "Content-Type": "application/json"})
        barrier.wait()
        with urllib.request.urlopen(request, timeout=30) as response:
            results[position] = (response.status, json.loads(response.read()))

    threads = [threading.Thread(target=send, args=(i, body)) for i, body in enumerate(bodies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.fixture
def llm():
    return ServiceEntryFactory(canonical_name="race-llm", provider="raceai", input_cost=Decimal("0.000001"),
                               output_cost=Decimal("0.000002"))


def record(**fields):
    return {"customerExternalId": "race-customer", "agentCode": "race-agent", "signalName": "race-signal",
            "model": "race-llm", "modelProvider": "raceai", "inputTokens": 100, "outputTokens": 100, **fields}


def test_parallel_requests_with_one_idempotency_key_store_one_event(live_server, api, llm):
    bodies = [{"records": [record(idempotencyKey="same-key")]} for _ in range(PARALLEL)]
    results = post_in_parallel(f"{live_server.url}/v1/usage/record", api.raw_key, bodies)
    assert all(status == 200 for status, _ in results)
    event_ids = {body["results"]["success"][0]["eventId"] for _, body in results}
    assert len(event_ids) == 1
    assert UsageEvent.objects.count() == 1
    assert sum(1 for _, body in results if not body["results"]["success"][0].get("replayed")) == 1


def test_parallel_first_events_of_one_new_customer_create_it_once(live_server, api, llm):
    bodies = [{"records": [record()]} for _ in range(PARALLEL)]
    results = post_in_parallel(f"{live_server.url}/v1/usage/record", api.raw_key, bodies)
    assert all(status == 200 and body["successful"] == 1 for status, body in results)
    assert Customer.objects.filter(external_id="race-customer").count() == 1
    assert Agent.objects.filter(agent_code="race-agent").count() == 1
    assert Signal.objects.filter(short_name="race-signal").count() == 1
    assert UsageEvent.objects.count() == PARALLEL
