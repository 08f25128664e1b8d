"""The typed clients against the live service: the billing chain end to end, every list shape paged
through, exact Decimals both ways, and errors as typed exceptions carrying the spec's message and code. Each
scenario runs on `Client` and on `AsyncClient` (driven through `tests.clients.blocking`)."""
import asyncio
import time
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from agentbilling import (AsyncClient, AuthenticationError, BadRequestError, ConflictError, KeyRevokedError,
                          NotFoundError, PermissionDeniedError, RateLimitError)
from catalog.models import ServiceEntry
from accounts import throttling
from accounts.services import api_key_revoke_raw
from core import clock
from tests.clients.blocking import open_client
from tests.clients.conftest import llm_cost

pytestmark = pytest.mark.usefixtures("database")

D = Decimal


@pytest.fixture(params=["sync", "async"])
def kind(request):
    return request.param


@pytest.fixture
def client(service, kind):
    with open_client(kind, service.key, base_url=service.url) as client:
        yield client


def test_the_billing_chain_from_usage_to_a_sent_invoice_and_its_pdf(client, service):
    answer = client.usage.record([
        {"customerExternalId": "cust-42", "agentCode": "support-bot", "signalName": "tickets_resolved",
         "model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 1200, "outputTokens": 300,
         "quantity": D("2.5")} for _ in range(3)])
    assert (answer["processed"], answer["successful"], answer["failed"]) == (3, 3, 0)
    assert [entry["index"] for entry in answer["results"]["success"]] == [0, 1, 2]
    assert D(answer["results"]["success"][0]["totalCostUsd"]) == llm_cost("openai", "gpt-4o-mini", input=1200,
                                                                          output=300)

    customer = next(client.customers.iter(externalId="cust-42"))
    client.customers.update(customer["id"], email="billing@globex.example", name="Globex")
    agent = next(client.agents.iter(agentCode="support-bot"))
    signal = next(client.signals.iter(agentId=agent["id"], shortName="tickets_resolved"))
    plan = client.plans.create(name="Support Pro", agentId=agent["id"])
    strategies = client.plans.strategies.create(plan["id"], [
        {"name": "Tickets", "agentId": agent["id"], "chargeType": "usage", "signalId": signal["id"],
         "pricingModel": "flat", "rate": D("1.10")},
        {"name": "Platform fee", "agentId": agent["id"], "chargeType": "recurring", "billingFrequency": "monthly",
         "rate": D("49.00")}])
    assert [strategy["rate"] for strategy in strategies] == [D("1.10"), D("49.00")]  # Decimals, exact
    start = datetime.now(timezone.utc).replace(day=1).date().isoformat()
    subscription = client.subscriptions.create(name="Globex on Pro", planId=plan["id"], agentId=agent["id"],
                                               customerId=customer["id"], startDate=start)

    invoice = client.invoices.generate(customerId=customer["id"], subscriptionId=subscription["id"])
    assert invoice["status"] == "draft"
    assert invoice["total"] == D("57.25")  # 7.5 tickets x 1.10 = 8.25, plus the 49.00 fee
    assert isinstance(invoice.total, D) and str(invoice.total) == "57.25"  # the typed model: exact cents
    assert sorted(line.amount for line in invoice.lines) == [D("8.25"), D("49.00")]
    assert client.invoices.pdf(invoice["id"]).startswith(b"%PDF")
    sent = client.invoices.send(invoice["id"])
    assert sent["success"] is True and sent["recipientEmail"] == "billing@globex.example"
    assert [row["status"] for row in client.invoices.iter(customerExternalId="cust-42")] == ["issued"]

    usage = client.analytics.usage(customerId=customer["id"])
    assert usage["summary"]["totalEvents"] == 3 and usage["summary"]["totalQuantity"] == D("7.5")
    session = client.portal_sessions.create(customerExternalId="cust-42", features=["invoices"])
    assert session["url"].endswith(session["token"])
    assert [row["id"] for row in client.portal_sessions.iter()] == [session["id"]]
    client.portal_sessions.revoke(session["id"])


def test_a_mapping_answers_a_job_the_client_waits_for_and_the_waiting_events_are_priced(client):
    records = [{"customerExternalId": "cust-7", "agentCode": "bot", "signalName": "calls", "model": "house-llm",
                "modelProvider": "inhouse", "inputTokens": 1000 * n, "outputTokens": 100} for n in (1, 2, 3)]
    assert client.usage.record(records)["failed"] == 3  # an unknown model: stored, waiting for a price
    service = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o-mini")
    answer = client.events.map_model(model="house-llm", modelProvider="inhouse", serviceId=service.id)
    job = client.jobs.wait(answer["jobId"], timeout=60, interval=0.2)
    assert (job["status"], job["done"], job["total"], job["error"]) == ("succeeded", 3, 3, None)
    assert client.jobs.get(job["id"]) == job
    costs = sorted(D(event["usageCost"]) for event in client.events.iter(customerExternalId="cust-7"))
    assert costs == [llm_cost("openai", "gpt-4o-mini", input=1000 * n, output=100) for n in (1, 2, 3)]
    with pytest.raises(NotFoundError):
        client.jobs.get("00000000-0000-0000-0000-000000000000")


