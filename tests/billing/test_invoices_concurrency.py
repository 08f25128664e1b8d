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


def test_a_void_racing_generates_of_the_subscription_answers_no_5xx_and_leaves_the_pools_equal_to_the_ledger(
        live_server, api, book):
    """A void settles the customer's pools again (its period is billed under today's terms) while generates of the
    same subscription hold its row and then its invoices: the void takes the pool locks, the subscription's row and
    then the invoice's, as generating does, so neither waits for the other in a cycle (a deadlock retried or a 500),
    and the pools and drafts agree with the ledger afterwards."""
    from datetime import datetime, timezone
    from io import StringIO
    from django.core.management import call_command
    from console.verification import ledger_verify
    from tests.billing.invoice_support import FEB, credit_pool, draft, event
    chain = billing_chain(api, book, [credit_pool(100, "50", "0.75")])
    event(chain, 130, "2025-01-10T12:00:00Z")
    call_command("run_scheduled_jobs", "--now", "2025-02-10T00:00:00Z", stdout=StringIO())
    january = draft(api, chain, JAN)
    period = {"customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"]}
    requests = [api_request(f"{live_server.url}/v1/invoices/{january['id']}/void", api.raw_key, {"reason": "redo"}),
                *[api_request(f"{live_server.url}/v1/invoices/generate", api.raw_key,
                              {**period, "billingPeriodStart": FEB[0], "billingPeriodEnd": FEB[1]})] * 3]
    results = in_parallel(requests)
    assert all(status < 500 for status, _ in results), results
    assert results[0][0] == 200 and Invoice.objects.get(pk=january["id"]).status == "void"
    [report] = ledger_verify(now=datetime(2025, 2, 10, 1, tzinfo=timezone.utc), book=book)
    assert report.findings.get("credit_pools", []) == [] and report.findings.get("draft_invoices", []) == []
