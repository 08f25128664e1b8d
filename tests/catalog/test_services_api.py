"""GET /v1/services and GET /v1/services/{serviceId} (spec sections 2 and 4)."""
import math

import pytest

from catalog.models import ServiceEntry

pytestmark = pytest.mark.django_db

ENTRY_FIELDS = {"id", "externalId", "canonicalName", "displayName", "provider", "serviceType", "inputCost",
                "outputCost", "cacheReadCost", "cacheWriteCost", "cacheReadCostBasis", "cacheWriteCostBasis",
                "longContext", "longContextInclusive", "offPeak", "cacheWrite1hCost", "serviceTiers", "costUnit",
                "contextWindow", "source", "isApi", "isActive"}


def listing(api, **params):
    resp = api.get("/v1/services", params)
    assert resp.status_code == 200, resp.json()
    return resp.json()


def test_list_is_data_and_pagination_with_page_1_and_limit_50_by_default(api):
    body = listing(api)
    active = ServiceEntry.objects.filter(is_active=True).count()
    assert body["pagination"] == {"page": 1, "limit": 50, "total": active, "totalPages": math.ceil(active / 50)}
    assert len(body["data"]) == 50


def test_entries_carry_exactly_the_documented_fields(api):
    gpt = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    body = api.get(f"/v1/services/{gpt.id}").json()
    assert set(body) == ENTRY_FIELDS
    assert body == {
        "id": str(gpt.id), "externalId": "openai/gpt-4o", "canonicalName": "gpt-4o", "displayName": "gpt-4o",
        "provider": "openai", "serviceType": "chat", "inputCost": "0.0000025", "outputCost": "0.00001",
        "cacheReadCost": "0.00000125", "cacheWriteCost": "0.0000025", "cacheReadCostBasis": "published",
        "cacheWriteCostBasis": "inputCost", "longContext": [], "longContextInclusive": False, "offPeak": None,
        "cacheWrite1hCost": None,
        "serviceTiers": {
            "batch": {"input": "0.00000125", "output": "0.000005", "cacheRead": None, "cacheWrite": None,
                      "cacheWrite1h": None, "longContext": []},
            "flex": None,
            "priority": {"input": "0.00000425", "output": "0.000017", "cacheRead": "0.000002125", "cacheWrite": None,
                         "cacheWrite1h": None, "longContext": []}},
        "costUnit": "token", "contextWindow": 128000,
        "source": "litellm", "isApi": False, "isActive": True,
    }


def test_an_entry_without_published_cache_rates_shows_the_input_rate_that_bills_them(api):
    turbo = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-3.5-turbo")
    body = api.get(f"/v1/services/{turbo.id}").json()
    assert (body["inputCost"], body["cacheReadCost"], body["cacheWriteCost"]) == ("0.0000005",) * 3
    assert (body["cacheReadCostBasis"], body["cacheWriteCostBasis"]) == ("inputCost", "inputCost")


def test_non_llm_entries_have_no_cache_rates_or_basis(api):
    body = listing(api, provider="openai", search="whisper-1", isApi="true")["data"][0]
    assert (body["cacheReadCost"], body["cacheWriteCost"], body["cacheReadCostBasis"],
            body["cacheWriteCostBasis"]) == (None, None, None, None)


def test_non_llm_entry_gives_its_unit_rate_in_input_cost(api):
    body = listing(api, provider="openai", search="whisper-1", isApi="true")
    assert [(e["canonicalName"], e["inputCost"], e["outputCost"], e["costUnit"], e["source"]) for e in body["data"]] \
        == [("whisper-1", "0.006", None, "minute", "curated")]


def test_pages_are_disjoint_and_stably_ordered(api):
    first = listing(api, limit=3, page=1)["data"]
    second = listing(api, limit=3, page=2)["data"]
    assert {e["id"] for e in first}.isdisjoint({e["id"] for e in second})
    assert listing(api, limit=3, page=1)["data"] == first
    both = listing(api, limit=6, page=1)["data"]
    assert [e["id"] for e in both] == [e["id"] for e in first + second]
    keys = [(e["provider"], e["canonicalName"]) for e in both]
    assert keys == sorted(keys)


def test_a_page_past_the_end_is_empty(api):
    body = listing(api, page=100000)
    assert body["data"] == [] and body["pagination"]["page"] == 100000


def test_provider_filter_is_case_insensitive(api):
    lower = listing(api, provider="anthropic", limit=100)
    upper = listing(api, provider="ANTHROPIC", limit=100)
    assert lower["data"] and {e["provider"] for e in lower["data"]} == {"anthropic"}
    assert lower["pagination"]["total"] == upper["pagination"]["total"] == \
        ServiceEntry.objects.filter(provider="anthropic", is_active=True).count()


def test_is_api_splits_non_llm_from_llm_entries(api):
    apis = listing(api, isApi="true", limit=100)
    llms = listing(api, isApi="false", limit=100)
    assert apis["data"] and all(e["isApi"] is True and e["costUnit"] != "token" for e in apis["data"])
    assert llms["data"] and all(e["isApi"] is False and e["costUnit"] == "token" for e in llms["data"])
    assert apis["pagination"]["total"] + llms["pagination"]["total"] == listing(api)["pagination"]["total"]


