"""/v1/signals through HTTP (spec §2 Signal, §4 Signals)."""
import pytest

from billing.models import PricingPlan, PricingStrategy
from customers.models import Signal, UsageEvent
from tests.factories import AgentFactory, SignalFactory, UsageEventFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def agent(book):
    return AgentFactory(book=book)


def test_create_returns_201_with_every_field(api, agent):
    resp = api.post("/v1/signals", {"name": "Pages processed", "shortName": "pages", "agentId": str(agent.id),
                                    "type": "volume"})
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert set(body) == {"id", "name", "shortName", "type", "agentId", "createdAt", "updatedAt"}
    assert (body["name"], body["shortName"], body["type"], body["agentId"]) == \
        ("Pages processed", "pages", "volume", str(agent.id))
    assert body["createdAt"].endswith("Z")
    assert api.get(f"/v1/signals/{body['id']}").json() == body


def test_type_defaults_to_usage(api, agent):
    assert api.post("/v1/signals", {"name": "Reports", "agentId": str(agent.id)}).json()["type"] == "usage"


def test_short_name_is_the_trimmed_name_when_omitted(api, agent):
    body = api.post("/v1/signals", {"name": "  Pages Processed ", "agentId": str(agent.id)}).json()
    assert (body["name"], body["shortName"]) == ("Pages Processed", "Pages Processed")


@pytest.mark.parametrize("payload, field", [
    ({}, "name"),
    ({"name": "s"}, "agentId"),
    ({"name": "s", "agentId": "not-a-uuid"}, "agentId"),
    ({"name": "s", "agentId": 12}, "agentId"),
    ({"name": "n" * 256, "agentId": "{agent}"}, "name"),
    ({"name": "s", "shortName": "n" * 256, "agentId": "{agent}"}, "shortName"),
    ({"name": "s", "shortName": "", "agentId": "{agent}"}, "shortName"),
    ({"name": "s", "agentId": "{agent}", "type": "outcome"}, "type"),
])
def test_invalid_field_is_400_naming_the_field(api, agent, payload, field):
    payload = {key: value.format(agent=agent.id) if isinstance(value, str) else value
               for key, value in payload.items()}
    resp = api.post("/v1/signals", payload)
    assert resp.status_code == 400
    assert any(message.startswith(f"{field}:") for message in resp.json()["message"]), resp.json()
    assert not Signal.objects.exists()


def test_unknown_agent_is_404(api):
    resp = api.post("/v1/signals", {"name": "s", "agentId": "00000000-0000-4000-8000-000000000000"})
    assert resp.status_code == 404
    assert resp.json()["message"] == "Agent not found"


@pytest.mark.parametrize("existing, new, field", [
    ({"name": "Pages", "shortName": "pages"}, {"name": "Pages", "shortName": "pg"}, "name"),
    ({"name": "Pages", "shortName": "pages"}, {"name": "Page count", "shortName": "pages"}, "shortName"),
    ({"name": "Pages"}, {"name": "Other", "shortName": "Pages"}, "shortName"),
])
def test_duplicate_name_or_short_name_for_the_agent_is_409(api, agent, existing, new, field):
    assert api.post("/v1/signals", {**existing, "agentId": str(agent.id)}).status_code == 201
    resp = api.post("/v1/signals", {**new, "agentId": str(agent.id)})
    assert resp.status_code == 409
    assert resp.json()["message"][0].startswith(f"{field}:")
    assert Signal.objects.count() == 1


def test_same_name_on_another_agent_is_allowed(api, book, agent):
    other = AgentFactory(book=book)
    for target in (agent, other):
        assert api.post("/v1/signals", {"name": "Pages", "agentId": str(target.id)}).status_code == 201


# --------------------------------------------------------------------------- update

def test_patch_changes_name_and_type_but_keeps_the_short_name(api, agent):
    created = api.post("/v1/signals", {"name": "Pages", "shortName": "pages", "agentId": str(agent.id)}).json()
    body = api.patch(f"/v1/signals/{created['id']}", {"name": "Pages delivered", "type": "volume"}).json()
    assert (body["name"], body["shortName"], body["type"]) == ("Pages delivered", "pages", "volume")


def test_patch_to_a_taken_short_name_is_409(api, agent):
    api.post("/v1/signals", {"name": "Pages", "agentId": str(agent.id)})
    other = api.post("/v1/signals", {"name": "Reports", "agentId": str(agent.id)}).json()
    resp = api.patch(f"/v1/signals/{other['id']}", {"shortName": "Pages"})
    assert resp.status_code == 409
    assert api.get(f"/v1/signals/{other['id']}").json()["shortName"] == "Reports"


