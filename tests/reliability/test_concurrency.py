"""Real parallel requests against a live server on PostgreSQL: whatever must exist once exists once.

Threads released together by a barrier send the requests; the database (constraints, row locks,
`ON CONFLICT`) is the referee. Invoice numbering and payment webhooks under concurrency are in
tests/billing/test_invoices_concurrency.py.
"""
import json
import threading
import urllib.error
import urllib.request
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.db import connection

from billing.models import Invoice
from billing.services.invoices import invoices_finalize_due
from customers.models import Agent, Customer, Signal, UsageEvent
from matters.models import MatterAttribution
from tests.factories import MatterFactory, MatterRuleFactory, ServiceEntryFactory, UsageEventFactory
from tests.mail import sent_mail
from tests.reliability.world import JAN, World

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PARALLEL = 8


def in_parallel(calls: list) -> list:
    """Run every callable at the same moment (a barrier releases all threads together); their results in
    order. Each thread closes its own database connection, if it opened one."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(position: int, call):
        barrier.wait()
        try:
            results[position] = call()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def post(url: str, key: str, body: dict):
    """A callable that POSTs JSON and answers (status, parsed body)."""
    def send():
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                         headers={"x-api-key": key, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as failure:
            return failure.code, json.loads(failure.read())
    return send


@pytest.fixture
def llm():
    return ServiceEntryFactory(canonical_name="race-llm", provider="raceai", input_cost=Decimal("0.000001"),
                               output_cost=Decimal("0.000002"))


def record(**fields):
    return {"customerExternalId": "race-customer", "agentCode": "race-agent", "signalName": "race-signal",
            "model": "race-llm", "modelProvider": "raceai", "inputTokens": 100, "outputTokens": 100, **fields}


# --------------------------------------------------------------------------- usage recording

def test_parallel_requests_with_one_idempotency_key_store_one_event(live_server, api, llm):
    send = post(f"{live_server.url}/v1/usage/record", api.raw_key, {"records": [record(idempotencyKey="same-key")]})
    results = in_parallel([send] * PARALLEL)
    assert all(status == 200 for status, _ in results)
    event_ids = {body["results"]["success"][0]["eventId"] for _, body in results}
    assert len(event_ids) == 1
    assert UsageEvent.objects.count() == 1
    assert sum(1 for _, body in results if not body["results"]["success"][0].get("replayed")) == 1


def test_parallel_first_events_of_one_new_customer_create_it_once(live_server, api, llm):
    send = post(f"{live_server.url}/v1/usage/record", api.raw_key, {"records": [record()]})
    results = in_parallel([send] * PARALLEL)
    assert all(status == 200 and body["successful"] == 1 for status, body in results)
    assert Customer.objects.filter(external_id="race-customer").count() == 1
    assert Agent.objects.filter(agent_code="race-agent").count() == 1
    assert Signal.objects.filter(short_name="race-signal").count() == 1
    assert UsageEvent.objects.count() == PARALLEL


# --------------------------------------------------------------------------- invoices

def test_parallel_generates_and_sends_make_one_invoice_with_one_number_issued_once(live_server, api):
    world = World(api)
    generate = post(f"{live_server.url}/v1/invoices/generate", api.raw_key, {
        "customerId": world.customer.id, "subscriptionId": world.subscription.id,
        "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]})
    generated = in_parallel([generate] * PARALLEL)
    assert sorted(status for status, _ in generated) == [200] * (PARALLEL - 1) + [201]
    [invoice_id] = {body["id"] for _, body in generated}

    sent = in_parallel([post(f"{live_server.url}/v1/invoices/{invoice_id}/send", api.raw_key, {})] * PARALLEL)
    assert [status for status, _ in sent] == [200] * PARALLEL
    invoice = Invoice.objects.get()
    assert (invoice.status, invoice.invoice_number) == ("issued", "INV-000001")
    assert {body["invoiceNumber"] for _, body in sent} == {"INV-000001"}
    # Every send is a delivery (spec: sending again re-sends), and each carries the one number.
    mails = sent_mail()
    assert len(mails) == PARALLEL and all("INV-000001" in mail.subject for mail in mails)
    assert len({mail.text for mail in mails}) == PARALLEL  # a fresh pay-now link in each


def test_a_send_racing_the_finalize_job_issues_the_draft_once_and_emails_once(live_server, api):
    world = World(api)
    invoice_id = world.invoice.id  # January's draft: its period has ended, so the job finalizes it
    send = post(f"{live_server.url}/v1/invoices/{invoice_id}/send", api.raw_key, {})
    now = datetime.now(timezone.utc)
    results = in_parallel([send, *[lambda: invoices_finalize_due(now=now)] * (PARALLEL - 1)])
    assert results[0][0] == 200
    invoice = Invoice.objects.get(pk=invoice_id)
    assert (invoice.status, invoice.invoice_number) == ("issued", "INV-000001")
    assert sum(int(outcome.split()[0]) for outcome in results[1:]) <= 1  # at most one job finalized it
    assert len(sent_mail()) == 1
    assert Invoice.objects.count() == 1


# --------------------------------------------------------------------------- matters

def test_parallel_rule_sweeps_attribute_each_event_once(live_server, api, book, settings):
    settings.MATTERS_APPLY_CHUNK_SIZE = 7  # many small chunks, so the sweeps interleave
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="sweep-agent")
    events = [UsageEventFactory(book=book, agent_code="sweep-agent") for _ in range(60)]
    apply = post(f"{live_server.url}/v1/matter-rules/apply", api.raw_key, {})
    results = in_parallel([apply] * PARALLEL)
    assert all(status == 201 for status, _ in results)
    assert sum(body["assigned"] for _, body in results) == len(events)
    attributions = MatterAttribution.objects.filter(event__in=events)
    assert attributions.count() == len(events)
    assert set(attributions.values_list("matter_id", flat=True)) == {matter.id}


# --------------------------------------------------------------------------- credit pools
# Credit-pool top-ups land with the credit-pools branch: parallel POSTs of
# /v1/subscriptions/{id}/credit-topup with one idempotencyKey must create one grant (one `created: true`,
# the rest replays of it). Add that test here, with the helpers above.
