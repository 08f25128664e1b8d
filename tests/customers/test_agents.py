"""/v1/agents through HTTP (spec §2 Agent, §4 Agents)."""
from datetime import datetime, timezone

import pytest

from billing.models import PlanAgent, PricingPlan, Subscription
from customers.models import Agent, UsageEvent
from tests.factories import AgentFactory, CustomerFactory, SignalFactory, UsageEventFactory

pytestmark = pytest.mark.django_db


def test_create_returns_201_with_every_field_and_defaults(api):
    resp = api.post("/v1/agents", {"name": "Summarizer", "agentCode": "sum-1"})
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert set(body) == {"id", "name", "agentCode", "description", "isActive", "context", "createdAt", "updatedAt"}
    assert (body["name"], body["agentCode"], body["isActive"], body["context"], body["description"]) == \
        ("Summarizer", "sum-1", True, {}, None)
    assert body["createdAt"].endswith("Z")
    assert api.get(f"/v1/agents/{body['id']}").json() == body


def test_context_is_stored_and_returned_verbatim(api):
    context = {"model_name": "gpt-4o", "promptVersion": 3, "Nested": {"a_b": [1, {"C": None}]}}
    created = api.post("/v1/agents", {"name": "Ctx", "agentCode": "ctx", "context": context,
                                      "description": "Writes summaries", "isActive": False}).json()
    body = api.get(f"/v1/agents/{created['id']}").json()
    assert (body["context"], body["description"], body["isActive"]) == (context, "Writes summaries", False)


@pytest.mark.parametrize("payload, field", [
    ({"agentCode": "a"}, "name"),
    ({"name": "a"}, "agentCode"),
    ({"name": "n" * 256, "agentCode": "a"}, "name"),
    ({"name": "a", "agentCode": "c" * 256}, "agentCode"),
    ({"name": "a", "agentCode": ""}, "agentCode"),
    ({"name": "a", "agentCode": 7}, "agentCode"),
    ({"name": "a", "agentCode": "a", "isActive": "yes"}, "isActive"),
    ({"name": "a", "agentCode": "a", "context": "text"}, "context"),
])
def test_invalid_field_is_400_naming_the_field(api, payload, field):
    resp = api.post("/v1/agents", payload)
    assert resp.status_code == 400
    assert any(message.startswith(f"{field}:") for message in resp.json()["message"]), resp.json()
    assert not Agent.objects.exists()


def test_255_characters_are_accepted(api):
    resp = api.post("/v1/agents", {"name": "n" * 255, "agentCode": "c" * 255})
    assert resp.status_code == 201


def test_duplicate_agent_code_is_409_on_create_and_update(api):
    api.post("/v1/agents", {"name": "First", "agentCode": "taken"})
    resp = api.post("/v1/agents", {"name": "Second", "agentCode": "taken"})
    assert resp.status_code == 409
    assert resp.json()["message"] == ["agentCode: An agent with this agentCode already exists."]
    other = api.post("/v1/agents", {"name": "Third", "agentCode": "free"}).json()
    assert api.patch(f"/v1/agents/{other['id']}", {"agentCode": "taken"}).status_code == 409
    assert api.get(f"/v1/agents/{other['id']}").json()["agentCode"] == "free"


def test_patch_changes_only_the_sent_fields(api):
    created = api.post("/v1/agents", {"name": "A", "agentCode": "a", "description": "d", "context": {"k": 1}}).json()
    body = api.patch(f"/v1/agents/{created['id']}", {"isActive": False, "name": "Renamed"}).json()
    assert (body["name"], body["isActive"], body["agentCode"], body["description"], body["context"]) == \
        ("Renamed", False, "a", "d", {"k": 1})


@pytest.mark.parametrize("payload, field", [({"name": "n" * 256}, "name"), ({"agentCode": None}, "agentCode"),
                                            ({"isActive": None}, "isActive")])
def test_patch_validates_like_create(api, payload, field):
    created = api.post("/v1/agents", {"name": "A", "agentCode": "a"}).json()
    resp = api.patch(f"/v1/agents/{created['id']}", payload)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")


