"""Numeric bounds end to end (docs/decisions/usage-recording.md "Numeric bounds"): a record at the maximum of
every numeric field is stored, priced, rolled up and read; one beyond a maximum fails alone (`out_of_range`,
not stored) and nothing answers 500, not the next batch, not analytics, not the scheduled jobs."""
from datetime import datetime, timezone
from decimal import ROUND_DOWN, Context, Decimal as D

import pytest
from rest_framework.test import APIClient
from django.core.management import call_command

from billing.record_validation import MAX_QUANTITY, MAX_TOKENS
from catalog.event_pricing import MAX_EVENT_COST
from core import exact_json
from catalog.models import ServiceEntry
from customers.models import Customer, UsageEvent
from customers.rollup import analytics_rollup_rebuild
from tests.factories import ServiceEntryFactory, UsageEventFactory

pytestmark = pytest.mark.django_db

DAY = "2026-11-02"


@pytest.fixture
def cheap_llm(db):
    """Every token at $0.25 per million: four counts at their maximum cost exactly the event maximum."""
    rate = MAX_EVENT_COST / (4 * MAX_TOKENS)
    return ServiceEntryFactory(canonical_name="bound-llm", provider="boundai", input_cost=rate, output_cost=rate,
                               cache_read_cost=rate, cache_write_cost=rate)


@pytest.fixture
def per_unit(db):
    """A rate per request at which the maximum quantity costs the event maximum (to 12 places)."""
    rate = Context(prec=28, rounding=ROUND_DOWN).divide(MAX_EVENT_COST, MAX_QUANTITY)
    return ServiceEntryFactory(canonical_name="bound-api", provider="boundapi", cost_unit="request",
                               input_cost=rate, service_type="search", is_api=True)


@pytest.fixture
def free_api(db):
    return ServiceEntryFactory(canonical_name="free-api", provider="boundapi", input_cost=D(0), cost_unit="request",
                               service_type="search", is_api=True)


def at_maximum(cheap_llm, per_unit, customer="cust-max"):
    llm = {"model": cheap_llm.canonical_name, "modelProvider": cheap_llm.provider, "inputTokens": MAX_TOKENS,
           "outputTokens": MAX_TOKENS, "cacheReadTokens": MAX_TOKENS, "cacheWriteTokens": MAX_TOKENS}
    base = {"customerExternalId": customer, "agentCode": "bot", "signalName": "jobs", "usageDate": f"{DAY}T12:00:00Z"}
    return [
        {**base, **llm, "quantity": MAX_QUANTITY},
        {**base, "model": per_unit.canonical_name, "modelProvider": per_unit.provider, "quantity": MAX_QUANTITY},
        {**base, "quantity": MAX_QUANTITY, "services": [
            {**llm}, {"model": "free-api", "modelProvider": "boundapi", "quantity": MAX_QUANTITY}]},
    ]


def post(api, records):
    resp = api.post("/v1/usage/record", {"records": records})
    assert resp.status_code == 200, resp.content
    return resp.json()


def test_records_at_every_maximum_are_stored_and_the_next_batch_and_analytics_still_answer(
        api, cheap_llm, per_unit, free_api):
    first = post(api, at_maximum(cheap_llm, per_unit))
    assert (first["successful"], first["failed"]) == (3, 0), first
    assert [entry["totalCostUsd"] for entry in first["results"]["success"]] == ["1000000"] * 3
    second = post(api, at_maximum(cheap_llm, per_unit) + at_maximum(cheap_llm, per_unit, customer="cust-other"))
    assert (second["successful"], second["failed"]) == (6, 0)

    usage = api.get("/v1/analytics/usage", {"startDate": DAY, "endDate": DAY})
    assert usage.status_code == 200, usage.content
    summary = exact_json.loads(usage.content.decode())["summary"]  # past what a float holds: read exactly
    assert (summary["totalEvents"], D(str(summary["totalQuantity"])), D(str(summary["totalCost"]))) \
        == (9, 9 * MAX_QUANTITY, 9 * MAX_EVENT_COST)
    cost = api.get("/v1/analytics/cost", {"startDate": DAY, "endDate": DAY})
    assert cost.status_code == 200, cost.content
    assert D(str(cost.json()["cost"])) == 9 * MAX_EVENT_COST
    call_command("run_scheduled_jobs", stdout=open("/dev/null", "w"))


