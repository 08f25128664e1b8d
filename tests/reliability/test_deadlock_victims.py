"""Two writers PostgreSQL ends in a deadlock: one holds an invoice row (the end-of-period job finalizing a draft,
a send, a first generate creating it) while its commit checks the foreign keys to the subscription and the
customer; the other (a plan change, a generate, an invoice-dates change) holds those rows and waits for the
invoice. The victim is rolled back whole and runs again (core/database.py `retried_on_deadlock`): it answers what
it would have a moment later, never the 503 "database unavailable" it answered. The holder is paused inside its
transaction, after the step whose commit needs the parents, until the contender waits on a lock."""
import threading
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.db import connections

from billing.models import Invoice
from customers.models import Customer, Signal
from tests.factories import UsageEventFactory
from tests.parallel import post
from tests.reliability.test_concurrency import lock_waiters
from tests.reliability.world import JAN, World

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)
UTC = timezone.utc
FEBRUARY_FIRST = datetime(2025, 2, 1, 0, 0, 1, tzinfo=UTC)


def setup(api):
    world = World(api)
    world.event  # 4 pages on Jan 15
    UsageEventFactory(book=world.book, customer=Customer.objects.get(pk=world.customer.id),
                      signal=Signal.objects.get(pk=world.signal.id), quantity=Decimal("6"),
                      usage_date=datetime(2025, 1, 25, tzinfo=UTC))  # after the change instant
    invoice_id = world.invoice.id  # January's draft
    plan2 = world.post("/v1/pricing-plans", {"name": f"Plan2 {world.tag}", "agentId": world.agent.id})
    r = api.post(f"/v1/pricing-plans/{plan2.id}/pricing-strategies", [
        {"name": "per page 2", "agentId": world.agent.id, "chargeType": "usage", "signalId": world.signal.id,
         "pricingModel": "flat", "rate": "1"}])
    assert r.status_code == 201, r.content
    return world, invoice_id, plan2


def race(api, monkeypatch, holder_body, hook_name, contender):
    """`holder_body` runs in a thread of its own and stops inside its transaction right after `hook_name`
    (billing.services.invoices) until `contender` (an HTTP request to the live server) waits on a lock."""
    import billing.services.invoices as invoices
    world, invoice_id, plan2 = setup(api)
    held, release, outcomes = threading.Event(), threading.Event(), {}
    original = getattr(invoices, hook_name)

    def paused(*args, **kwargs):
        result = original(*args, **kwargs)
        if threading.current_thread().name == "holder":
            held.set()
            release.wait(20)
        return result

    monkeypatch.setattr(invoices, hook_name, paused)

    def holder():
        try:
            with connections["default"].cursor() as cursor:
                cursor.execute("SET deadlock_timeout = '60s'")  # see below: the contender finds the deadlock
            outcomes["holder"] = holder_body(world, invoice_id)
        finally:
            held.set()
            connections.close_all()

    def contend():
        try:
            outcomes["contender"] = contender(world, plan2)
        finally:
            connections.close_all()

    # Of two deadlocked sessions PostgreSQL rolls back the one whose deadlock check (made once, after waiting
    # deadlock_timeout) finds the cycle. The contender waits first; the holder, released, waits at its commit some
    # time later: on a loaded machine more than the default second later, after the contender's one check had
    # found no cycle, and the holder was the victim. The contender (the live server's new connections) checks after
    # 3 seconds, the holder after a minute.
    database = connections["default"].settings_dict["NAME"]
    with connections["default"].cursor() as cursor:
        cursor.execute(f"ALTER DATABASE \"{database}\" SET deadlock_timeout = '3s'")
    try:
        first = threading.Thread(target=holder, name="holder")
        first.start()
        assert held.wait(20)
        second = threading.Thread(target=contend)
        second.start()
        assert lock_waiters() == 1
        release.set()
        first.join(30)
        second.join(60)
    finally:
        with connections["default"].cursor() as cursor:
            cursor.execute(f"ALTER DATABASE \"{database}\" RESET deadlock_timeout")
    return outcomes


def finalize(world, invoice_id):
    from billing.services.invoices import invoices_finalize_due
    return invoices_finalize_due(now=FEBRUARY_FIRST)


def send(world, invoice_id):
    from billing.services.invoices import invoice_send
    return invoice_send(book=world.book, invoice_id=invoice_id, now=FEBRUARY_FIRST).invoice.status


def generate_february(world, invoice_id):
    from billing.services.invoices import invoice_generate
    return invoice_generate(book=world.book, now=FEBRUARY_FIRST, customer_id=world.customer.id,
                            subscription_id=world.subscription.id,
                            billing_period_start=datetime(2025, 2, 1, tzinfo=UTC),
                            billing_period_end=datetime(2025, 3, 1, tzinfo=UTC))[1]


def change_plan(at):
    def contender(world, plan2):
        return post(f"{contender.url}/v1/subscriptions/{world.subscription.id}/change-plan", contender.key,
                    {"planId": plan2.id, "effectiveAt": at})()
    return contender


def generate_january(world, plan2):
    return post(f"{generate_january.url}/v1/invoices/generate", generate_january.key, {
        "customerId": world.customer.id, "subscriptionId": world.subscription.id,
        "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]})()


def billing_day_15(world, plan2):
    import json
    import urllib.error
    import urllib.request
    request = urllib.request.Request(f"{billing_day_15.url}/v1/subscriptions/{world.subscription.id}/invoice-dates",
                                     data=json.dumps({"billingDay": 15}).encode(), method="PATCH",
                                     headers={"x-api-key": billing_day_15.key, "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as failure:
        return failure.code, json.loads(failure.read())


@pytest.mark.parametrize("holder, hook, contender, status", [
    (finalize, "invoice_event", change_plan("2025-01-20T00:00:00Z"), 409),  # January is issued: the change splits it
    (send, "_pay_token", generate_january, 200),  # the invoice as sent
    (generate_february, "invoice_event", billing_day_15, 200),
    (generate_february, "invoice_event", change_plan("2025-02-10T00:00:00Z"), 201),
], ids=["finalize-vs-change-plan", "send-vs-generate", "first-generate-vs-invoice-dates",
        "first-generate-vs-change-plan"])
def test_the_victim_of_a_deadlock_answers_as_it_would_have_a_moment_later(live_server, api, monkeypatch, holder,
                                                                          hook, contender, status):
    contender.url, contender.key = live_server.url, api.raw_key
    outcomes = race(api, monkeypatch, holder, hook, contender)
    answer_status, answer = outcomes["contender"]
    assert answer_status == status, answer
    assert outcomes["holder"]  # the holder committed too
    if status == 409:
        assert answer["code"] == "period_invoiced"
        assert Invoice.objects.get(status="issued").period_end == datetime(2025, 2, 1, tzinfo=UTC)
