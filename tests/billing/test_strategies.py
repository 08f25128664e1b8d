"""Pricing strategies over HTTP (spec sections 2 and 4 "Pricing strategies"; contract "Tiers")."""
from decimal import Decimal

import pytest

from billing.models import PricingStrategy, SubscriptionChange
from tests.billing.support import (changelog, create_plan, create_strategies, create_subscription, error, flat_usage,
                                   ok, recurring, subscription_body, tiered)
from tests.factories import AgentFactory, CustomerFactory, SignalFactory

pytestmark = pytest.mark.django_db

NO_SUCH_ID = "00000000-0000-4000-8000-000000000000"
TWO_TIERS = [{"lower": 0, "upper": 100, "rate": "0.10"}, {"lower": 100, "upper": None, "rate": "0.05"}]


def strategies_url(plan_id, strategy_id=None):
    return f"/v1/pricing-plans/{plan_id}/pricing-strategies" + (f"/{strategy_id}" if strategy_id else "")


def test_create_takes_an_array_and_returns_the_created_strategies(api, chain):
    rows = create_strategies(api, chain.plan["id"], [flat_usage(chain), recurring(chain, rate=99)])
    assert [row["chargeType"] for row in rows] == ["usage", "recurring"]
    usage, fee = rows
    assert (usage["pricingModel"], usage["rate"], usage["signalId"]) == ("flat", 0.25, str(chain.signal.id))
    assert (fee["pricingModel"], fee["signalId"], fee["rate"]) == (None, None, 99)
    assert all(row["billingFrequency"] == "monthly" and row["active"] is True and row["deletedAt"] is None
               and row["planId"] == chain.plan["id"] and row["tags"] == [] for row in rows)
    assert PricingStrategy.objects.filter(plan_id=chain.plan["id"]).count() == 2


def test_decimals_are_exact_in_storage_and_json_numbers_out(api, chain):
    row, = create_strategies(api, chain.plan["id"], [tiered(chain, "volume", [
        {"lower": 0, "upper": "1000.5", "rate": "0.000000123456"}, {"lower": "1000.5", "upper": None, "rate": 0.1}])])
    stored = PricingStrategy.objects.get(pk=row["id"])
    assert stored.tiers == [{"lower": "0", "upper": "1000.5", "rate": "0.000000123456"},
                            {"lower": "1000.5", "upper": None, "rate": "0.1"}]
    assert row["tiers"] == [{"lower": 0, "upper": 1000.5, "rate": 1.23456e-07},
                            {"lower": 1000.5, "upper": None, "rate": 0.1}]
    single, = create_strategies(api, chain.plan["id"], [flat_usage(chain, rate="0.000000000001")])
    assert PricingStrategy.objects.get(pk=single["id"]).rate == Decimal("0.000000000001")


@pytest.mark.parametrize("body", [{"name": "not an array"}, [], "text"])
def test_create_needs_a_non_empty_array(api, chain, body):
    error(api.post(strategies_url(chain.plan["id"]), body), 400)


def test_create_is_all_or_nothing_and_errors_name_the_index(api, chain):
    broken = flat_usage(chain, signalId=None)
    message = error(api.post(strategies_url(chain.plan["id"]), [flat_usage(chain), broken]), 400)
    assert message.startswith("[1].signalId: Required when chargeType is usage")
    assert not PricingStrategy.objects.exists()


def test_a_plan_holds_at_most_so_many_strategies(api, chain, monkeypatch):
    """An invoice numbers its lines (a plan's strategies) in a small integer: a plan past the most is refused whole,
    by create and by a batch's `new` alike. The most is 1,000; three here."""
    monkeypatch.setattr("billing.services.strategies.MOST_STRATEGIES_PER_PLAN", 3)
    create_strategies(api, chain.plan["id"], [recurring(chain, rate=1), recurring(chain, rate=2)])
    too_many = error(api.post(strategies_url(chain.plan["id"]), [recurring(chain), recurring(chain)]), 400)
    assert too_many.startswith("strategies: A plan holds at most 3 pricing strategies")
    batch = error(api.patch(strategies_url(chain.plan["id"]), {"strategies": {"new": [recurring(chain),
                                                                                      recurring(chain)]}}), 400)
    assert batch.startswith("strategies.new: A plan holds at most 3")
    assert PricingStrategy.objects.filter(plan_id=chain.plan["id"]).count() == 2
    create_strategies(api, chain.plan["id"], [recurring(chain, rate=3)])  # the third fits