@pytest.mark.parametrize("beyond, message", [
    ({"inputTokens": MAX_TOKENS + 1}, f"inputTokens: Must be at most {MAX_TOKENS} (the documented maximum)."),
    ({"cacheWriteTokens": 2**63}, f"cacheWriteTokens: Must be at most {MAX_TOKENS} (the documented maximum)."),
    ({"quantity": "1.7976931348623158e308"},  # the largest binary float and one unit of its last digit
     f"quantity: Must be at most {MAX_QUANTITY} (the documented maximum)."),
    ({"quantity": 10**309}, f"quantity: Must be at most {MAX_QUANTITY} (the documented maximum)."),
    ({"quantity": "1e400"}, f"quantity: Must be at most {MAX_QUANTITY} (the documented maximum)."),
    ({"services": [{"model": "bound-llm", "modelProvider": "boundai", "outputTokens": MAX_TOKENS + 1}],
      "model": None, "modelProvider": None},
     f"services[0].outputTokens: Must be at most {MAX_TOKENS} (the documented maximum)."),
])
def test_a_record_beyond_a_maximum_fails_alone_as_out_of_range(api, cheap_llm, per_unit, free_api, beyond, message):
    records = at_maximum(cheap_llm, per_unit)
    records[0] = {**records[0], **beyond}
    records[0] = {name: value for name, value in records[0].items() if value is not None}
    if "services" in beyond:
        records[0] = {name: value for name, value in records[0].items() if not name.endswith("Tokens")}
    body = post(api, records)
    assert (body["successful"], body["failed"]) == (2, 1)
    failure = body["results"]["failed"][0]
    assert (failure["index"], failure["code"], failure["stored"], failure["message"]) \
        == (0, "out_of_range", False, [message])
    assert UsageEvent.objects.count() == 2
    assert api.get("/v1/analytics/usage", {"startDate": DAY, "endDate": DAY}).status_code == 200


@pytest.mark.parametrize("quantity", ["12345678901234567", "98765432109.876543", "1234567890123456.7",
                                      "0.30000000000000004", "1e+20", "1000000000000000000000", "1e+22",
                                      "1.2345678901234567e+300", "1.7976931348623157e+308", "1e-30",
                                      "1.2345678901234567e-15", "2.2250738585072014e-308", "5e-324",
                                      "4.9406564584124654e-324"])
def test_seventeen_significant_digits_are_kept_at_any_size_a_client_prints(api, free_api, quantity):
    # Contract "Exact numbers in": a quantity keeps every digit a client prints for a binary float (at least 17
    # significant digits); only beyond that may a record fail. Sent as JSON numbers, as a client's encoder writes.
    body = ('{"records": [{"customerExternalId": "c", "agentCode": "bot", "signalName": "jobs", "model": '
            f'"free-api", "modelProvider": "boundapi", "quantity": {quantity}, "usageDate": "{DAY}T12:00:00Z"}}]}}')
    resp = APIClient.post(api, "/v1/usage/record", body, content_type="application/json")
    assert resp.status_code == 200, resp.content
    entry = resp.json()["results"]["success"][0]
    assert UsageEvent.objects.get(pk=entry["eventId"]).quantity == D(quantity)
    # the answers read as exactly as they are written (a float would keep 15-17 digits of them)
    events = exact_json.loads(api.get("/v1/events", {"startDate": DAY, "endDate": DAY}).content.decode())
    assert D(events[0]["quantity"]) == D(quantity)  # a decimal string
    usage = exact_json.loads(api.get("/v1/analytics/usage", {"startDate": DAY, "endDate": DAY}).content.decode())
    assert D(str(usage["summary"]["totalQuantity"])) == D(quantity)


