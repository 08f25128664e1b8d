"""/v1/price-overrides: a book's own prices (contract.md "Price overrides"). Costs worked by hand; rates in USD per
token (per million in comments)."""
from decimal import Decimal as D

import pytest

from catalog.models import PriceOverride, ServiceEntry
from accounts.models import Membership, User
from jobs.models import Job
from customers.models import UsageDailyRollup, UsageEvent

pytestmark = pytest.mark.django_db

GPT_4O = {"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 1_000_000, "outputTokens": 100_000}  # 3.5


def send(api, **record):
    body = {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "answers", **record}
    resp = api.post("/v1/usage/record", {"records": [body]})
    assert resp.status_code == 200, resp.json()
    results = resp.json()["results"]
    return (results["success"] or results["failed"])[0]


def create(api, status=201, **body):
    resp = api.post("/v1/price-overrides", body)
    assert resp.status_code == status, resp.json()
    return resp.json()


def event_cost(entry) -> D | None:
    return UsageEvent.objects.get(pk=entry["eventId"]).usage_cost


def month_cost(api, month="2026-03") -> D:
    body = api.get("/v1/analytics/cost", {"startDate": f"{month}-01", "endDate": f"{month}-28"}).json()
    return D(str(body["cost"]))


def gpt_4o() -> ServiceEntry:
    return ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")


def test_a_discount_on_a_providers_list_prices_reprices_events_from_its_date(api, book):
    before = send(api, **GPT_4O, usageDate="2026-02-28T23:00:00Z")
    after = send(api, **GPT_4O, usageDate="2026-03-02T10:00:00Z")
    mini = send(api, model="gpt-4o-mini", modelProvider="openai", inputTokens=1_000_000,
                usageDate="2026-03-03T10:00:00Z")  # $0.15 per million
    claude = send(api, model="claude-sonnet-4-5", modelProvider="anthropic", inputTokens=100_000,
                  usageDate="2026-03-03T10:00:00Z")  # $3 per million, another provider
    assert month_cost(api) == D("3.95")
    body = create(api, modelProvider="OpenAI", discountPercent=20, effectiveFrom="2026-03-01T00:00:00Z",
                  note="Enterprise agreement 2026")
    assert (body["modelProvider"], body["discountPercent"], body["note"]) == ("openai", "20",
                                                                              "Enterprise agreement 2026")
    assert (body["eventsAffected"], body["eventsRepriced"], body["scheduled"]) == (2, 2, False)
    assert Job.objects.get(pk=body["jobId"]).status == "succeeded"
    assert event_cost(before) == D("3.5")  # dated before effectiveFrom
    assert event_cost(after) == D("2.8")  # 3.5 x 0.8
    assert event_cost(mini) == D("0.12")
    assert event_cost(claude) == D("0.3")
    assert month_cost(api) == D("3.22")  # analytics follow: 2.8 + 0.12 + 0.3
    # later events are priced with it at record time
    assert send(api, **GPT_4O, usageDate="2026-03-05T00:00:00Z")["totalCostUsd"] == "2.8"


def test_a_service_override_beats_the_provider_discount_and_keeps_rates_it_does_not_name(api):
    create(api, modelProvider="openai", discountPercent=50, effectiveFrom="2026-01-01T00:00:00Z")
    body = create(api, serviceId=str(gpt_4o().id), inputCost="0.000002", effectiveFrom="2026-01-01T00:00:00Z")
    assert (body["model"], body["modelProvider"], body["inputCost"]) == ("gpt-4o", "openai", "0.000002")
    # $2 negotiated input + the catalog's $10 output (no discount on top: the most specific override wins)
    assert send(api, **GPT_4O, usageDate="2026-03-02T10:00:00Z")["totalCostUsd"] == "3"
    # batch: OpenAI's published 50% of the negotiated $2 input, and the price data's batch $5 output
    assert send(api, **GPT_4O, serviceTier="batch", usageDate="2026-03-02T10:00:00Z")["totalCostUsd"] == "1.5"


def test_the_latest_override_in_effect_at_the_events_date_prices_it(api):
    service = str(gpt_4o().id)
    create(api, serviceId=service, inputCost="0.000002", outputCost="0.00001", effectiveFrom="2026-01-01T00:00:00Z")
    create(api, serviceId=service, inputCost="0.000001", outputCost="0.00001", effectiveFrom="2026-03-01T00:00:00Z")
    assert send(api, **GPT_4O, usageDate="2026-02-15T00:00:00Z")["totalCostUsd"] == "3"
    assert send(api, **GPT_4O, usageDate="2026-03-15T00:00:00Z")["totalCostUsd"] == "2"
    assert send(api, **GPT_4O, usageDate="2025-12-31T23:59:59Z")["totalCostUsd"] == "3.5"  # list price


def test_an_override_without_effective_from_prices_events_of_every_date_until_a_dated_one_takes_over(api):
    old = send(api, **GPT_4O, usageDate="2019-06-01T00:00:00Z")  # list price 3.5 until the override exists
    assert old["totalCostUsd"] == "3.5"
    service = str(gpt_4o().id)
    undated = create(api, serviceId=service, inputCost="0.000002", note="our contract, whatever the date")
    assert (undated["effectiveFrom"], undated["eventsAffected"], undated["eventsRepriced"]) == (None, 1, 1)
    assert event_cost(old) == D("3")  # $2 negotiated input + the catalog's $1 output
    assert send(api, **GPT_4O, usageDate="2026-03-15T00:00:00Z")["totalCostUsd"] == "3"
    # A dated override of the same target takes over from its instant; the undated one keeps what is before it.
    create(api, serviceId=service, inputCost="0.000001", effectiveFrom="2026-03-01T00:00:00Z")
    assert send(api, **GPT_4O, usageDate="2026-03-15T00:00:00Z")["totalCostUsd"] == "2"
    assert send(api, **GPT_4O, usageDate="2026-02-28T23:59:59Z")["totalCostUsd"] == "3"
    # null says the same as omitting it, and one undated override a target is all it can have
    create(api, 409, serviceId=service, inputCost="0.000003", effectiveFrom=None)
    rows = api.get("/v1/price-overrides").json()
    assert [row["effectiveFrom"] for row in rows] == ["2026-03-01T00:00:00Z", None]  # undated last
    assert api.get(f"/v1/price-overrides/{undated['id']}").json()["effectiveFrom"] is None
    resp = api.delete(f"/v1/price-overrides/{undated['id']}")
    assert resp.status_code == 200 and resp.json()["eventsRepriced"] >= 2
    assert event_cost(old) == D("3.5")  # back to the list price


def test_a_model_the_catalog_lacks_is_priced_by_its_override_and_unpriced_again_when_it_goes(api):
    waiting = send(api, model="acme-llm-2", modelProvider="acme", inputTokens=1_000_000, outputTokens=500_000,
                   usageDate="2026-03-02T10:00:00Z")
    assert (waiting["code"], waiting["stored"]) == ("unknown_model", True)
    body = create(api, model=" ACME-LLM-2 ", modelProvider="acme", inputCost="0.0000005", outputCost="0.000001",
                  effectiveFrom="2026-03-01T00:00:00Z", note="our own GPUs")
    assert (body["model"], body["eventsRepriced"]) == ("acme-llm-2", 1)
    event = UsageEvent.objects.get(pk=waiting["eventId"])
    assert (event.usage_cost, event.event_status) == (D("1"), "PROCESSED")  # 0.5 + 0.5
    assert month_cost(api) == D("1")
    resp = api.delete(f"/v1/price-overrides/{body['id']}")
    assert resp.status_code == 200 and (resp.json()["id"], resp.json()["eventsRepriced"]) == (body["id"], 1)
    assert Job.objects.get(pk=resp.json()["jobId"]).status == "succeeded"
    event.refresh_from_db()
    assert (event.usage_cost, event.event_status) == (None, "NEEDS_COST_BACKFILL")
    assert month_cost(api) == D("0")
    assert api.get(f"/v1/price-overrides/{body['id']}").status_code == 404


def test_an_override_prices_events_on_the_entry_that_priced_them_not_the_one_their_name_maps_to_today(api):
    # Mapped to gpt-4o, then remapped to gpt-4o-mini (priced events keep their entry): an override of gpt-4o priced
    # them again as gpt-4o-mini's, without the override, and moved them to that entry.
    record = {"model": "house-llm", "modelProvider": "inhouse", "inputTokens": 1_000_000, "outputTokens": 100_000,
              "usageDate": "2026-03-02T10:00:00Z"}
    single = send(api, **record)
    multi = send(api, services=[{k: v for k, v in record.items() if k != "usageDate"}],
                 usageDate="2026-03-02T10:00:00Z")
    mapping = {"model": "house-llm", "modelProvider": "inhouse"}
    mini = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o-mini")
    assert api.post("/v1/events/map-model", {**mapping, "serviceId": str(gpt_4o().id)}).status_code in (200, 201)
    assert api.post("/v1/events/map-model", {**mapping, "serviceId": str(mini.id)}).status_code == 200
    assert [event_cost(entry) for entry in (single, multi)] == [D("3.5"), D("3.5")]  # $2.50 + $10 per million

    body = create(api, serviceId=str(gpt_4o().id), inputCost="0.000001", effectiveFrom="2026-03-01T00:00:00Z")
    assert body["eventsRepriced"] == 2
    assert [event_cost(entry) for entry in (single, multi)] == [D("2"), D("2")]  # $1 negotiated + $10 per million
    event = UsageEvent.objects.get(pk=single["eventId"])
    assert event.service_id == gpt_4o().id
    assert UsageEvent.objects.get(pk=multi["eventId"]).services[0]["serviceId"] == str(gpt_4o().id)
    assert month_cost(api) == D("4")


def test_a_known_model_the_catalog_cannot_price_gets_its_price_from_an_override(api):
    # Pegasus 1.5 is priced per video second, which the price data cannot express: its events wait unpriced, and
    # map-model refuses a known name. A unit price per second, with the seconds as the quantity, prices them.
    pegasus = {"model": "global.twelvelabs.pegasus-1-5-v1:0", "modelProvider": "bedrock", "inputTokens": 2000,
               "quantity": 120, "usageDate": "2026-03-02T10:00:00Z"}
    waiting = send(api, **pegasus)
    assert (waiting["code"], waiting["stored"]) == ("unpriced_usage", True)
    assert "POST /v1/price-overrides" in waiting["message"][0]
    service = ServiceEntry.objects.get(provider="bedrock", canonical_name="global.twelvelabs.pegasus-1-5-v1:0")
    body = create(api, serviceId=str(service.id), unitCost="0.00049", effectiveFrom="2026-01-01T00:00:00Z",
                  note="AWS price list: $0.00049 per video second")
    assert body["eventsRepriced"] == 1
    assert event_cost(waiting) == D("0.0588")  # 120 s x $0.00049
    assert send(api, **pegasus)["totalCostUsd"] == "0.0588"


def test_an_input_cost_override_of_a_per_unit_service_is_its_new_rate_per_unit(api):
    # Contract "Catalog rates": a non-LLM entry's inputCost is its USD per unit (costUnit), so an override's
    # inputCost of such a service is its negotiated rate per unit, as unitCost is; never a token rate that would
    # price its events at zero tokens, $0.
    search = ServiceEntry.objects.get(provider="anthropic", canonical_name="web-search")
    assert (search.cost_unit, search.input_cost) == ("search", D("0.01"))
    record = {"model": "web-search", "modelProvider": "anthropic", "quantity": 100}
    assert send(api, **record, usageDate="2026-03-02T10:00:00Z")["totalCostUsd"] == "1"
    body = create(api, serviceId=str(search.id), inputCost="0.008", effectiveFrom="2026-03-01T00:00:00Z")
    assert body["eventsRepriced"] == 1
    assert send(api, **record, usageDate="2026-03-03T10:00:00Z")["totalCostUsd"] == "0.8"
    assert month_cost(api) == D("1.6")
    create(api, serviceId=str(search.id), unitCost="0.006", effectiveFrom="2026-03-10T00:00:00Z")
    assert send(api, **record, usageDate="2026-03-11T10:00:00Z")["totalCostUsd"] == "0.6"


def test_token_rates_for_a_per_unit_service_are_a_400_naming_the_field(api):
    search = ServiceEntry.objects.get(provider="anthropic", canonical_name="web-search")
    resp = api.post("/v1/price-overrides", {"serviceId": str(search.id), "outputCost": "0.001"})
    assert resp.status_code == 400, resp.json()
    assert resp.json()["message"] == [
        "outputCost: anthropic/web-search is priced per search, not per token: send unitCost (or inputCost), "
        "its USD per search."]
    assert not PriceOverride.objects.exists()


def test_a_model_override_keeps_its_providers_published_batch_and_one_hour_cache_rules(api):
    # Contract "Cost fields of a record": batch without a tier rate is priced at the provider's published batch
    # discount (OpenAI 50%), a 1-hour cache write without a rate at the provider's published one (Anthropic: 2x the
    # input rate); a model the catalog lacks, priced by the book's override, keeps its provider's rules.
    create(api, model="gpt-internal", modelProvider="openai", inputCost="0.000002")  # $2 per million
    batch = send(api, model="gpt-internal", modelProvider="openai", inputTokens=1_000_000, serviceTier="batch")
    assert batch["totalCostUsd"] == "1"  # 2 x 50%
    assert UsageEvent.objects.get(pk=batch["eventId"]).priced_at_standard_tier is False
    create(api, model="claude-internal", modelProvider="anthropic", inputCost="0.000003")  # $3 per million
    one_hour = send(api, model="claude-internal", modelProvider="anthropic", cacheWrite1hTokens=1_000_000)
    assert one_hour["totalCostUsd"] == "6"  # 3 x 2
    # a provider without published rules: standard rates, and the event says so
    create(api, model="acme-llm", modelProvider="acme", inputCost="0.000002")
    standard = send(api, model="acme-llm", modelProvider="acme", inputTokens=1_000_000, serviceTier="batch")
    assert standard["totalCostUsd"] == "2"
    assert UsageEvent.objects.get(pk=standard["eventId"]).priced_at_standard_tier is True
    # a provider's synonym is the provider (google_ai_studio is google: its 50% batch discount)
    create(api, model="gemini-internal", modelProvider="google_ai_studio", inputCost="0.000002")
    gemini = send(api, model="gemini-internal", modelProvider="google_ai_studio", inputTokens=1_000_000,
                  serviceTier="batch")
    assert gemini["totalCostUsd"] == "1"


def test_a_discount_named_by_a_providers_synonym_is_the_providers(api):
    # $0.15 input per million for mistral-small-latest: 1M tokens $0.15, 20% off $0.12
    small = {"model": "mistral-small-latest", "inputTokens": 1_000_000, "usageDate": "2026-03-02T10:00:00Z"}
    before = send(api, **small, modelProvider="mistralai")
    body = create(api, modelProvider="MistralAI", discountPercent=20, effectiveFrom="2026-03-01T00:00:00Z")
    assert (body["modelProvider"], body["eventsAffected"], body["eventsRepriced"]) == ("mistral", 1, 1)
    assert event_cost(before) == D("0.12")
    assert send(api, **small, modelProvider="mistral")["totalCostUsd"] == "0.12"
    assert send(api, **small, modelProvider="mistralai")["totalCostUsd"] == "0.12"
    create(api, 409, modelProvider="mistral", discountPercent=15, effectiveFrom="2026-03-01T00:00:00Z")


def test_overrides_never_touch_invoices_revenue(api):
    create(api, modelProvider="openai", discountPercent=20, effectiveFrom="2026-01-01T00:00:00Z")
    send(api, **GPT_4O, usageDate="2026-03-02T10:00:00Z")
    revenue = api.get("/v1/analytics/revenue", {"startDate": "2026-03-01", "endDate": "2026-03-28"}).json()
    assert D(str(revenue["cost"])) == D("2.8")  # cost is discounted; no plan: no revenue
    assert D(str(revenue["agentEarned"])) == D("0")


def test_an_override_reprices_an_event_a_draft_bills_and_leaves_the_draft_as_it_was(api, book):
    """2.00 a call on a plan: March's draft bills 1 call, 2.00. A 20% discount re-prices the event's cost from 3.5
    to 2.8 while the draft exists (its repricing job writes the events the draft's claims hold); the draft, refreshed
    after, is the same invoice with the same line."""
    from tests.billing.invoice_support import billing_chain, generate, usage

    chain = billing_chain(api, book, [usage("2.00")], start="2026-03-01T00:00:00Z")
    entry = send(api, **GPT_4O, customerExternalId=chain.customer.external_id, agentCode=chain.agent.agent_code,
                 signalName=chain.signal.name, usageDate="2026-03-02T10:00:00Z")
    march = ("2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z")
    draft = generate(api, chain, march).json()
    assert (draft["total"], event_cost(entry)) == (2.0, D("3.5"))
    create(api, modelProvider="openai", discountPercent=20, effectiveFrom="2026-01-01T00:00:00Z")
    assert event_cost(entry) == D("2.8")
    again = generate(api, chain, march)
    assert again.status_code == 200 and again.json()["id"] == draft["id"]
    assert again.json()["total"] == 2.0 and [line["amount"] for line in again.json()["lines"]] == [2.0]


def test_list_and_read_show_who_set_each_override_and_when(api):
    first = create(api, modelProvider="anthropic", discountPercent="12.5", effectiveFrom="2026-01-01T00:00:00Z")
    second = create(api, modelProvider="openai", discountPercent=10, effectiveFrom="2026-02-01T00:00:00Z")
    resp = api.get("/v1/price-overrides")
    assert resp.status_code == 200 and resp["X-Total-Count"] == "2"
    assert [row["id"] for row in resp.json()] == [second["id"], first["id"]]  # newest effectiveFrom first
    row = api.get(f"/v1/price-overrides/{first['id']}").json()
    assert row["createdBy"].startswith("api-key:") and row["createdAt"]
    assert (row["discountPercent"], row["effectiveFrom"]) == ("12.5", "2026-01-01T00:00:00Z")


def test_pages_of_overrides_of_one_instant_list_each_once_in_id_order(api):
    # Ordered by effectiveFrom and createdAt alone, overrides equal on both came back in any order, and pages by
    # offset could show one twice and skip another: the id ends the order.
    made = [create(api, model=f"acme-llm-{n}", modelProvider="acme", inputCost="0.000001")["id"] for n in range(12)]
    PriceOverride.objects.filter(pk__in=made).update(created_at=PriceOverride.objects.get(pk=made[0]).created_at)
    paged = [row["id"] for offset in range(12) for row in api.get("/v1/price-overrides",
                                                                 {"limit": 1, "offset": offset}).json()]
    assert paged == sorted(made)


@pytest.mark.parametrize("body, message", [
    ({}, "serviceId: Send a serviceId, or model and modelProvider, or modelProvider and discountPercent."),
    ({"model": "acme-llm"}, "modelProvider: This field is required with model."),
    ({"model": "acme-llm", "modelProvider": "acme"}, "inputCost: Send at least one of"),
    ({"model": "acme-llm", "modelProvider": "acme", "unitCost": "1", "inputCost": "1"},
     "unitCost: A unit price prices the event's quantity; send it without token rates."),
    ({"model": "gpt-4o", "modelProvider": "openai", "inputCost": "1"}, "model: 'gpt-4o' from 'openai' is in the catalog"),
    ({"modelProvider": "openai", "discountPercent": 120}, "discountPercent:"),
    ({"modelProvider": "openai", "discountPercent": 10, "inputCost": "1"}, "discountPercent: A discount takes no rates"),
    ({"model": "acme-llm", "modelProvider": "acme", "inputCost": -1}, "inputCost:"),
    ({"model": "acme-llm", "modelProvider": "acme", "inputCost": "x"}, "inputCost:"),
    # Ignored, a misspelled effectiveFrom would leave the override in effect for events of every date.
    ({"model": "acme-llm", "modelProvider": "acme", "inputCost": "1", "effectiveDate": "2026-03-01T00:00:00Z"},
     "effectiveDate: Not a field of this request"),
])
def test_bad_overrides_are_400s_naming_the_field(api, body, message):
    resp = api.post("/v1/price-overrides", {"effectiveFrom": "2026-01-01T00:00:00Z", **body})
    assert resp.status_code == 400, resp.json()
    assert any(line.startswith(message) for line in resp.json()["message"]), resp.json()
    assert not PriceOverride.objects.exists()


def test_a_second_override_of_the_same_target_and_instant_is_a_409_and_an_unknown_service_a_404(api):
    create(api, modelProvider="openai", discountPercent=10, effectiveFrom="2026-01-01T00:00:00Z")
    create(api, 409, modelProvider="openai", discountPercent=15, effectiveFrom="2026-01-01T00:00:00Z")
    create(api, 404, serviceId="00000000-0000-4000-8000-000000000000", inputCost="1",
           effectiveFrom="2026-01-01T00:00:00Z")


def test_only_owner_admin_and_finance_keys_reach_overrides_and_books_are_separate(client_for, other_api):
    override = create(client_for(role="finance"), modelProvider="openai", discountPercent=10,
                      effectiveFrom="2026-01-01T00:00:00Z")
    member = client_for(role="member")
    assert member.get("/v1/price-overrides").status_code == 403
    assert member.post("/v1/price-overrides", {}).status_code == 403
    assert client_for(role="admin").get(f"/v1/price-overrides/{override['id']}").status_code == 200
    assert other_api.get(f"/v1/price-overrides/{override['id']}").status_code == 404
    assert other_api.delete(f"/v1/price-overrides/{override['id']}").status_code == 404
    assert client_for(environment="live").get("/v1/price-overrides").json() == []


def test_many_affected_events_are_repriced_in_the_background_with_progress(api, settings,
                                                                           django_capture_on_commit_callbacks):
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 1
    for day in (2, 3, 4):
        send(api, **GPT_4O, usageDate=f"2026-03-0{day}T10:00:00Z")
    assert month_cost(api) == D("10.5")
    # Celery runs eagerly in the suite: the task executes on commit, as a worker would.
    with django_capture_on_commit_callbacks(execute=True):
        body = create(api, modelProvider="openai", discountPercent=50, effectiveFrom="2026-03-01T00:00:00Z")
    assert (body["scheduled"], body["eventsAffected"], body["eventsRepriced"]) == (True, 3, 0)
    job = api.get(f"/v1/jobs/{body['jobId']}").json()
    assert (job["status"], job["done"], job["total"]) == ("succeeded", 3, 3), job
    assert sorted(UsageEvent.objects.values_list("usage_cost", flat=True)) == [D("1.75")] * 3
    assert month_cost(api) == D("5.25")
    assert UsageDailyRollup.objects.filter(grain=3).count() == 3


@pytest.fixture
def operator(client, org):
    user = User.objects.create_user(email="ops@acme.example.com", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


def test_the_console_lists_overrides_with_who_set_them_and_deletes_them_with_repricing(api, operator):
    event = send(api, **GPT_4O, usageDate="2026-03-02T10:00:00Z")
    body = create(api, modelProvider="openai", discountPercent=20, effectiveFrom="2026-03-01T00:00:00Z",
                  note="Enterprise agreement")
    page = operator.get("/admin/catalog/priceoverride/").content.decode()
    # Who set it: the API key by its prefix (it has no name), not the id the API answers.
    assert "every openai model" in page and "Enterprise agreement" in page
    assert f"API key {api.key.prefix}…" in page and body["createdBy"] not in page
    resp = operator.post("/admin/catalog/priceoverride/", {"action": "delete_and_reprice",
                                                           "_selected_action": [body["id"]]}, follow=True)
    assert resp.status_code == 200
    assert not PriceOverride.objects.exists()
    assert event_cost(event) == D("3.5")


def test_a_console_member_without_a_money_role_cannot_delete_an_override(api, client, org):
    """The API lets owners, admins and finance delete an override (which prices events again); the console's action
    let any member do it."""
    body = create(api, modelProvider="openai", discountPercent=20, effectiveFrom="2026-03-01T00:00:00Z")
    user = User.objects.create_user(email="member@acme.example.com", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="member")
    client.force_login(user)
    resp = client.post("/admin/catalog/priceoverride/", {"action": "delete_and_reprice",
                                                         "_selected_action": [body["id"]]}, follow=True)
    assert resp.status_code == 200
    assert PriceOverride.objects.filter(pk=body["id"]).exists()


@pytest.mark.parametrize("step", ["create", "delete"])
def test_an_override_is_stored_or_deleted_only_with_its_repricing_job(api, monkeypatch, step):
    """The connection lost between the override and its job (a PostgreSQL restart): nothing of the change stays,
    so the client's retry makes it whole, instead of a 409 or 404 over events left at their old cost."""
    import customers.price_overrides as overrides
    from django.db import OperationalError

    event = send(api, **GPT_4O, usageDate="2026-03-02T10:00:00Z")  # 3.5 at list price
    body = {"serviceId": str(gpt_4o().id), "inputCost": "0.000002", "effectiveFrom": "2026-01-01T00:00:00Z"}
    created = create(api, **body) if step == "delete" else None
    real_job_create = overrides.job_create

    def lost(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(overrides, "job_create", lost)
    resp = (api.post("/v1/price-overrides", body) if step == "create"
            else api.delete(f"/v1/price-overrides/{created['id']}"))
    assert resp.status_code == 503, resp.content
    assert PriceOverride.objects.count() == (0 if step == "create" else 1)  # as before the request
    assert event_cost(event) == (D("3.5") if step == "create" else D("3"))
    monkeypatch.setattr(overrides, "job_create", real_job_create)
    if step == "create":
        assert create(api, **body)["eventsRepriced"] == 1  # the retry: 201, not a 409
        assert event_cost(event) == D("3")
    else:
        assert api.delete(f"/v1/price-overrides/{created['id']}").status_code == 200  # the retry: not a 404
        assert event_cost(event) == D("3.5")


@pytest.mark.parametrize("step", ["create", "delete"])
def test_an_inline_repricing_that_fails_after_the_commit_goes_on_in_the_background(
        api, monkeypatch, step, django_capture_on_commit_callbacks):
    """The override is committed before its events are priced again: a failure of that run (PostgreSQL lost
    mid-run) is no 5xx (the client's retry would be a 409 over events left at their old cost), but a job that
    goes on in the background and prices them."""
    import customers.price_overrides as overrides
    from django.db import OperationalError

    event = send(api, **GPT_4O, usageDate="2026-03-02T10:00:00Z")  # 3.5 at list price
    body = {"serviceId": str(gpt_4o().id), "inputCost": "0.000002", "effectiveFrom": "2026-01-01T00:00:00Z"}
    created = create(api, **body) if step == "delete" else None  # 2 x 1 + 1.5 = 3

    def failing_in_the_request(*args):  # the request's run only: the task (customers/tasks.py) runs the real one
        def work(progress):
            raise OperationalError("server closed the connection unexpectedly")
        return work

    monkeypatch.setattr(overrides, "override_reprice_work", failing_in_the_request)
    # Celery runs eagerly in the suite: the handed-over job runs on commit, as a worker would.
    with django_capture_on_commit_callbacks(execute=True):
        resp = (api.post("/v1/price-overrides", body) if step == "create"
                else api.delete(f"/v1/price-overrides/{created['id']}"))
    assert resp.status_code == (201 if step == "create" else 200), resp.content
    answer = resp.json()
    assert (answer["eventsAffected"], answer["eventsRepriced"], answer["scheduled"]) == (1, 0, True)
    job = api.get(f"/v1/jobs/{answer['jobId']}").json()
    assert (job["status"], job["result"]) == ("succeeded", {"eventsRepriced": 1}), job
    assert event_cost(event) == (D("3") if step == "create" else D("3.5"))
    assert PriceOverride.objects.count() == (1 if step == "create" else 0)


def test_a_discount_leaves_multi_service_events_of_other_providers_as_they_were(api):
    """A provider discount selects every multi-service event (no index holds their parts' entries) and prices
    again only those with a part of the provider's: one of Anthropic's parts alone keeps its cost. Priced from
    scratch it would take today's catalog, where a load deactivated its entry since: cost null."""
    claude = {"model": "claude-sonnet-4-5", "modelProvider": "anthropic", "inputTokens": 100_000}  # 0.3
    event = send(api, services=[claude, claude], usageDate="2026-03-03T10:00:00Z")
    assert event_cost(event) == D("0.6")
    ServiceEntry.objects.filter(provider="anthropic", canonical_name="claude-sonnet-4-5").update(is_active=False)
    body = create(api, modelProvider="openai", discountPercent=20)
    assert body["eventsRepriced"] == 0
    assert event_cost(event) == D("0.6")
    assert UsageEvent.objects.get(pk=event["eventId"]).event_status == "PROCESSED"
    assert month_cost(api) == D("0.6")


@pytest.mark.django_db(transaction=True)
def test_an_override_counts_the_events_it_may_price_before_it_takes_the_books_price_lock(api, book, monkeypatch):
    """The count may read the book's whole ledger; recording into the book waits for the price lock the override's
    insert or delete takes, so the count runs before it."""
    from django.db import connection

    from accounts.book_generations import PRICE_LOCKS
    from customers import price_overrides
    from tests.factories import ServiceEntryFactory
    # An entry of its own: a transactional test cannot count on the loaded catalog (an earlier one flushed it).
    entry = ServiceEntryFactory(canonical_name="lock-llm", provider="testai", input_cost=D("0.000002"))
    send(api, model="lock-llm", modelProvider="testai", inputTokens=1000, usageDate="2026-03-02T10:00:00Z")
    counted_in = []
    affected = price_overrides._affected

    def counted(*args):
        with connection.cursor() as cursor:  # does this transaction hold the book's price lock?
            cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() "
                           "AND classid = %s AND objid = hashtext(%s)::oid", [PRICE_LOCKS, str(book.pk)])
            counted_in.append(cursor.fetchone()[0])
        return affected(*args)
    monkeypatch.setattr(price_overrides, "_affected", counted)
    override = create(api, serviceId=str(entry.pk), inputCost="0.000001")
    assert override["eventsAffected"] == 1
    assert api.delete(f"/v1/price-overrides/{override['id']}").status_code == 200
    assert counted_in and not any(counted_in)  # the counts, and the repricing jobs' reads after the commit


def test_an_override_that_takes_an_event_past_the_largest_cost_leaves_it_without_a_cost(api):
    """Recording refuses an event costing more than 10^6 USD (out_of_range); an override that takes a stored event
    there leaves it at cost null, waiting, rather than at the price the book no longer has. Deleting the override
    prices it again."""
    event = send(api, model="gpt-4o", modelProvider="openai", inputTokens=2_000_000,
                 usageDate="2026-03-02T10:00:00Z")  # 2M x $2.50 per million
    assert event_cost(event) == D("5")
    override = create(api, serviceId=str(gpt_4o().pk), inputCost="1")  # 2M x $1: 2,000,000 USD
    assert (override["eventsAffected"], override["eventsRepriced"]) == (1, 1)
    stored = UsageEvent.objects.get(pk=event["eventId"])
    assert (stored.usage_cost, stored.event_status) == (None, "NEEDS_COST_BACKFILL")
    assert month_cost(api) == D("0")
    assert api.delete(f"/v1/price-overrides/{override['id']}").json()["eventsRepriced"] == 1
    assert event_cost(event) == D("5")
    assert month_cost(api) == D("5")
