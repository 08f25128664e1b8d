"""Pricing plans over HTTP (spec sections 2 and 4 "Pricing plans"; contract: plan delete 409)."""
import pytest

from billing.models import PlanAgent, PricingPlan, PricingStrategy
from tests.billing.support import (create_plan, create_strategies, create_subscription, error, flat_usage, ok,
                                   recurring, tiered)
from tests.factories import AgentFactory, PlanFactory

pytestmark = pytest.mark.django_db


def plan_agents(api, plan_id) -> set[str]:
    return {agent["id"] for agent in ok(api.get(f"/v1/pricing-plans/{plan_id}"))["agents"]}


def test_create_plan_links_the_agent_and_returns_it(api, agent):
    body = ok(api.post("/v1/pricing-plans", {"name": "Pro", "agentId": str(agent.id), "description": "For teams",
                                             "featuresList": {"sla": "99.9", "seats": [1, 2]}}), 201)
    assert body["agents"] == [{"id": str(agent.id), "name": agent.name, "agentCode": agent.agent_code}]
    assert (body["name"], body["description"], body["isActive"]) == ("Pro", "For teams", True)
    assert body["featuresList"] == {"sla": "99.9", "seats": [1, 2]}
    assert body["createdAt"].endswith("Z")


def test_create_plan_without_agent_has_no_links(api):
    assert create_plan(api)["agents"] == []


@pytest.mark.parametrize("body, field", [
    ({}, "name"),
    ({"name": "x" * 256}, "name"),
    ({"name": "Pro", "description": "d" * 256}, "description"),
    ({"name": "Pro", "agentId": "not-a-uuid"}, "agentId"),
    ({"name": "Pro", "featuresList": ["not", "an", "object"]}, "featuresList"),
    ({"name": "Pro", "isActive": "perhaps"}, "isActive"),
])
def test_create_plan_with_a_bad_field_is_400_naming_it(api, body, field):
    assert error(api.post("/v1/pricing-plans", body), 400).startswith(f"{field}:")


def test_create_plan_with_an_unknown_or_foreign_agent_is_404(api, other_book):
    foreign = AgentFactory(book=other_book)
    for agent_id in ("00000000-0000-4000-8000-000000000000", foreign.id):
        error(api.post("/v1/pricing-plans", {"name": "Pro", "agentId": str(agent_id)}), 404)
    assert not PricingPlan.objects.exists()


def test_link_adds_an_agent_and_linking_it_twice_is_409(api, book, chain):
    second = AgentFactory(book=book)
    body = ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents", {"agentId": str(second.id)}), 201)
    assert {agent["id"] for agent in body["agents"]} == {str(chain.agent.id), str(second.id)}
    assert "already linked" in error(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents",
                                              {"agentId": str(second.id)}), 409)
    assert PlanAgent.objects.filter(plan_id=chain.plan["id"]).count() == 2


def test_link_an_unknown_agent_is_404_and_a_missing_agent_id_400(api, chain):
    error(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents",
                   {"agentId": "00000000-0000-4000-8000-000000000000"}), 404)
    assert error(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents", {}), 400).startswith("agentId:")


def test_unlink_removes_the_link(api, chain):
    resp = api.delete(f"/v1/pricing-plans/{chain.plan['id']}/agents/{chain.agent.id}")
    assert resp.status_code == 204
    assert plan_agents(api, chain.plan["id"]) == set()


@pytest.mark.parametrize("start", ["2025-01-01T00:00:00Z", "2999-01-01T00:00:00Z"])  # active, then upcoming
def test_unlink_with_a_live_subscription_of_that_agent_is_400(api, chain, start):
    create_subscription(api, chain, startDate=start)
    assert "subscription" in error(api.delete(f"/v1/pricing-plans/{chain.plan['id']}/agents/{chain.agent.id}"), 400)
    assert plan_agents(api, chain.plan["id"]) == {str(chain.agent.id)}


def test_unlink_is_allowed_once_the_subscriptions_ended(api, chain):
    subscription = create_subscription(api, chain)
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "ended"}))
    assert api.delete(f"/v1/pricing-plans/{chain.plan['id']}/agents/{chain.agent.id}").status_code == 204