def test_an_event_costing_more_than_the_maximum_fails_alone_and_provisions_nothing(api, cheap_llm, per_unit,
                                                                                 free_api):
    expensive = {"customerExternalId": "cust-expensive", "agentCode": "bot", "signalName": "jobs",
                 "model": "gpt-4o", "modelProvider": "openai", "outputTokens": MAX_TOKENS}  # $10 per million
    body = post(api, [expensive, *at_maximum(cheap_llm, per_unit)[1:]])
    assert (body["successful"], body["failed"]) == (2, 1)
    failure = body["results"]["failed"][0]
    assert (failure["code"], failure["stored"]) == ("out_of_range", False)
    assert failure["message"] == ["usageCost: 10000000 USD is more than the 1000000 USD one event may cost (the "
                                  "documented maximum); the record is not stored."]
    assert not Customer.objects.filter(external_id="cust-expensive").exists()


def test_a_mix_of_invalid_and_out_of_range_fields_is_an_invalid_record(api, cheap_llm, per_unit, free_api):
    record = {**at_maximum(cheap_llm, per_unit)[0], "inputTokens": MAX_TOKENS + 1, "outputTokens": -1}
    failure = post(api, [record])["results"]["failed"][0]
    assert (failure["code"], failure["stored"]) == ("invalid_record", False)


def test_the_rollup_and_analytics_hold_sums_past_any_column_of_an_event(api, book):
    """Events at the largest cost their column holds: their sum (3 x 10^16 - 3) is past 16 integer digits, and
    the rollup and the reads keep it exact."""
    biggest = D(10**16) - 1
    when = datetime(2026, 11, 2, 12, tzinfo=timezone.utc)
    events = [UsageEventFactory(book=book, usage_date=when, usage_cost=biggest, quantity=biggest) for _ in range(3)]
    customer = events[0].customer
    UsageEvent.objects.filter(pk__in=[e.pk for e in events[1:]]).update(customer=customer)
    analytics_rollup_rebuild(book=book)
    summary = api.get("/v1/analytics/usage", {"startDate": DAY, "endDate": DAY}).json()["summary"]
    assert (D(str(summary["totalCost"])), D(str(summary["totalQuantity"]))) == (3 * biggest, 3 * biggest)
    call_command("run_scheduled_jobs", stdout=open("/dev/null", "w"))


def test_a_period_of_more_units_than_ever_before_is_invoiced_exactly(api, book, free_api):
    # One record may carry 10^21 units: an invoice line holds any quantity (unbounded numeric); only amounts
    # are bounded (cents, 10^12 USD).
    from tests.billing.invoice_support import billing_chain

    chain = billing_chain(api, book, [{"chargeType": "usage", "pricingModel": "flat", "rate": "0.000000000001"}],
                          start="2026-11-01T00:00:00Z")
    record = {"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
              "signalName": chain.signal.name, "model": "free-api", "modelProvider": "boundapi",
              "usageDate": f"{DAY}T10:00:00Z"}
    body = post(api, [{**record, "quantity": 10**20}, {**record, "quantity": "0.5"}])
    assert body["successful"] == 2, body
    resp = api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                              "subscriptionId": chain.subscription["id"],
                                              "billingPeriodStart": "2026-11-01T00:00:00Z",
                                              "billingPeriodEnd": "2026-12-01T00:00:00Z"})
    assert resp.status_code == 201, resp.content
    invoice = exact_json.loads(resp.content.decode())
    [line] = invoice["lines"]
    assert D(str(line["quantity"])) == D("100000000000000000000.5")
    assert D(str(line["amount"])) == D("100000000.00")  # 10^20.5 x 10^-12, to cents
    assert D(str(invoice["total"])) == D("100000000.00")


