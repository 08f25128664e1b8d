"""Exact numbers through HTTP (contract.md "Exact numbers in"; docs/decisions/numbers.md): a JSON number is read
as the decimal it spells, stored and priced as written, refused rather than rounded beyond what is stored, and
written back from its own digits. Bodies are sent as raw JSON text, so that every digit reaches the service."""
import json
import re
from decimal import Decimal

import pytest
from django.db import connection

from billing.models import PricingStrategy
from core.money import SUMS
from customers.models import UsageEvent
from tests.billing.support import create_subscription, flat_usage, ok, tiered
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db

D = Decimal
# 20 significant digits: binary floating point keeps about 17 of them.
QUANTITY = "12345678.123456789"
RATE_20_DIGITS = "12345678.901234567891"
BOUND_20_DIGITS = "1234567890.1234567891"
# 13 decimal places that a float hides: its nearest double prints as 1234567.123456789 (9 places).
THIRTEEN_PLACES = "1234567.1234567890123"
# 341 decimal places: one more than a quantity keeps (the smallest double printed with 17 significant digits,
# 4.9406564584124654e-324, reaches the 340th).
BEYOND_ANY_FLOAT = "1234567." + "1234567890" * 34 + "1"


@pytest.fixture
def search_api(db):
    """$0.005 per request."""
    return ServiceEntryFactory(canonical_name="acme-search", provider="acmesearch", input_cost=D("0.005"),
                               cost_unit="request", service_type="search", is_api=True)


def raw_json(value, **literals) -> str:
    """`value` as JSON text, each string "@name" replaced by the raw JSON literal `literals[name]`."""
    text = json.dumps(value)
    for name, literal in literals.items():
        text = text.replace(f'"@{name}"', literal)
    return text


def post_raw(api, path: str, text: str):
    return api.post(path, text, format=None, content_type="application/json")


def exact(resp):
    """The body parsed with every number exact."""
    return json.loads(resp.content, parse_float=Decimal)


def record(service=None, **fields) -> dict:
    body = {"customerExternalId": "cust-1", "agentCode": "support-bot", "signalName": "searches"}
    if service is not None:
        body.update(model=service.canonical_name, modelProvider=service.provider)
    return {**body, **fields}


def record_raw(api, *records, **literals):
    return post_raw(api, "/v1/usage/record", raw_json({"records": list(records)}, **literals))


# --------------------------------------------------------------------------- quantities


def test_a_quantity_is_stored_priced_and_listed_exactly_as_written(api, search_api):
    resp = record_raw(api, record(search_api, quantity="@q"), q=QUANTITY)
    entry, = ok(resp)["results"]["success"]
    assert entry["totalCostUsd"] == "61728.390617283945"  # 12345678.123456789 x 0.005, every digit
    event = UsageEvent.objects.get(pk=entry["eventId"])
    assert (event.quantity, event.usage_cost) == (D(QUANTITY), D("61728.390617283945"))
    row, = ok(api.get("/v1/events"))
    assert (row["quantity"], row["usageCost"]) == (QUANTITY, "61728.390617283945")


@pytest.mark.parametrize("place, message", [
    ("top", "quantity: Ensure there are no more than 340 decimal places."),
    ("service", "services[0].quantity: Ensure there are no more than 340 decimal places."),
])
def test_a_quantity_beyond_340_decimal_places_fails_alone_never_rounded(api, search_api, place, message):
    if place == "top":
        refused = record(search_api, quantity="@q")
    else:
        refused = record(services=[{"model": search_api.canonical_name, "modelProvider": search_api.provider,
                                    "quantity": "@q"}])
    resp = record_raw(api, record(search_api, quantity=2), refused, record(search_api, quantity="0.5"),
                      q=BEYOND_ANY_FLOAT)
    body = ok(resp)
    assert (body["processed"], body["successful"], body["failed"]) == (3, 2, 1)
    failure, = body["results"]["failed"]
    assert (failure["index"], failure["code"], failure["stored"], failure["message"]) == (
        1, "invalid_record", False, [message])
    assert sorted(UsageEvent.objects.values_list("quantity", flat=True)) == [D("0.5"), D(2)]