def test_a_credit_pool_reads_its_balance_and_a_replayed_top_up_is_one_grant(client):
    client.usage.record([{"customerExternalId": "cust-pool", "agentCode": "pool-bot", "signalName": "credits",
                          "model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 10,
                          "quantity": 30}])
    customer = next(client.customers.iter(externalId="cust-pool"))
    agent = next(client.agents.iter(agentCode="pool-bot"))
    signal = next(client.signals.iter(agentId=agent["id"]))
    plan = client.plans.create(name="Pool", agentId=agent["id"])
    client.plans.strategies.create(plan["id"], [{
        "name": "Credits", "agentId": agent["id"], "chargeType": "usage", "signalId": signal["id"],
        "pricingModel": "credit_pool", "tiers": [{"lower": 0, "upper": 100, "rate": D("50")},
                                                 {"lower": 100, "upper": None, "rate": D("0.75")}]}])
    start = datetime.now(timezone.utc).replace(day=1).date().isoformat()
    subscription = client.subscriptions.create(name="Pool sub", planId=plan["id"], agentId=agent["id"],
                                               customerId=customer["id"], startDate=start)

    first = client.credit_balances.topup(subscription["id"], units=D("25.5"), idempotencyKey="topup-1")
    again = client.credit_balances.topup(subscription["id"], units=D("25.5"), idempotencyKey="topup-1")
    assert (first["created"], again["created"], again["grantId"]) == (True, False, first["grantId"])
    balance = client.credit_balances.get(subscription["id"])
    assert (balance["poolSizeUnits"], balance["consumedUnits"]) == (100, 30)
    assert balance["remainingUnits"] == D("95.5")  # 100 - 30 + 25.5
    assert [row["subscriptionId"] for row in client.credit_balances.list()["balances"]] == [subscription["id"]]
    with pytest.raises(ConflictError) as conflict:
        client.credit_balances.topup(subscription["id"], units=1, idempotencyKey="topup-1")
    assert conflict.value.status == 409 and "idempotencyKey" in str(conflict.value)


def test_a_walk_yields_each_row_once_while_rows_are_created_ahead_of_it(client, service):
    # Newest first, paged by offset: the customer created after the first page pushed the rest down one row, and the
    # second page began with the first page's last row, yielded twice.
    for number in range(5):
        client.customers.create(name=f"Customer {number}", externalId=f"walk-{number}")
    walk = iter(client.customers.iter(limit=2))
    seen = [next(walk)["externalId"], next(walk)["externalId"]]
    client.customers.create(name="Newest", externalId="walk-new")
    seen += [row["externalId"] for row in walk]
    assert len(seen) == len(set(seen)) and set(seen) >= {f"walk-{number}" for number in range(5)}


def test_every_list_shape_is_paged_through_to_its_last_row(client, service):
    for number in range(5):
        client.customers.create(name=f"Customer {number}", externalId=f"ext-{number}")
    page = client.customers.list(limit=2)  # bare array + X-Total-Count
    assert (len(page), page.total, page.has_more) == (2, 5, True)
    assert sorted(c["externalId"] for c in page.auto_paging_iter()) == [f"ext-{n}" for n in range(5)]
    assert len(list(client.customers.iter())) == 5

    for number in range(3):
        client.plans.create(name=f"Plan {number}")
    plans = client.plans.list(limit=2)  # {results, page, limit, totalPages, totalResults}
    assert (len(plans), plans.total, plans.has_more) == (2, 3, True)
    assert len(list(plans.auto_paging_iter())) == 3

    for number in range(5):
        ServiceEntry.objects.create(external_id=f"client-test:paging-{service.org.pk}-{number}",
                                    canonical_name=f"paging-model-{number}", display_name=f"Paging {number}",
                                    provider=f"paging-{service.org.pk}", service_type="chat", source="curated")
    catalog = client.services.list(provider=f"paging-{service.org.pk}", limit=3)  # {data, pagination}
    assert (len(catalog), catalog.total, catalog.has_more) == (3, 5, True)
    assert [entry["canonicalName"] for entry in catalog.auto_paging_iter()] == [
        f"paging-model-{number}" for number in range(5)]

    assert client.invoices.list(limit=1).items == []  # {data, hasMore}
    assert client.invoices.list(limit=1).has_more is False