@pytest.mark.parametrize("item, field", [
    ({"chargeType": "usage", "pricingModel": "flat", "rate": 1}, "signalId"),
    ({"chargeType": "usage", "rate": 1, "with_signal": True}, "pricingModel"),
    ({"chargeType": "seat_based", "rate": 1}, "pricingModel"),
    ({"chargeType": "seat_based", "pricingModel": "credit_pool", "tiers": TWO_TIERS}, "pricingModel"),
    ({"chargeType": "recurring", "pricingModel": "graduated", "tiers": TWO_TIERS}, "pricingModel"),
    ({"chargeType": "recurring", "rate": 5, "minimumCommitment": 2}, "minimumCommitment"),
    ({"chargeType": "recurring", "rate": 5, "with_signal": True}, "signalId"),
    ({"chargeType": "recurring"}, "rate"),
    ({"chargeType": "usage", "pricingModel": "flat", "with_signal": True}, "rate"),
    ({"chargeType": "usage", "pricingModel": "flat", "rate": 1, "tiers": TWO_TIERS, "with_signal": True}, "tiers"),
    ({"chargeType": "usage", "pricingModel": "graduated", "rate": 1, "tiers": TWO_TIERS, "with_signal": True}, "rate"),
    ({"chargeType": "usage", "pricingModel": "volume", "with_signal": True}, "tiers"),
    ({"chargeType": "usage", "pricingModel": "flat", "rate": -1, "with_signal": True}, "rate"),
    ({"chargeType": "usage", "pricingModel": "flat", "rate": "abc", "with_signal": True}, "rate"),
    ({"chargeType": "hourly", "rate": 1}, "chargeType"),
    ({"chargeType": "recurring", "rate": 1, "billingFrequency": "weekly"}, "billingFrequency"),
    ({"chargeType": "recurring", "rate": 1, "name": ""}, "name"),
    ({"chargeType": "recurring", "rate": 1, "agentId": "x"}, "agentId"),
])
def test_inconsistent_strategy_is_400_naming_the_field(api, chain, item, field):
    body = {"name": "s", "agentId": str(chain.agent.id), **item}
    if body.pop("with_signal", False):
        body["signalId"] = str(chain.signal.id)
    assert f"[0].{field}:" in error(api.post(strategies_url(chain.plan["id"]), [body]), 400)


@pytest.mark.parametrize("model, tiers, field", [
    ("graduated", [{"lower": 1, "upper": None, "rate": 1}], "tiers[0].lower"),
    ("graduated", [{"lower": 0, "upper": 10, "rate": 1}, {"lower": 20, "upper": None, "rate": 1}], "tiers[1].lower"),
    ("graduated", [{"lower": 0, "upper": 10, "rate": 1}, {"lower": 5, "upper": None, "rate": 1}], "tiers[1].lower"),
    ("volume", [{"lower": 0, "upper": 0, "rate": 1}, {"lower": 0, "upper": None, "rate": 1}], "tiers[0].upper"),
    ("volume", [{"lower": 0, "upper": 10, "rate": 1}, {"lower": 10, "upper": 5, "rate": 1},
                {"lower": 5, "upper": None, "rate": 1}], "tiers[1].upper"),
    ("graduated", [{"lower": 0, "upper": None, "rate": 1}, {"lower": 10, "upper": None, "rate": 1}], "tiers[0].upper"),
    ("graduated", [{"lower": 0, "upper": 10, "rate": 1}], "tiers[0].upper"),
    ("graduated", [{"lower": 0, "upper": None, "rate": -0.5}], "tiers[0].rate"),
    ("graduated", [{"lower": 0, "upper": None}], "tiers[0].rate"),
    ("credit_pool", [{"lower": 0, "upper": None, "rate": 50}], "tiers"),
    ("credit_pool", [{"lower": 0, "upper": 10, "rate": 50}, {"lower": 10, "upper": 20, "rate": 1},
                     {"lower": 20, "upper": None, "rate": 1}], "tiers"),
    ("credit_pool", [{"lower": 0, "upper": 100, "rate": 50}, {"lower": 100, "upper": 200, "rate": 1}],
     "tiers[1].upper"),
    ("graduated", [None, {"lower": 10, "upper": None, "rate": "0.5"}], "tiers[0]"),
    ("graduated", [{"lower": 0, "upper": 10, "rate": 1}, None], "tiers[1]"),
    ("credit_pool", [None], "tiers[0]"),
])
def test_broken_tiers_are_400_naming_the_tier(api, chain, model, tiers, field):
    assert f"[0].{field}:" in error(api.post(strategies_url(chain.plan["id"]), [tiered(chain, model, tiers)]), 400)