@pytest.mark.parametrize("field", ["quantity", "metadata"])
def test_an_integer_longer_than_python_converts_fails_its_record_alone(api, search_api, field):
    """4,301 digits: Python's int() refuses the text (its conversion limit), which had made the whole body
    malformed and lost its other records (contract: "only beyond that does the record fail alone")."""
    refused = record(search_api, quantity="@n") if field == "quantity" else record(search_api, metadata={"n": "@n"})
    resp = record_raw(api, record(search_api, quantity=2), refused, n="9" * 4301)
    body = ok(resp)
    assert (body["successful"], body["failed"]) == (1, 1)
    failure, = body["results"]["failed"]
    assert (failure["index"], failure["stored"]) == (1, False)
    assert failure["message"][0].startswith(f"{field}")
    assert list(UsageEvent.objects.values_list("quantity", flat=True)) == [D(2)]


# --------------------------------------------------------------------------- metadata

def test_metadata_numbers_are_stored_and_returned_with_the_digits_sent(api, search_api):
    metadata = {"small": "@small", "wide": "@wide", "trailing": "@trailing", "tiny": "@tiny", "big": "@big",
                "huge": "@huge", "count": 3}
    resp = record_raw(api, record(search_api, metadata=metadata), small="0.1", wide="12345678901234567890.123",
                      trailing="1.50", tiny="1e-7", big=str(2**70), huge="1e400")
    entry, = ok(resp)["results"]["success"]

    digits = {"small": "0.1", "wide": "12345678901234567890.123", "trailing": "1.50", "tiny": "0.0000001",
              "big": str(2**70), "huge": "1" + "0" * 400, "count": "3"}
    with connection.cursor() as cursor:  # what the jsonb column holds (PostgreSQL writes `"key": value`)
        cursor.execute("SELECT metadata::text FROM customers_usageevent WHERE id = %s", [entry["eventId"]])
        stored_text = cursor.fetchone()[0]
    answered = api.get("/v1/events").content.decode()  # what GET answers, byte for byte
    for key, number in digits.items():
        assert re.search(rf'"{key}": {number}[,}}]', stored_text), key
        assert re.search(rf'"{key}":{number}[,}}]', answered), key
    assert UsageEvent.objects.get().metadata["wide"] == D("12345678901234567890.123")


@pytest.mark.parametrize("literal", ["1e1000", "-1e1000", "1e-1001", "1" + "0" * 1000])
def test_a_metadata_number_beyond_1000_digits_fails_alone(api, search_api, literal):
    resp = record_raw(api, record(search_api), record(search_api, metadata={"n": "@n"}), n=literal)
    failure, = ok(resp)["results"]["failed"]
    assert failure["index"] == 1 and failure["message"][0].startswith("metadata.n: ")  # the place inside it
    assert UsageEvent.objects.count() == 1


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize("path, body", [
    ("/v1/usage/record", {"records": [record(quantity="@n")]}),
    ("/v1/usage/record", {"records": [record(metadata={"n": "@n"}, model="m", modelProvider="p")]}),
    ("/v1/customers", {"name": "x", "metadata": {"n": "@n"}}),
])
def test_nan_and_infinity_are_a_400_anywhere_in_a_body(api, literal, path, body):
    resp = post_raw(api, path, raw_json(body, n=literal))
    assert resp.status_code == 400, resp.content
    assert resp.json()["message"].startswith("Malformed JSON body: ")
    assert not UsageEvent.objects.exists()


# --------------------------------------------------------------------------- pricing terms