def test_unlink_while_the_plan_prices_the_agent_is_409(api, chain):
    create_strategies(api, chain.plan["id"], [recurring(chain)])
    assert "strateg" in error(api.delete(f"/v1/pricing-plans/{chain.plan['id']}/agents/{chain.agent.id}"), 409)


def test_unlink_an_agent_that_is_not_linked_is_404(api, book, chain):
    stranger = AgentFactory(book=book)
    error(api.delete(f"/v1/pricing-plans/{chain.plan['id']}/agents/{stranger.id}"), 404)
    error(api.delete(f"/v1/pricing-plans/{chain.plan['id']}/agents/not-a-uuid"), 404)


def test_list_plans_is_paginated_under_results(api):
    for index in range(12):
        create_plan(api, name=f"Plan {index}")
    first = ok(api.get("/v1/pricing-plans"))
    assert (first["page"], first["limit"], first["totalPages"], first["totalResults"]) == (1, 10, 2, 12)
    second = ok(api.get("/v1/pricing-plans", {"page": 2}))
    assert len(first["results"]) == 10 and len(second["results"]) == 2
    assert {plan["id"] for plan in first["results"]}.isdisjoint({plan["id"] for plan in second["results"]})


def test_list_plans_filters_by_agent_and_is_active(api, book, agent):
    other = AgentFactory(book=book)
    mine = create_plan(api, agent.id)
    create_plan(api, other.id)
    retired = create_plan(api, agent.id, isActive=False)
    assert [plan["id"] for plan in ok(api.get("/v1/pricing-plans", {"agentId": str(agent.id), "isActive": "true"}))
            ["results"]] == [mine["id"]]
    inactive = ok(api.get("/v1/pricing-plans", {"isActive": "false"}))["results"]
    assert [plan["id"] for plan in inactive] == [retired["id"]]


@pytest.mark.parametrize("params, name", [({"agentId": "nope"}, "agentId"), ({"isActive": "maybe"}, "isActive"),
                                          ({"limit": 101}, "limit"), ({"page": 0}, "page")])
def test_list_plans_with_a_bad_parameter_is_400_naming_it(api, params, name):
    assert error(api.get("/v1/pricing-plans", params), 400).startswith(f"{name}:")


def test_plans_of_another_organization_are_invisible(api, other_api):
    foreign = create_plan(other_api, name="Theirs")
    error(api.get(f"/v1/pricing-plans/{foreign['id']}"), 404)
    error(api.patch(f"/v1/pricing-plans/{foreign['id']}", {"name": "Mine"}), 404)
    error(api.delete(f"/v1/pricing-plans/{foreign['id']}"), 404)
    error(api.post(f"/v1/pricing-plans/{foreign['id']}/copy", {}), 404)
    assert ok(api.get("/v1/pricing-plans"))["totalResults"] == 0


def test_patch_plan_changes_its_fields(api, chain):
    body = ok(api.patch(f"/v1/pricing-plans/{chain.plan['id']}",
                        {"name": "Team", "description": "", "featuresList": {"x": 1}, "isActive": False}))
    assert (body["name"], body["description"], body["featuresList"], body["isActive"]) == ("Team", "", {"x": 1}, False)
    assert body["agents"][0]["id"] == str(chain.agent.id)


def test_patch_plan_agents_is_400_pointing_to_the_link_routes(api, book, chain):
    other = AgentFactory(book=book)
    message = error(api.patch(f"/v1/pricing-plans/{chain.plan['id']}", {"agentId": str(other.id)}), 400)
    assert message.startswith("agentId:") and "/agents" in message
    assert plan_agents(api, chain.plan["id"]) == {str(chain.agent.id)}


def test_delete_plan_is_permanent_with_its_strategies_and_links(api, chain):
    create_strategies(api, chain.plan["id"], [recurring(chain)])
    assert api.delete(f"/v1/pricing-plans/{chain.plan['id']}").status_code == 204
    error(api.get(f"/v1/pricing-plans/{chain.plan['id']}"), 404)
    assert not PricingStrategy.objects.exists() and not PlanAgent.objects.exists()