@pytest.mark.parametrize("model, tiers", [
    ("graduated", TWO_TIERS),
    ("volume", [{"lower": 0, "upper": None, "rate": 2}]),
    ("volume", [{"lower": 0, "upper": 10, "rate": 0}, {"lower": 10, "upper": "10.5", "rate": 1},
                {"lower": "10.5", "upper": None, "rate": 2}]),
    ("credit_pool", [{"lower": 0, "upper": 1000, "rate": 50}, {"lower": 1000, "upper": None, "rate": "0.75"}]),
])
def test_well_formed_tiers_are_accepted(api, chain, model, tiers):
    row, = create_strategies(api, chain.plan["id"], [tiered(chain, model, tiers)])
    assert row["pricingModel"] == model and len(row["tiers"]) == len(tiers) and row["rate"] is None


def test_seat_based_and_onetime_strategies_are_accepted(api, chain):
    seats, once = create_strategies(api, chain.plan["id"], [
        {"name": "seats", "agentId": str(chain.agent.id), "chargeType": "seat_based", "pricingModel": "flat",
         "rate": 10, "minimumCommitment": 5, "billingFrequency": "yearly", "tags": ["core"]},
        {"name": "setup", "agentId": str(chain.agent.id), "chargeType": "onetime", "rate": 100, "active": False},
    ])
    assert (seats["minimumCommitment"], seats["billingFrequency"], seats["tags"]) == (5, "yearly", ["core"])
    assert (once["chargeType"], once["active"]) == ("onetime", False)


def test_agent_must_be_linked_to_the_plan(api, book, chain):
    stranger = AgentFactory(book=book)
    body = recurring(chain, agentId=str(stranger.id))
    assert error(api.post(strategies_url(chain.plan["id"]), [body]), 400).startswith("[0].agentId: Agent is not linked")


def test_unknown_agent_or_signal_is_404_naming_it(api, other_book, chain):
    foreign_signal = SignalFactory(book=other_book)
    url = strategies_url(chain.plan["id"])
    assert "[0].agentId" in error(api.post(url, [recurring(chain, agentId=NO_SUCH_ID)]), 404)
    foreign = flat_usage(chain, signalId=str(foreign_signal.id))
    assert "[1].signalId" in error(api.post(url, [flat_usage(chain), foreign]), 404)
    error(api.post(strategies_url(NO_SUCH_ID), [recurring(chain)]), 404)


def test_signal_of_another_agent_is_400(api, book, chain):
    other_agent_signal = SignalFactory(book=book)
    body = [flat_usage(chain, signalId=str(other_agent_signal.id))]
    message = error(api.post(strategies_url(chain.plan["id"]), body), 400)
    assert message.startswith("[0].signalId: The signal belongs to another agent")


def test_get_one_strategy(api, chain):
    created, = create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    assert ok(api.get(strategies_url(chain.plan["id"], created["id"]))) == created
    error(api.get(strategies_url(chain.plan["id"], NO_SUCH_ID)), 404)
    other_plan = create_plan(api, chain.agent.id, name="Other")
    error(api.get(strategies_url(other_plan["id"], created["id"])), 404)