def test_a_rate_and_tier_bounds_of_20_significant_digits_are_stored_and_returned_exactly(api, chain):
    flat, graduated = ok(post_raw(api, f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies", raw_json([
        flat_usage(chain, rate="@rate"),
        tiered(chain, "graduated", [{"lower": 0, "upper": "@bound", "rate": "0.1"},
                                    {"lower": "@bound", "upper": None, "rate": "@rate"}]),
    ], rate=RATE_20_DIGITS, bound=BOUND_20_DIGITS)), 201)
    assert PricingStrategy.objects.get(pk=flat["id"]).rate == D(RATE_20_DIGITS)
    assert PricingStrategy.objects.get(pk=graduated["id"]).tiers == [
        {"lower": "0", "upper": BOUND_20_DIGITS, "rate": "0.1"},
        {"lower": BOUND_20_DIGITS, "upper": None, "rate": RATE_20_DIGITS}]
    answered = api.get(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{graduated['id']}")
    assert f'"upper":{BOUND_20_DIGITS},"rate":0.1' in answered.content.decode()
    assert exact(answered)["tiers"][1] == {"lower": D(BOUND_20_DIGITS), "upper": None, "rate": D(RATE_20_DIGITS)}


@pytest.mark.parametrize("rate, units, billed", [
    ("0.7364981736459815", "10", "7.36"),            # a float printed in full: 16 places, 10 units 7.364981736459815
    (THIRTEEN_PLACES, "1", "1234567.12"),
    ("1.2345678901234567e-05", "400000", "4.94"),  # 21 places: 4.9382715604938268
])
def test_a_rate_of_every_digit_a_client_prints_is_stored_and_priced_as_written(api, chain, search_api, rate, units,
                                                                                billed):
    """contract.md "Exact numbers in": a rate or tier bound is stored and priced as written, with the places a
    client prints for a float (a 12-place cap refused `0.7364981736459815`); nothing is rounded before the line."""
    [strategy] = ok(post_raw(api, f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies",
                             raw_json([flat_usage(chain, rate="@rate")], rate=rate)), 201)
    assert PricingStrategy.objects.get(pk=strategy["id"]).rate == D(rate)
    assert exact(api.get(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{strategy['id']}"))["rate"] == D(rate)
    subscription = create_subscription(api, chain, startDate="2025-01-01T00:00:00Z")
    recorded = ok(record_raw(api, {"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
                        "signalName": chain.signal.name, "model": search_api.canonical_name,
                        "modelProvider": search_api.provider, "quantity": "@q", "usageDate": "2025-05-12T10:00:00Z"},
                  q=units))
    assert not recorded["results"]["failed"]
    invoice = ok(api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                    "subscriptionId": subscription["id"],
                                                    "billingPeriodStart": "2025-05-01T00:00:00Z",
                                                    "billingPeriodEnd": "2025-06-01T00:00:00Z"}), 201)
    assert D(str(invoice["total"])) == D(billed)


def test_a_rate_beyond_340_decimal_places_is_a_400_naming_it(api, chain):
    resp = post_raw(api, f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies",
                    raw_json([flat_usage(chain, rate="@rate")], rate=BEYOND_ANY_FLOAT))
    assert resp.status_code == 400
    assert resp.json()["message"] == ["[0].rate: Ensure that there are no more than 340 decimal places."]
    assert not PricingStrategy.objects.exists()


def test_terms_beyond_10_to_the_16_are_a_400_naming_them(api, chain):
    resp = post_raw(api, f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies",
                    raw_json([flat_usage(chain, rate="@rate")], rate="12345678901234567.5"))
    assert resp.status_code == 400
    assert resp.json()["message"] == ["[0].rate: Ensure that there are no more than 16 digits before the decimal "
                                      "point."]


def test_a_top_up_a_cap_and_a_prorated_amount_keep_every_digit(api, chain):
    from billing.models import CreditGrant, Subscription
    from controls.models import SpendCap
    from tests.billing.pools import pool_subscription, topup
    subscription = pool_subscription(api, chain, proratedAmount=D("0.30000000000000004"))
    assert Subscription.objects.get(pk=subscription["id"]).prorated_amount == D("0.30000000000000004")
    ok(post_raw(api, f"/v1/subscriptions/{subscription['id']}/credit-topup",
                raw_json({"units": "@u", "idempotencyKey": "t-1"}, u="0.016666666666666666")), 201)
    assert CreditGrant.objects.get(kind="topup").units == D("0.016666666666666666")
    cap = ok(post_raw(api, "/v1/control/caps", raw_json({"scope": "org", "providerScope": "all", "amountUsd": "@a",
                                                         "period": "month", "mode": "enforce"},
                                                        a="123.45678901234567")), 201)
    assert SpendCap.objects.get(pk=cap["id"]).amount_usd == D("123.45678901234567")


# --------------------------------------------------------------------------- answers

def test_cost_and_revenue_answers_carry_every_digit(api, chain, search_api):
    """Quantity 12345678.123456789 of a $0.005 service under a flat 0.25 strategy: cost 61728.390617283945 and
    Agent-Earned 3086419.53086419725, 17 and 18 significant digits, more than a float prints."""
    plan_id = chain.plan["id"]
    ok(api.post(f"/v1/pricing-plans/{plan_id}/pricing-strategies", [flat_usage(chain, rate="0.25")]), 201)
    create_subscription(api, chain, startDate="2025-01-01T00:00:00Z")
    recorded = ok(record_raw(api, {"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
                        "signalName": chain.signal.name, "model": search_api.canonical_name,
                        "modelProvider": search_api.provider, "quantity": "@q", "usageDate": "2025-05-12T10:00:00Z"},
                  q=QUANTITY))
    window = {"startDate": "2025-05-01", "endDate": "2025-05-31"}

    cost = api.get("/v1/analytics/cost", window)
    assert re.search(rb'"cost":61728\.390617283945\b', cost.content), cost.content[:300]
    assert exact(cost)["cost"] == D("61728.390617283945")
    revenue = api.get("/v1/analytics/revenue", window)
    assert re.search(rb'"agentEarned":3086419\.53086419725\b', revenue.content), revenue.content[:300]
    assert exact(revenue)["agentEarned"] == D("3086419.53086419725")


def test_revenue_and_mrr_keep_every_digit_of_a_product_past_28(api, chain, search_api):
    """98765.4321101765430000012346078901234567 units at a rate of 0.7364981736459815: Agent-Earned is their exact
    product, 56 significant digits; adding it to a figure in the default context cut it to 28."""
    quantity, rate = "98765.4321101765430000012346078901234567", "0.7364981736459815"
    plan_id = chain.plan["id"]
    ok(api.post(f"/v1/pricing-plans/{plan_id}/pricing-strategies", [flat_usage(chain, rate=rate)]), 201)
    subscription = create_subscription(api, chain, startDate="2025-01-01T00:00:00Z")
    recorded = ok(record_raw(api, {"customerExternalId": chain.customer.external_id,
                                   "agentCode": chain.agent.agent_code, "signalName": chain.signal.name,
                                   "model": search_api.canonical_name, "modelProvider": search_api.provider,
                                   "quantity": "@q", "usageDate": "2025-05-12T10:00:00Z"}, q=quantity))
    assert recorded["successful"] == 1
    earned = SUMS.multiply(D(quantity), D(rate))
    assert len(earned.as_tuple().digits) > 50
    window = {"startDate": "2025-05-01", "endDate": "2025-05-31"}
    revenue = exact(api.get("/v1/analytics/revenue", window))
    assert (revenue["agentEarned"], revenue["revenue"]) == (earned, earned)
    by_subscription = exact(api.get(f"/v1/subscriptions/{subscription['id']}/revenue", window))
    assert [row["agentEarned"] for row in by_subscription["byStrategy"]] == [earned]


def test_a_value_is_stored_with_the_places_it_was_written_with_not_padded(api, chain):
    """`0.25` is stored and sent as 0.25: padded to the places a value may have, it went out with 338 zeros."""
    [strategy] = ok(post_raw(api, f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies",
                             raw_json([flat_usage(chain, rate="@rate")], rate="0.25")), 201)
    assert str(PricingStrategy.objects.get(pk=strategy["id"]).rate) == "0.25"
    assert b'"rate":0.25,' in api.get(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{strategy['id']}"
                                      ).content


def test_a_percent_of_many_places_is_applied_exactly_before_the_cent_is_rounded():
    """1000.04 at 12.4999999999999999999999999999% is 125.0049999...: 125.00. At Decimal's default 28 digits the
    product rounded up to 12500.5 first, and the tax to 125.01."""
    from billing.pricing.engine import Discount, invoice_totals
    percent = D("12.4999999999999999999999999999")
    assert invoice_totals([D("1000.04")], tax_percent=percent).tax == D("125.00")
    assert invoice_totals([D("1000.04")], discount=Discount(percent=percent)).discount == D("125.00")


def test_a_pool_stage_is_passed_exactly_for_a_pool_size_of_many_digits():
    """Half of a pool of 1000.0000000000000000000000000001 is not used by 500.00000000000000000000000000004: at 28
    digits both sides of the comparison rounded to 50000 and the 50% stage was recorded and emailed."""
    from billing.services.credit_pools import stages_passed
    size, used = D("1000.0000000000000000000000000001"), D("500.00000000000000000000000000004")
    from core.money import SUMS
    assert stages_passed(remaining=SUMS.subtract(size, used), pool_size=size) == []
    assert stages_passed(remaining=SUMS.subtract(size, SUMS.multiply(size, D("0.5"))), pool_size=size) == [50]
