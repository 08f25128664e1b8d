"""Parallel requests against a live server on PostgreSQL: one invoice per subscription and period, numbers
without gaps or repeats, one payment per provider payment id."""
import json
import threading
import urllib.error
import urllib.request

import pytest
from django.test import override_settings

from billing.models import Invoice, Payment
from tests.billing.invoice_support import (JAN, WEBHOOK_SECRET, billing_chain, recurring, stripe_event,
                                           stripe_signature)

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PARALLEL = 6


def in_parallel(requests: list[urllib.request.Request]) -> list[tuple[int, dict]]:
    """Send every request at the same moment (a barrier releases all threads together)."""
    barrier = threading.Barrier(len(requests))
    results: list = [None] * len(requests)

    def send(position: int, request: urllib.request.Request):
        barrier.wait()
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                results[position] = (response.status, json.loads(response.read()))
        except urllib.error.HTTPError as failure:
            results[position] = (failure.code, json.loads(failure.read()))

    threads = [threading.Thread(target=send, args=(i, request)) for i, request in enumerate(requests)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def api_request(url: str, key: str, body: dict) -> urllib.request.Request:
    return urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                  headers={"x-api-key": key, "Content-Type": "application/json"})


def test_concurrent_generates_of_one_period_create_one_invoice(live_server, api, book):
    chain = billing_chain(api, book, [recurring("10")])
    body = {"customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
            "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]}
    results = in_parallel([api_request(f"{live_server.url}/v1/invoices/generate", api.raw_key, body)] * PARALLEL)
    assert sorted(status for status, _ in results) == [200] * (PARALLEL - 1) + [201]
    assert len({answer["id"] for _, answer in results}) == 1
    assert Invoice.objects.count() == 1


def test_concurrent_generates_of_different_subscriptions_take_consecutive_numbers(live_server, api, book):
    chains = [billing_chain(api, book, [recurring("10")]) for _ in range(PARALLEL)]
    requests = [api_request(f"{live_server.url}/v1/invoices/generate", api.raw_key, {
        "customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
        "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]}) for chain in chains]
    results = in_parallel(requests)
    assert [status for status, _ in results] == [201] * PARALLEL
    assert sorted(answer["invoiceNumber"] for _, answer in results) == [f"INV-{n:06d}" for n in range(1, PARALLEL + 1)]


@override_settings(STRIPE_WEBHOOK_SECRET=WEBHOOK_SECRET)
def test_concurrent_deliveries_of_one_payment_record_it_once(live_server, api, book):
    chain = billing_chain(api, book, [recurring("10")])
    invoice = api.post("/v1/invoices/generate", {
        "customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
        "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]}).json()
    assert api.post(f"/v1/invoices/{invoice['id']}/send", {}).status_code == 200
    event = stripe_event(invoice["id"], 1000, payment_intent="pi_race")
    request = urllib.request.Request(f"{live_server.url}/v1/webhooks/stripe", data=event, method="POST",
                                     headers={"Stripe-Signature": stripe_signature(event),
                                              "Content-Type": "application/json"})
    results = in_parallel([request] * PARALLEL)
    assert all(status == 200 for status, _ in results)
    assert Payment.objects.count() == 1
    assert Invoice.objects.get(pk=invoice["id"]).status == "paid"