def test_list_is_paginated_10_by_default(api, chain):
    create_strategies(api, chain.plan["id"], [recurring(chain, rate=index + 1, name=f"fee {index}")
                                              for index in range(12)])
    first = ok(api.get(strategies_url(chain.plan["id"])))
    second = ok(api.get(strategies_url(chain.plan["id"]), {"page": 2}))
    assert (first["limit"], first["totalPages"], first["totalResults"]) == (10, 2, 12)
    assert len(first["results"]) == 10 and len(second["results"]) == 2
    assert {row["id"] for row in first["results"]}.isdisjoint({row["id"] for row in second["results"]})
    assert len(ok(api.get(strategies_url(chain.plan["id"]), {"limit": 5}))["results"]) == 5


def test_list_filters_by_charge_type_pricing_model_and_active(api, chain):
    create_strategies(api, chain.plan["id"], [
        flat_usage(chain), tiered(chain, "graduated", TWO_TIERS), recurring(chain), recurring(chain, active=False)])

    def names(**params):
        return sorted(row["name"] for row in ok(api.get(strategies_url(chain.plan["id"]), params))["results"])
    assert names(chargeType="recurring") == ["platform fee", "platform fee"]
    assert names(pricingModel="graduated") == ["graduated usage"]
    assert len(names(active="false")) == 1 and len(names(active="true")) == 3
    assert names(chargeType="usage", pricingModel="flat") == ["per page"]


@pytest.mark.parametrize("params, name", [({"chargeType": "hourly"}, "chargeType"),
                                          ({"pricingModel": "tiered"}, "pricingModel"),
                                          ({"active": "yes please"}, "active")])
def test_list_with_a_bad_filter_is_400_naming_it(api, chain, params, name):
    assert error(api.get(strategies_url(chain.plan["id"]), params), 400).startswith(f"{name}:")


def test_patch_one_changes_it_and_checks_the_merged_strategy(api, chain):
    created, = create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    url = strategies_url(chain.plan["id"], created["id"])
    assert ok(api.patch(url, {"rate": "0.30", "tags": ["2025"]}))["rate"] == 0.3
    assert error(api.patch(url, {"pricingModel": "graduated"}), 400) == (
        "rate: Not used with graduated pricing: the rates are in tiers; send null. | "
        "tiers: graduated pricing needs tiers.")
    body = ok(api.patch(url, {"pricingModel": "graduated", "rate": None, "tiers": TWO_TIERS}))
    assert (body["pricingModel"], body["rate"], len(body["tiers"])) == ("graduated", None, 2)
    assert "signalId" in error(api.patch(url, {"chargeType": "recurring", "pricingModel": None, "rate": 5,
                                               "tiers": []}), 400)
    assert error(api.patch(url, {"tiers": [{"rate": 1}]}), 400).startswith("tiers[0].lower:")
    assert error(api.patch(url, {"pricingModel": "graduated", "rate": None, "tiers": [None]}), 400).startswith(
        "tiers[0]:")
    batch = {"strategies": {"new": [tiered(chain, "volume", [None])],
                            "update": [{"id": created["id"], "tiers": [TWO_TIERS[0], None]}]}}
    message = error(api.patch(strategies_url(chain.plan["id"]), batch), 400)
    assert "strategies.new[0].tiers[0]:" in message and "strategies.update[0].tiers[1]:" in message


def test_batch_patch_creates_and_updates_in_one_call(api, chain):
    first, second = create_strategies(api, chain.plan["id"], [flat_usage(chain), recurring(chain)])
    body = ok(api.patch(strategies_url(chain.plan["id"]), {"strategies": {
        "new": [recurring(chain, name="support", rate=15)],
        "update": [{"id": first["id"], "rate": 3}, {"id": second["id"], "name": "base fee"}],
    }}))
    assert [row["name"] for row in body["created"]] == ["support"]
    assert [(row["id"], row["rate"]) for row in body["updated"]] == [(first["id"], 3), (second["id"], 20)]
    rows = {row["name"]: row for row in ok(api.get(strategies_url(chain.plan["id"])))["results"]}
    assert set(rows) == {"per page", "base fee", "support"} and rows["support"]["rate"] == 15