def test_patch_with_another_agent_id_is_400_and_the_agent_stays(api, book, agent):
    other = AgentFactory(book=book)
    created = api.post("/v1/signals", {"name": "Pages", "agentId": str(agent.id)}).json()
    resp = api.patch(f"/v1/signals/{created['id']}", {"agentId": str(other.id), "name": "Moved"})
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith("agentId:")
    body = api.get(f"/v1/signals/{created['id']}").json()
    assert (body["agentId"], body["name"]) == (str(agent.id), "Pages")


def test_patch_echoing_the_same_agent_id_is_accepted(api, agent):
    created = api.post("/v1/signals", {"name": "Pages", "agentId": str(agent.id)}).json()
    resp = api.patch(f"/v1/signals/{created['id']}", {**created, "name": "Pages v2", "id": "ignored"})
    assert resp.status_code == 200, resp.json()
    assert resp.json()["name"] == "Pages v2"


@pytest.mark.parametrize("payload, field", [({"type": "outcome"}, "type"), ({"shortName": "s" * 256}, "shortName"),
                                            ({"name": ""}, "name"), ({"agentId": "nope"}, "agentId")])
def test_patch_validates_like_create(api, agent, payload, field):
    created = api.post("/v1/signals", {"name": "Pages", "agentId": str(agent.id)}).json()
    resp = api.patch(f"/v1/signals/{created['id']}", payload)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")


# --------------------------------------------------------------------------- delete

def test_delete_is_permanent_and_leaves_historical_events_orphaned(api, book):
    event = UsageEventFactory(book=book)
    signal_id, signal_name = event.signal_id, event.signal_name
    resp = api.delete(f"/v1/signals/{signal_id}")
    assert resp.status_code == 204 and not resp.content
    assert not Signal.objects.filter(pk=signal_id).exists()
    assert api.get(f"/v1/signals/{signal_id}").status_code == 404
    event = UsageEvent.objects.get(pk=event.pk)
    assert (event.signal_id, event.signal_name) == (None, signal_name)


def test_delete_of_a_signal_priced_by_a_strategy_is_409(api, book):
    signal = SignalFactory(book=book)
    plan = PricingPlan.objects.create(book=book, name="Plan")
    PricingStrategy.objects.create(book=book, plan=plan, agent=signal.agent, name="Per page", charge_type="usage",
                                   signal=signal, pricing_model="flat", rate=1)
    resp = api.delete(f"/v1/signals/{signal.id}")
    assert resp.status_code == 409
    assert "pricing strategy" in resp.json()["message"]
    assert Signal.objects.filter(pk=signal.pk).exists()


def test_a_signal_whose_strategy_was_deleted_can_be_deleted(api, book):
    # The deleted (soft-deleted) strategy kept it a 409 for good: nothing priced it, and a deleted strategy cannot
    # be changed to let it go.
    signal = SignalFactory(book=book)
    plan = api.post("/v1/pricing-plans", {"name": "Plan", "agentId": str(signal.agent_id)}).json()
    strategies = f"/v1/pricing-plans/{plan['id']}/pricing-strategies"
    (strategy,) = api.post(strategies, [{"name": "Per page", "agentId": str(signal.agent_id), "chargeType": "usage",
                                         "signalId": str(signal.id), "pricingModel": "flat", "rate": 1}]).json()
    assert api.delete(f"{strategies}/{strategy['id']}").status_code == 204
    assert api.delete(f"/v1/signals/{signal.id}").status_code == 204
    assert not Signal.objects.filter(pk=signal.pk).exists()
    assert PricingStrategy.objects.get(pk=strategy["id"]).signal_id is None


def test_delete_then_agent_delete_succeeds(api, agent):
    created = api.post("/v1/signals", {"name": "Pages", "agentId": str(agent.id)}).json()
    assert api.delete(f"/v1/agents/{agent.id}").status_code == 409
    assert api.delete(f"/v1/signals/{created['id']}").status_code == 204
    assert api.delete(f"/v1/agents/{agent.id}").status_code == 204


# --------------------------------------------------------------------------- list

def test_list_filters_by_agent_with_total_count(api, book, agent):
    mine = SignalFactory(book=book, agent=agent)
    SignalFactory(book=book)
    resp = api.get("/v1/signals", {"agentId": str(agent.id)})
    assert [row["id"] for row in resp.json()] == [str(mine.id)]
    assert resp["X-Total-Count"] == "1"
    assert api.get("/v1/signals")["X-Total-Count"] == "2"