def test_exact_decimals_go_out_and_come_back_as_written(client):
    client.usage.record([{"customerExternalId": "exact", "agentCode": "bot", "signalName": "pages",
                          "model": "gpt-4o-mini", "modelProvider": "openai",
                          "quantity": D("12345678.123456789"), "metadata": {"ratio": D("0.1")}}])
    [event] = client.events.list(customerExternalId="exact")
    assert event["quantity"] == "12345678.123456789"  # a decimal string, never through a float
    assert event["metadata"] == {"ratio": D("0.1")}


def test_errors_are_typed_and_carry_the_spec_message_code_and_status(client, service, kind):
    with pytest.raises(NotFoundError) as missing:
        client.customers.get("00000000-0000-0000-0000-000000000000")
    assert (missing.value.status, missing.value.message) == (404, "Customer not found")

    client.customers.create(name="One", externalId="dup")
    with pytest.raises(ConflictError) as duplicate:
        client.customers.create(name="Two", externalId="dup")
    assert duplicate.value.status == 409 and "externalId" in str(duplicate.value)

    with pytest.raises(BadRequestError) as invalid:
        client.agents.create(name="x" * 300, agentCode="too-long")
    assert isinstance(invalid.value.message, list) and invalid.value.messages[0].startswith("name:")

    with open_client(kind, service.key_for(key_type="publishable"), base_url=service.url) as publishable:
        with pytest.raises(PermissionDeniedError):
            publishable.customers.create(name="Nope")
        assert publishable.verify()["verified"] is True

    revoked_key = service.key_for()
    api_key_revoke_raw(raw_key=revoked_key, now=clock.now())
    with pytest.raises(KeyRevokedError) as revoked:
        with open_client(kind, revoked_key, base_url=service.url) as revoked_client:
            revoked_client.verify()
    assert isinstance(revoked.value, AuthenticationError) and revoked.value.code == "key_revoked"


def test_a_429_raises_with_its_retry_after_once_retries_are_spent(service, kind, settings, monkeypatch):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    frozen = time.time()  # both requests in one of the limiter's minutes
    monkeypatch.setattr(throttling, "time", type("Clock", (), {"time": staticmethod(lambda: frozen)}))
    with open_client(kind, service.key, base_url=service.url, max_retries=0) as client:
        client.verify()
        with pytest.raises(RateLimitError) as limited:
            client.customers.list()
    assert limited.value.status == 429 and 1 <= limited.value.retry_after <= 60


def test_a_plan_change_is_scheduled_and_withdrawn_through_the_client(client):
    client.usage.record([{"customerExternalId": "cust-move", "agentCode": "move-bot", "signalName": "calls",
                          "model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 10}])
    customer = next(client.customers.iter(externalId="cust-move"))
    agent = next(client.agents.iter(agentCode="move-bot"))
    starter = client.plans.create(name="Starter", agentId=agent["id"])
    pro = client.plans.create(name="Pro", agentId=agent["id"])
    current = client.subscriptions.create(name="Move", planId=starter["id"], agentId=agent["id"],
                                          customerId=customer["id"], startDate="2025-01-01")
    scheduled = client.subscriptions.change_plan(current["id"], planId=pro["id"], effectiveAt="2099-01-01",
                                                 seatsCount=3)
    assert (scheduled["status"], scheduled["previousSubscriptionId"], scheduled["seatsCount"]) == (
        "upcoming", current["id"], 3)
    assert client.subscriptions.get(current["id"])["nextSubscriptionId"] == scheduled["id"]
    restored = client.subscriptions.withdraw_plan_change(current["id"])
    assert (restored["nextSubscriptionId"], restored["endDate"]) == (None, None)
    with pytest.raises(NotFoundError):
        client.subscriptions.get(scheduled["id"])


def test_an_async_page_iterates_across_several_pages(service):
    async def scenario():
        async with AsyncClient(service.key, base_url=service.url) as client:
            for number in range(5):
                await client.customers.create(name=f"Customer {number}", externalId=f"ext-{number}")
            first = await client.customers.list(limit=2)
            second = await first.next_page()
            walked = [customer.external_id async for customer in first.auto_paging_iter()]
            streamed = [customer["externalId"] async for customer in client.customers.iter(limit=2)]
            for number in range(3):
                await client.plans.create(name=f"Plan {number}")
            plans = [plan.name async for plan in (await client.plans.list(limit=1)).auto_paging_iter()]
            return first, second, walked, streamed, plans

    first, second, walked, streamed, plans = asyncio.run(scenario())
    assert (len(first), first.total, first.has_more, len(second)) == (2, 5, True, 2)
    assert sorted(walked) == sorted(streamed) == [f"ext-{number}" for number in range(5)]  # three pages of two
    assert sorted(plans) == ["Plan 0", "Plan 1", "Plan 2"]  # {results, ...}: three pages of one
