"""Parallel top-ups against a live server on PostgreSQL: one idempotencyKey makes one grant."""
import json
import threading
import urllib.error
import urllib.request

import pytest

from billing.models import CreditGrant
from tests.billing.pools import pool_subscription

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
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                results[position] = (response.status, json.loads(response.read()))
        except urllib.error.HTTPError as refused:
            results[position] = (refused.code, json.loads(refused.read()))

    threads = [threading.Thread(target=send, args=(i, body)) for i, body in enumerate(bodies)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_parallel_top_ups_with_one_key_create_one_grant(live_server, api, chain):
    subscription = pool_subscription(api, chain, start="2025-01-01T00:00:00Z")
    url = f"{live_server.url}/v1/subscriptions/{subscription['id']}/credit-topup"
    results = post_in_parallel(url, api.raw_key, [{"units": 25, "idempotencyKey": "same"}] * PARALLEL)
    assert sorted(status for status, _ in results) == [200] * (PARALLEL - 1) + [201]
    assert len({body["grantId"] for _, body in results}) == 1
    assert [body["created"] for _, body in results].count(True) == 1
    assert CreditGrant.objects.filter(kind="topup").count() == 1
    assert all(body["remainingUnits"] == 125 for _, body in results)


def test_parallel_top_ups_with_different_keys_all_count(live_server, api, chain):
    subscription = pool_subscription(api, chain, start="2025-01-01T00:00:00Z")
    url = f"{live_server.url}/v1/subscriptions/{subscription['id']}/credit-topup"
    results = post_in_parallel(url, api.raw_key, [{"units": 10, "idempotencyKey": f"key-{i}"} for i in range(PARALLEL)])
    assert all(status == 201 for status, _ in results)
    assert sorted(body["remainingUnits"] for _, body in results)[-1] == 100 + 10 * PARALLEL
    assert CreditGrant.objects.filter(kind="topup").count() == PARALLEL
    assert CreditGrant.objects.filter(kind="period").count() == 1