def test_list_filters_by_type_short_name_and_search(api, book, agent):
    SignalFactory(book=book, agent=agent, name="Pages processed", short_name="pages", type="volume")
    SignalFactory(book=book, agent=agent, name="Reports", short_name="reports")

    def names(**params):
        resp = api.get("/v1/signals", params)
        assert resp.status_code == 200, resp.json()
        return [row["name"] for row in resp.json()]

    assert names(type="volume") == ["Pages processed"]
    assert names(shortName="reports") == ["Reports"]
    assert names(search="PROCESSED") == ["Pages processed"]


def test_list_pages_with_limit_and_offset(api, book, agent):
    made = {str(SignalFactory(book=book, agent=agent).id) for _ in range(3)}
    pages = [api.get("/v1/signals", {"limit": 2, "offset": offset}) for offset in (0, 2)]
    assert [len(page.json()) for page in pages] == [2, 1]
    assert {row["id"] for page in pages for row in page.json()} == made


@pytest.mark.parametrize("params, field", [({"agentId": "nope"}, "agentId"), ({"type": "outcome"}, "type"),
                                           ({"limit": 0}, "limit")])
def test_list_bad_filter_value_is_400_naming_it(api, params, field):
    resp = api.get("/v1/signals", params)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")


# --------------------------------------------------------------------------- bulk

def test_bulk_creates_every_signal_in_order(api, agent):
    resp = api.post("/v1/signals/bulk", {"agentId": str(agent.id), "signals": [
        {"name": "Pages", "shortName": "pages"}, {"name": "Reports", "type": "volume"}]})
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert [(row["name"], row["shortName"], row["type"], row["agentId"]) for row in body] == [
        ("Pages", "pages", "usage", str(agent.id)), ("Reports", "Reports", "volume", str(agent.id))]
    assert Signal.objects.filter(agent=agent).count() == 2


def test_bulk_item_errors_name_the_index_and_create_nothing(api, agent):
    resp = api.post("/v1/signals/bulk", {"agentId": str(agent.id), "signals": [
        {"name": "Pages"}, {"type": "usage"}, {"name": "Bad", "type": "outcome"}]})
    assert resp.status_code == 400
    assert set(resp.json()["message"]) >= {"signals[1].name: This field is required.",
                                           'signals[2].type: "outcome" is not a valid choice.'}
    assert not Signal.objects.exists()


def test_bulk_repeating_a_name_inside_the_request_is_400(api, agent):
    resp = api.post("/v1/signals/bulk", {"agentId": str(agent.id), "signals": [
        {"name": "Pages"}, {"name": "Reports", "shortName": "Pages"}, {"name": "Pages", "shortName": "pg"}]})
    assert resp.status_code == 400
    assert resp.json()["message"] == ["signals[2].name: Repeats signals[0].name.",
                                      "signals[1].shortName: Repeats signals[0].shortName."]
    assert not Signal.objects.exists()


def test_bulk_clash_with_an_existing_signal_is_409_naming_the_index_and_is_all_or_nothing(api, agent):
    api.post("/v1/signals", {"name": "Reports", "agentId": str(agent.id)})
    resp = api.post("/v1/signals/bulk", {"agentId": str(agent.id), "signals": [
        {"name": "Pages"}, {"name": "Reports", "shortName": "rep"}]})
    assert resp.status_code == 409
    assert resp.json()["message"] == ["signals[1].name: This agent already has a signal with this name."]
    assert list(Signal.objects.values_list("name", flat=True)) == ["Reports"]


@pytest.mark.parametrize("body, field", [
    ({"signals": [{"name": "a"}]}, "agentId"),
    ({"agentId": "not-a-uuid", "signals": [{"name": "a"}]}, "agentId"),
    ({"agentId": "{agent}", "signals": []}, "signals"),
    ({"agentId": "{agent}", "signals": [{"name": f"s{i}"} for i in range(101)]}, "signals"),
    ({"agentId": "{agent}"}, "signals"),
])
def test_bulk_envelope_errors_are_400(api, agent, body, field):
    body = {key: value.format(agent=agent.id) if isinstance(value, str) else value for key, value in body.items()}
    resp = api.post("/v1/signals/bulk", body)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")


def test_bulk_accepts_100_signals(api, agent):
    resp = api.post("/v1/signals/bulk", {"agentId": str(agent.id), "signals": [{"name": f"s{i}"} for i in range(100)]})
    assert resp.status_code == 201
    assert len(resp.json()) == 100


def test_bulk_on_an_unknown_agent_is_404(api):
    resp = api.post("/v1/signals/bulk", {"agentId": "00000000-0000-4000-8000-000000000000",
                                         "signals": [{"name": "a"}]})
    assert resp.status_code == 404