def test_batch_patch_is_all_or_nothing(api, chain):
    first, = create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    message = error(api.patch(strategies_url(chain.plan["id"]), {"strategies": {
        "new": [recurring(chain, name="support")], "update": [{"id": first["id"], "pricingModel": "volume"}]}}), 400)
    assert message.startswith("strategies.update[0].rate:")
    assert [row["name"] for row in ok(api.get(strategies_url(chain.plan["id"])))["results"]] == ["per page"]
    assert PricingStrategy.objects.get(pk=first["id"]).pricing_model == "flat"


def test_batch_patch_with_unknown_or_repeated_ids(api, chain):
    first, = create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    url = strategies_url(chain.plan["id"])
    unknown = {"strategies": {"update": [{"id": NO_SUCH_ID, "rate": 1}]}}
    assert error(api.patch(url, unknown), 404).startswith("strategies.update[0].id:")
    twice = {"strategies": {"update": [{"id": first["id"], "rate": 1}, {"id": first["id"], "rate": 2}]}}
    assert error(api.patch(url, twice), 400).startswith("strategies.update[1].id:")
    assert error(api.patch(url, {"strategies": {"new": [{"name": "x"}]}}), 400).startswith("strategies.new[0].agentId:")
    error(api.patch(url, {}), 400)


def test_delete_is_soft(api, chain):
    created, = create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    url = strategies_url(chain.plan["id"], created["id"])
    assert api.delete(url).status_code == 204
    assert ok(api.get(strategies_url(chain.plan["id"])))["results"] == []
    assert ok(api.get(url))["deletedAt"] is not None  # still readable, for history
    assert PricingStrategy.objects.get(pk=created["id"]).deleted_at is not None
    error(api.patch(url, {"rate": 1}), 404)
    error(api.delete(url), 404)
    batch = {"strategies": {"update": [{"id": created["id"], "rate": 1}]}}
    error(api.patch(strategies_url(chain.plan["id"]), batch), 404)


def test_every_price_change_is_logged_on_the_plans_subscriptions(api, chain):
    subscription = create_subscription(api, chain)
    created, = create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    ok(api.patch(strategies_url(chain.plan["id"], created["id"]), {"rate": "0.30"}))
    api.delete(strategies_url(chain.plan["id"], created["id"]))
    added, changed, deleted = [entry for entry in reversed(changelog(api, subscription["id"]))
                               if entry["kind"] == "price_update"]
    assert added["strategyId"] == created["id"] and added["summary"].startswith("Pricing strategy 'per page' added")
    assert added["changes"]["rate"] == {"before": None, "after": 0.25}
    assert changed["changes"] == {"rate": {"before": 0.25, "after": 0.3}}
    assert changed["actor"] == f"api-key:{api.key.id}"
    assert deleted["changes"]["rate"] == {"before": 0.3, "after": None}
    assert deleted["changes"]["deletedAt"]["after"] is not None


def test_label_only_changes_and_other_agents_subscriptions_get_no_price_update(api, book, chain):
    other_agent = AgentFactory(book=book)
    ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents", {"agentId": str(other_agent.id)}), 201)
    mine = create_subscription(api, chain)
    theirs = ok(api.post("/v1/subscriptions", subscription_body(
        chain, agentId=str(other_agent.id), customerId=str(CustomerFactory(book=book).id))), 201)
    created, = create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    ok(api.patch(strategies_url(chain.plan["id"], created["id"]), {"name": "pages", "tags": ["x"]}))
    kinds = [entry["kind"] for entry in changelog(api, mine["id"])]
    assert kinds.count("price_update") == 1  # the create only
    assert not SubscriptionChange.objects.filter(subscription_id=theirs["id"], kind="price_update").exists()


def test_strategies_of_another_organization_are_404(api, other_api, other_book):
    foreign_agent = AgentFactory(book=other_book)
    foreign_plan = create_plan(other_api, foreign_agent.id)
    error(api.get(strategies_url(foreign_plan["id"])), 404)
    error(api.post(strategies_url(foreign_plan["id"]), [{"name": "x", "agentId": str(foreign_agent.id),
                                                         "chargeType": "recurring", "rate": 1}]), 404)


def test_publishable_key_cannot_write_strategies(client_for, chain):
    client = client_for(key_type="publishable")
    assert client.post(strategies_url(chain.plan["id"]), [recurring(chain)]).status_code == 403
    assert client.get(strategies_url(chain.plan["id"])).status_code == 403