@pytest.mark.django_db(transaction=True)  # as a request runs: no test transaction around it (select_for_update)
def test_delete_plan_with_an_active_subscription_is_409_and_keeps_it(api, chain):
    create_subscription(api, chain)
    assert "active" in error(api.delete(f"/v1/pricing-plans/{chain.plan['id']}"), 409)
    ok(api.get(f"/v1/pricing-plans/{chain.plan['id']}"))


def test_delete_plan_with_only_ended_subscriptions_is_409_and_suggests_retiring_it(api, chain):
    subscription = create_subscription(api, chain)
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "ended"}))
    assert "isActive" in error(api.delete(f"/v1/pricing-plans/{chain.plan['id']}"), 409)


def test_copy_carries_current_strategies_and_agent_links(api, book, chain):
    second = AgentFactory(book=book)
    ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents", {"agentId": str(second.id)}), 201)
    kept, dropped = create_strategies(api, chain.plan["id"], [flat_usage(chain), recurring(chain)])
    api.delete(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{dropped['id']}")
    copy = ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/copy", {"newName": "Pro 2025"}), 201)
    assert copy["id"] != chain.plan["id"] and copy["name"] == "Pro 2025"
    assert {agent["id"] for agent in copy["agents"]} == {str(chain.agent.id), str(second.id)}
    rows = ok(api.get(f"/v1/pricing-plans/{copy['id']}/pricing-strategies"))["results"]
    assert [(row["name"], row["chargeType"], row["rate"], row["signalId"]) for row in rows] == \
        [(kept["name"], "usage", 0.25, str(chain.signal.id))]
    assert len(ok(api.get(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies"))["results"]) == 1


def test_copy_without_a_name_is_named_after_the_source(api, chain):
    assert ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/copy"), 201)["name"] == "Pro (copy)"


def test_copy_with_discount_takes_that_percent_off_every_rate_and_tier_rate(api, chain):
    create_strategies(api, chain.plan["id"], [
        recurring(chain, rate="49.99"),
        tiered(chain, "graduated", [{"lower": 0, "upper": 100, "rate": "0.10"},
                                    {"lower": 100, "upper": None, "rate": "0.05"}], minimumCommitment=50),
        tiered(chain, "credit_pool", [{"lower": 0, "upper": 1000, "rate": 50},
                                      {"lower": 1000, "upper": None, "rate": "0.75"}], name="pool"),
    ])
    copy = ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/copy", {"discount": "12.5"}), 201)
    rows = {row["name"]: row for row in ok(api.get(f"/v1/pricing-plans/{copy['id']}/pricing-strategies"))["results"]}
    assert rows["platform fee"]["rate"] == 43.74125  # 49.99 x 0.875, exact
    assert rows["graduated usage"]["tiers"] == [{"lower": 0, "upper": 100, "rate": 0.0875},
                                                {"lower": 100, "upper": None, "rate": 0.04375}]
    assert rows["graduated usage"]["minimumCommitment"] == 50
    assert [tier["rate"] for tier in rows["pool"]["tiers"]] == [43.75, 0.65625]


@pytest.mark.parametrize("discount", [-1, 100.5, "lots"])
def test_copy_with_a_discount_outside_0_to_100_is_400(api, chain, discount):
    resp = api.post(f"/v1/pricing-plans/{chain.plan['id']}/copy", {"discount": discount})
    assert error(resp, 400).startswith("discount:")


@pytest.mark.parametrize("client_kwargs", [
    {"key_type": "publishable"}, {"scope": "ingest"}, {"scope": "legal"},
])
def test_plans_refuse_publishable_ingest_and_legal_keys_with_403(client_for, book, client_kwargs):
    client = client_for(**client_kwargs)
    plan = PlanFactory(book=book)
    assert client.get("/v1/pricing-plans").status_code == 403
    assert client.get(f"/v1/pricing-plans/{plan.id}").status_code == 403
    assert client.post("/v1/pricing-plans", {"name": "x"}).status_code == 403