def test_unknown_agent_is_404(api):
    for resp in (api.get("/v1/agents/00000000-0000-4000-8000-000000000000"),
                 api.delete("/v1/agents/00000000-0000-4000-8000-000000000000")):
        assert resp.status_code == 404
        assert resp.json()["message"] == "Agent not found"
    resp = api.get("/v1/agents/nope")  # an agent code where the id belongs: the answer says how to find the id
    assert resp.status_code == 404
    assert resp.json()["message"] == ("Agent not found: 'nope' is not an agent id; this takes the agent's `id` (a "
                                      "UUID). To find an agent's id from the value you sent, use GET "
                                      "/v1/agents?agentCode=nope.")


# --------------------------------------------------------------------------- delete

def test_delete_without_dependents_is_permanent(api, book):
    agent = AgentFactory(book=book)
    resp = api.delete(f"/v1/agents/{agent.id}")
    assert resp.status_code == 204 and not resp.content
    assert not Agent.objects.filter(pk=agent.pk).exists()
    assert api.get(f"/v1/agents/{agent.id}").status_code == 404


def test_delete_with_signals_is_409(api, book):
    signal = SignalFactory(book=book)
    resp = api.delete(f"/v1/agents/{signal.agent_id}")
    assert resp.status_code == 409
    assert "1 signal(s)" in resp.json()["message"]
    assert Agent.objects.filter(pk=signal.agent_id).exists()


def test_delete_with_a_linked_plan_is_409(api, book):
    agent = AgentFactory(book=book)
    plan = PricingPlan.objects.create(book=book, name="Plan")
    PlanAgent.objects.create(book=book, plan=plan, agent=agent)
    resp = api.delete(f"/v1/agents/{agent.id}")
    assert resp.status_code == 409
    assert "1 pricing plan(s)" in resp.json()["message"]
    assert Agent.objects.filter(pk=agent.pk).exists()


def test_delete_keeps_usage_events_with_the_agent_reference_cleared(api, book):
    event = UsageEventFactory(book=book)
    agent_id, agent_code = event.agent_id, event.agent.agent_code
    assert api.delete(f"/v1/signals/{event.signal_id}").status_code == 204
    assert api.delete(f"/v1/agents/{agent_id}").status_code == 204
    event = UsageEvent.objects.get(pk=event.pk)
    assert (event.agent_id, event.agent_code) == (None, agent_code)


def test_delete_while_another_record_protects_the_agent_is_409(api, book):
    """A subscription names the agent although no plan link does (rows written directly): still 409."""
    agent = AgentFactory(book=book)
    customer = CustomerFactory(book=book)
    plan = PricingPlan.objects.create(book=book, name="Plan")
    Subscription.objects.create(book=book, name="Sub", plan=plan, agent=agent, customer=customer,
                                start_date=datetime(2025, 1, 1, tzinfo=timezone.utc), status="ended")
    resp = api.delete(f"/v1/agents/{agent.id}")
    assert resp.status_code == 409
    assert "subscriptions" in resp.json()["message"]
    assert Agent.objects.filter(pk=agent.pk).exists()


# --------------------------------------------------------------------------- list

def test_list_is_a_bare_array_with_total_and_paging(api, book):
    made = [AgentFactory(book=book) for _ in range(3)]
    resp = api.get("/v1/agents", {"limit": 2})
    assert [row["id"] for row in resp.json()] == [str(made[2].id), str(made[1].id)]
    assert resp["X-Total-Count"] == "3"
    assert [row["id"] for row in api.get("/v1/agents", {"limit": 2, "offset": 2}).json()] == [str(made[0].id)]
    assert api.get("/v1/agents", {"limit": 101}).status_code == 400


def test_list_filters(api, book):
    AgentFactory(book=book, name="Summarizer", agent_code="sum", description="Writes summaries")
    AgentFactory(book=book, name="Translator", agent_code="tr", is_active=False)

    def names(**params):
        resp = api.get("/v1/agents", params)
        assert resp.status_code == 200, resp.json()
        return [row["name"] for row in resp.json()]

    assert names(isActive="false") == ["Translator"]
    assert names(isActive="true") == ["Summarizer"]
    assert names(agentCode="tr") == ["Translator"]
    assert names(search="SUMMARIES") == ["Summarizer"]
    assert names(search="tr", isActive="true") == []


@pytest.mark.parametrize("params, field", [({"isActive": "maybe"}, "isActive"),
                                           ({"createdAfter": "soon"}, "createdAfter")])
def test_list_bad_filter_value_is_400_naming_it(api, params, field):
    resp = api.get("/v1/agents", params)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")