def test_an_invoice_beyond_what_it_holds_is_a_422_naming_the_line_at_any_magnitude_and_dashboards_still_show(
        api, book, client, django_user_model):
    from accounts.services import member_ensure
    from tests.billing.invoice_support import billing_chain

    chain = billing_chain(api, book, [{"chargeType": "usage", "pricingModel": "flat",
                                       "rate": "9999999999999999.999999999999"}], start="2026-11-01T00:00:00Z")
    records = [{"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
                "signalName": chain.signal.name, "quantity": 10 ** 9, "usageDate": f"{DAY}T0{hour}:00:00Z",
                "services": [{"model": "free-api", "modelProvider": "boundapi", "quantity": 1}]}
               for hour in range(10)] + [{"customerExternalId": chain.customer.external_id,
                                          "agentCode": chain.agent.agent_code, "signalName": chain.signal.name,
                                          "quantity": 10 ** 9, "usageDate": f"{DAY}T11:00:00Z",
                                          "services": [{"model": "free-api", "modelProvider": "boundapi",
                                                        "quantity": 1}]}]
    ServiceEntryFactory(canonical_name="free-api", provider="boundapi", input_cost=D(0), cost_unit="request",
                        service_type="search", is_api=True)
    body = post(api, records)
    assert body["successful"] == 11, body
    for _ in range(2):  # the total is 1.1 x 10^26 dollars: far past what Decimal's default context quantizes
        resp = api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                  "subscriptionId": chain.subscription["id"],
                                                  "billingPeriodStart": "2026-11-01T00:00:00Z",
                                                  "billingPeriodEnd": "2026-12-01T00:00:00Z"})
        assert resp.status_code == 422, resp.content
        assert any(message.startswith("lines[0]") for message in resp.json()["message"]), resp.json()
    # The book's figures on the console's dashboard: for a superuser and for the organization's own staff.
    superuser = django_user_model.objects.create_superuser(email="root@ops.example", password="pw-root-console")
    staff = member_ensure(organization=book.organization, email="finance@acme.example", role="finance").user
    staff.is_staff = True
    staff.save()
    for user in (superuser, staff):
        client.force_login(user)
        page = client.get("/admin/", {"org": str(book.organization_id)})
        assert page.status_code == 200, page.content[:500]
    for path in ("/v1/analytics/revenue", "/v1/analytics/mrr?variant=all"):
        assert api.get(path).status_code == 200


@pytest.mark.parametrize("quantity", ["1e80", "1.7976931348623157e+308"])
def test_a_quantity_costing_past_any_column_fails_alone_and_a_mapped_unknown_model_stays_unpriced(api, quantity):
    # $0.005 a request: 10^80 requests cost 5 x 10^77 USD, past what 12 places hold in the cost engine's precision
    ServiceEntryFactory(canonical_name="paid-api", provider="boundapi", input_cost=D("0.005"), cost_unit="request",
                        service_type="search", is_api=True)
    base = '{"customerExternalId": "c", "agentCode": "bot", "signalName": "jobs", "usageDate": "%sT12:00:00Z", ' % DAY
    body = ('{"records": [' + base + '"model": "paid-api", "modelProvider": "boundapi", "quantity": %s}, '
            % quantity + base + '"model": "mystery-api", "modelProvider": "boundapi", "quantity": %s}]}' % quantity)
    resp = APIClient.post(api, "/v1/usage/record", body, content_type="application/json")
    assert resp.status_code == 200, resp.content
    costly, unknown = resp.json()["results"]["failed"]
    assert (costly["code"], costly["stored"]) == ("out_of_range", False)
    assert costly["message"][0].startswith("usageCost: ") and "more than the 1000000 USD" in costly["message"][0]
    assert (unknown["code"], unknown["stored"]) == ("unknown_model", True)
    mapped = api.post("/v1/events/map-model", {"model": "mystery-api", "modelProvider": "boundapi",
                                               "serviceId": str(ServiceEntry.objects.get(canonical_name="paid-api").pk)})
    assert mapped.status_code == 201, mapped.content
    assert UsageEvent.objects.get(pk=unknown["eventId"]).usage_cost is None  # still beyond what an event may cost
    assert api.get("/v1/analytics/cost", {"startDate": DAY, "endDate": DAY}).status_code == 200
