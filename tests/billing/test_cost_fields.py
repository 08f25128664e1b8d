"""A record's cost fields (contract.md "Cost fields of a record"): 1-hour cache writes and the provider's service
tier, priced as the provider bills them, in both record shapes; and the reviewed corrections of the price data
(docs/decisions/catalog.md). Costs worked by hand from the catalog's rates (USD per million tokens in comments)."""
from decimal import Decimal as D

import pytest

from accounts.models import Membership, User
from customers.models import UsageEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(client, org):
    user = User.objects.create_user(email="ops@acme.example.com", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


def send(api, *records):
    resp = api.post("/v1/usage/record", {"records": [
        {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "answers", **record} for record in records]})
    assert resp.status_code == 200, resp.json()
    return resp.json()["results"]


def cost(api, **record):
    results = send(api, record)
    assert results["failed"] == [], results["failed"]
    return results["success"][0]


# --------------------------------------------------------------------------- 1-hour cache writes

def test_one_hour_cache_writes_cost_what_anthropic_bills_not_the_five_minute_rate(api):
    # Claude Sonnet 4.5: 5-minute writes $3.75, 1-hour writes $6 (2x the $3 input) per million.
    sonnet = {"model": "claude-sonnet-4-5", "modelProvider": "anthropic"}
    assert cost(api, **sonnet, cacheWrite1hTokens=100_000)["totalCostUsd"] == "0.6"
    assert cost(api, **sonnet, cacheWriteTokens=100_000)["totalCostUsd"] == "0.375"
    both = cost(api, **sonnet, cacheWriteTokens=10_000, cacheWrite1hTokens=10_000, inputTokens=1000,
                outputTokens=1000)
    assert both["totalCostUsd"] == "0.1155"  # 0.0375 + 0.06 + 0.003 + 0.015
    event = UsageEvent.objects.get(pk=both["eventId"])
    assert (event.cache_write_tokens, event.cache_write_1h_tokens) == (10_000, 10_000)
    listed = api.get("/v1/events").json()[0]
    assert (listed["cacheWriteTokens"], listed["cacheWrite1hTokens"], listed["serviceTier"]) == (10_000, 10_000,
                                                                                                 "standard")
    # Both lifetimes count in the prompt: 100,000 of each puts it above 200k, where Sonnet 4.5 bills $7.50 and
    # $12 per million writes and $6 / $22.50 input and output.
    assert cost(api, **sonnet, cacheWriteTokens=100_000, cacheWrite1hTokens=100_000, inputTokens=1000,
                outputTokens=1000)["totalCostUsd"] == "1.9785"


def test_without_a_one_hour_rate_in_the_data_anthropic_bills_twice_the_input_rate_in_effect(api):
    # claude-sonnet-4-20250514 carries no 1-hour rate: 2 x $3 = $6 below 200k prompt tokens, 2 x $6 = $12 above.
    sonnet4 = {"model": "claude-sonnet-4-20250514", "modelProvider": "anthropic"}
    assert cost(api, **sonnet4, cacheWrite1hTokens=100_000)["totalCostUsd"] == "0.6"
    # 210,000 prompt tokens (10,000 input + 200,000 1-hour writes): $6 input, $12 1-hour writes.
    assert cost(api, **sonnet4, inputTokens=10_000, cacheWrite1hTokens=200_000)["totalCostUsd"] == "2.46"


def test_a_provider_without_cache_write_prices_bills_one_hour_writes_as_input(api):
    # gpt-4o publishes no cache-write price: writes of either lifetime bill at the $2.50 input rate.
    assert cost(api, model="gpt-4o", modelProvider="openai", cacheWrite1hTokens=100_000)["totalCostUsd"] == "0.25"


# --------------------------------------------------------------------------- service tiers

GPT_4O = {"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 1_000_000, "outputTokens": 100_000}


@pytest.mark.parametrize("tier, expected, at_standard", [
    ("standard", "3.5", False),   # $2.50 in, $10 out
    ("batch", "1.75", False),     # the data's batch rates: $1.25 in, $5 out
    ("priority", "5.95", False),  # the data's priority rates: $4.25 in, $17 out
    ("flex", "3.5", True),        # no flex rate for gpt-4o, no published flex discount: standard, and it says so
])
def test_a_service_tier_is_priced_at_that_tiers_rates(api, tier, expected, at_standard):
    entry = cost(api, **GPT_4O, serviceTier=tier)
    assert entry["totalCostUsd"] == expected
    event = api.get("/v1/events").json()[0]
    assert (event["serviceTier"], event["pricedAtStandardTier"]) == (tier, at_standard)
    assert event["usageCost"] == expected


def test_cache_reads_of_a_tier_where_no_cache_price_is_published_bill_as_that_tiers_input(api):
    # gpt-4o-2024-05-13 publishes no cached-input price at any tier: cached tokens are ordinary input, so on priority
    # they bill at the $8.75 priority input rate, not the $5 standard one (as LiteLLM prices them).
    entry = cost(api, model="gpt-4o-2024-05-13", modelProvider="openai", inputTokens=1_000_000,
                 cacheReadTokens=1_000_000, outputTokens=100_000, serviceTier="priority")
    assert entry["totalCostUsd"] == "20.125"  # 8.75 + 8.75 + 2.625 ($26.25 per million out)
    event = UsageEvent.objects.get(pk=entry["eventId"])
    assert event.priced_at_standard_tier is False
    # The same on flex for gpt-5.4-pro: $15 flex input for both, $90 flex output.
    assert cost(api, model="gpt-5.4-pro", modelProvider="openai", inputTokens=100_000, cacheReadTokens=100_000,
                outputTokens=10_000, serviceTier="flex")["totalCostUsd"] == "3.9"


def test_batch_without_rates_in_the_data_costs_the_providers_published_discount(api):
    # claude-mythos-preview has no batch rates in the data; Anthropic's Message Batches bill 50% of standard:
    # ($10 x 1M + $50 x 0.1M) / 2. gpt-4o's batch tier has no cache-read rate: 50% of the $1.25 standard one.
    mythos = {"model": "claude-mythos-preview", "modelProvider": "anthropic", "inputTokens": 1_000_000,
              "outputTokens": 100_000}
    assert cost(api, **mythos)["totalCostUsd"] == "15"
    assert cost(api, **mythos, serviceTier="batch")["totalCostUsd"] == "7.5"
    assert cost(api, model="gpt-4o", modelProvider="openai", cacheReadTokens=1_000_000,
                serviceTier="batch")["totalCostUsd"] == "0.625"
    # Google's discount on Vertex AI too, for its Gemini models and the partner models it sells: gemini-2.0-flash-001
    # at $0.15 in and $0.60 out, claude-3-5-sonnet-v2 at $3 and $15, no batch rates in the data.
    flash = {"model": "gemini-2.0-flash-001", "modelProvider": "vertex_ai", "inputTokens": 1_000_000,
             "outputTokens": 1_000_000}
    assert cost(api, **flash, serviceTier="batch")["totalCostUsd"] == "0.375"
    assert cost(api, model="claude-3-5-sonnet-v2@20241022", modelProvider="vertex_ai", inputTokens=1_000_000,
                outputTokens=100_000, serviceTier="batch")["totalCostUsd"] == "2.25"
    assert not UsageEvent.objects.filter(priced_at_standard_tier=True).exists()


def test_batch_at_a_provider_without_a_batch_price_is_standard_and_the_event_says_so(api, operator):
    entry = cost(api, model="deepseek-chat", modelProvider="deepseek", inputTokens=1_000_000, outputTokens=1_000_000,
                 serviceTier="batch", usageDate="2026-01-05T08:00:00Z")
    assert entry["totalCostUsd"] == "0.7"  # $0.28 + $0.42 (deepseek-chat has no off-peak price)
    event = UsageEvent.objects.get(pk=entry["eventId"])
    assert (event.service_tier, event.priced_at_standard_tier) == ("batch", True)
    page = operator.get("/admin/customers/usageevent/").content.decode()
    assert "no batch rate in the price data and no published batch discount" in page


def test_batch_above_a_long_context_threshold_takes_the_tiers_own_long_context_rates(api):
    # Gemini 2.5 Pro batch above 200k prompt tokens: $1.25 in, $7.50 out (the data's batch long-context rates).
    entry = cost(api, model="gemini-2.5-pro", modelProvider="google", inputTokens=250_000, outputTokens=10_000,
                 serviceTier="batch")
    assert entry["totalCostUsd"] == "0.3875"


def test_each_service_of_a_multi_service_record_has_its_own_tier_and_one_hour_writes(api):
    results = send(api, {"services": [
        {"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 1_000_000, "serviceTier": "batch"},
        {"model": "claude-sonnet-4-5", "modelProvider": "anthropic", "cacheWrite1hTokens": 100_000},
        {"model": "deepseek-chat", "modelProvider": "deepseek", "outputTokens": 1_000_000, "serviceTier": "flex"},
    ], "usageDate": "2026-01-05T08:00:00Z"})
    assert results["failed"] == []
    assert results["success"][0]["totalCostUsd"] == "2.27"  # 1.25 + 0.6 + 0.42
    event = api.get("/v1/events").json()[0]
    assert [(part["serviceTier"], part["cacheWrite1hTokens"], part["costUsd"], part["pricedAtStandardTier"])
            for part in event["services"]] == [("batch", None, "1.25", False), ("standard", 100_000, "0.6", False),
                                               ("flex", None, "0.42", True)]
    assert event["pricedAtStandardTier"] is True
    assert event["serviceTier"] is None  # each part says its own


@pytest.mark.parametrize("fields, message", [
    ({"serviceTier": "cheap"}, "serviceTier: Must be one of standard, batch, flex, priority."),
    ({"serviceTier": 1}, "serviceTier: Must be one of standard, batch, flex, priority."),
    ({"cacheWrite1hTokens": -1}, "cacheWrite1hTokens: Must be zero or more."),
    ({"cacheWrite1hTokens": 1.5}, "cacheWrite1hTokens: Must be a whole number of tokens."),
])
def test_bad_cost_fields_fail_their_record_alone(api, fields, message):
    results = send(api, {"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 10, **fields},
                   {"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 10})
    assert len(results["success"]) == 1
    failed = results["failed"][0]
    assert (failed["index"], failed["stored"], failed["message"]) == (0, False, [message])
    results = send(api, {"services": [{"model": "gpt-4o", "modelProvider": "openai", **fields}]})
    assert results["failed"][0]["message"] == [f"services[0].{message}"]


@pytest.mark.parametrize("field, value", [("cacheWrite1hTokens", 5), ("serviceTier", "batch")])
def test_a_cost_field_beside_services_fails_its_record_alone(api, field, value):
    results = send(api, {field: value, "services": [{"model": "gpt-4o", "modelProvider": "openai"}]},
                   {"services": [{"model": "gpt-4o", "modelProvider": "openai", field: value}]})
    assert [entry["index"] for entry in results["success"]] == [1]
    failed = results["failed"][0]
    assert (failed["index"], failed["stored"], failed["code"]) == (0, False, "invalid_record")
    assert failed["message"] == [f"{field}: Send {field} inside each service of services (multi-service shape), "
                                 f"not at the top level beside it."]
    # tokens beside services are still the mixed shape: the whole request is refused
    resp = api.post("/v1/usage/record", {"records": [{
        "customerExternalId": "c", "agentCode": "a", "signalName": "s", "inputTokens": 5,
        "services": [{"model": "gpt-4o", "modelProvider": "openai"}]}]})
    assert resp.status_code == 400 and "inputTokens" in resp.json()["message"][0]


# --------------------------------------------------------------------------- reviewed corrections

def test_claude_sonnet_4_5_above_200k_tokens_costs_anthropics_long_context_rates(api):
    # Anthropic's API above 200k prompt tokens: $6 in, $22.50 out (catalog/data/corrections.json); LiteLLM's data
    # has these for Bedrock and Vertex only, which priced this request at 0.765.
    sonnet = {"model": "claude-sonnet-4-5", "modelProvider": "anthropic"}
    assert cost(api, **sonnet, inputTokens=250_000, outputTokens=1000)["totalCostUsd"] == "1.5225"
    assert cost(api, **sonnet, inputTokens=200_000, outputTokens=1000)["totalCostUsd"] == "0.615"  # at the threshold
    # above it, 1-hour writes cost $12 and cache reads $0.60
    assert cost(api, **sonnet, inputTokens=150_000, cacheReadTokens=50_000, cacheWrite1hTokens=10_000)[
        "totalCostUsd"] == "1.05"  # 0.9 + 0.03 + 0.12