def test_service_type_filter(api):
    body = listing(api, serviceType="speech_to_text", limit=100)
    assert body["pagination"]["total"] >= 5
    assert {e["serviceType"] for e in body["data"]} == {"speech_to_text"}


def test_search_matches_canonical_or_display_name_case_insensitively(api):
    body = listing(api, search="SONNET-4-5", provider="anthropic", limit=100)
    names = {e["canonicalName"] for e in body["data"]}
    assert {"claude-sonnet-4-5", "claude-sonnet-4-5-20250929"} <= names
    assert all("sonnet-4-5" in name for name in names)
    display = listing(api, search="twilio sms")
    assert [e["canonicalName"] for e in display["data"]] == ["sms-us"]


def test_a_search_lists_the_entry_it_names_first_then_names_starting_with_it(api):
    """Some forty deployments of gpt-4o (`azure/eu/gpt-4o`) came before OpenAI's own entry."""
    body = listing(api, search="GPT-4o", limit=100)
    named = [(e["provider"], e["canonicalName"]) for e in body["data"] if e["canonicalName"] == "gpt-4o"]
    assert ("openai", "gpt-4o") in named
    assert [(e["provider"], e["canonicalName"]) for e in body["data"][:len(named)]] == named
    ranks = [0 if e["canonicalName"].lower() == "gpt-4o" else 1 if e["canonicalName"].lower().startswith("gpt-4o")
             else 2 for e in body["data"]]
    assert ranks == sorted(ranks) and ranks[-1] == 2
    again = listing(api, search="GPT-4o", limit=10, page=2)["data"]  # pages follow the same order
    assert [e["id"] for e in again] == [e["id"] for e in body["data"][10:20]]


@pytest.mark.parametrize("params, field", [
    ({"isApi": "yes"}, "isApi"), ({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"limit": "ten"}, "limit"),
    ({"page": 0}, "page"), ({"page": "first"}, "page"),
])
def test_bad_query_parameters_are_400_naming_the_parameter(api, params, field):
    resp = api.get("/v1/services", params)
    assert resp.status_code == 400
    assert any(message.startswith(f"{field}:") for message in resp.json()["message"])


def test_inactive_entries_are_hidden_from_list_and_get(api):
    gpt = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    ServiceEntry.objects.filter(pk=gpt.pk).update(is_active=False)
    assert "gpt-4o" not in {e["canonicalName"] for e in listing(api, provider="openai", search="gpt-4o",
                                                                  limit=100)["data"]}
    assert api.get(f"/v1/services/{gpt.id}").status_code == 404


@pytest.mark.parametrize("service_id", ["00000000-0000-4000-8000-000000000000", "not-a-uuid"])
def test_unknown_or_malformed_id_is_404(api, service_id):
    resp = api.get(f"/v1/services/{service_id}")
    assert resp.status_code == 404 and resp.json()["message"] == "Service not found"


def test_catalog_is_global_every_organization_reads_the_same_entries(api, other_api):
    gpt = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    assert other_api.get(f"/v1/services/{gpt.id}").json() == api.get(f"/v1/services/{gpt.id}").json()
    assert listing(other_api)["data"] == listing(api)["data"]


def test_publishable_key_is_refused_with_403(client_for):
    publishable = client_for(key_type="publishable")
    gpt = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    assert publishable.get("/v1/services").status_code == 403
    assert publishable.get(f"/v1/services/{gpt.id}").status_code == 403


def test_ingest_only_key_is_refused_with_403(client_for):
    assert client_for(scope="ingest").get("/v1/services").status_code == 403


def test_any_member_role_with_a_full_key_reads_the_catalog(client_for):
    assert client_for(role="member").get("/v1/services").status_code == 200


def test_no_key_is_401(anonymous):
    assert anonymous.get("/v1/services").status_code == 401
    assert anonymous.get("/v1/services/00000000-0000-4000-8000-000000000000").status_code == 401


def test_catalog_is_read_only(api):
    assert api.post("/v1/services", {"canonicalName": "x"}).status_code == 405


def test_an_entry_shows_its_long_context_tiers_and_off_peak_prices(api):
    grok = ServiceEntry.objects.get(provider="xai", canonical_name="grok-4.20")
    body = api.get(f"/v1/services/{grok.id}").json()
    assert (body["longContext"], body["longContextInclusive"]) == (
        [{"threshold": 200000, "input": "0.0000025", "output": "0.000005", "cacheRead": "0.0000004",
          "cacheWrite": None, "cacheWrite1h": None}], True)
    deepseek = ServiceEntry.objects.get(provider="deepseek", canonical_name="deepseek-v4-flash")
    assert api.get(f"/v1/services/{deepseek.id}").json()["offPeak"] == {
        "windows": [{"hours": ["00:00-01:00", "04:00-06:00", "10:00-00:00"], "weekdays": [1, 2, 3, 4, 5]},
                    {"hours": ["00:00-00:00"], "weekdays": [6, 7]}],
        "weekdayTimezone": None, "input": "0.00000015", "output": "0.0000006", "cacheRead": "0.000000003",
        "cacheWrite": None}
