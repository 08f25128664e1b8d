"""A credit pool reads each period with the terms in force for it (docs/decisions/credit-pools.md): a period whose
invoice captured its terms counts down, settles and is verified against the pool that invoice bills, whatever the
plan or the subscription's agent became since; a period a plan change splits grants its share once."""
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.core.cache import cache

from billing.models import CreditGrant
from console.verification import ledger_verify
from tests.billing.pools import balance, pool_strategy, pool_subscription, run_jobs, topup, use
from tests.billing.support import create_plan, create_strategies, ok
from tests.factories import AgentFactory, SignalFactory

pytestmark = pytest.mark.django_db
JUNE = ("2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z")


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def generate_june(api, chain, subscription) -> dict:
    return api.post("/v1/invoices/generate", {
        "customerId": str(chain.customer.id), "subscriptionId": subscription["id"],
        "billingPeriodStart": JUNE[0], "billingPeriodEnd": JUNE[1]})


def second_agent_with_its_own_pool(api, book, chain, size=100):
    """Another agent of the plan, selling a pool of `size` units on a signal of its own."""
    agent = AgentFactory(book=book)
    signal = SignalFactory(book=book, agent=agent)
    ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents", {"agentId": str(agent.id)}), 201)
    create_strategies(api, chain.plan["id"], [{**pool_strategy(chain, size=size), "name": "second pool",
                                               "agentId": str(agent.id), "signalId": str(signal.id)}])
    return agent, signal


def test_a_draft_keeps_counting_the_pool_it_bills_after_a_patch_of_agent_id(api, book, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 130, at=at("2025-06-05"))
    june = ok(generate_june(api, chain, subscription), 201)
    assert [(line["quantity"], line["amount"]) for line in june["lines"]] == [(130, 72.5)]  # 50 + 30 x 0.75
    agent, signal = second_agent_with_its_own_pool(api, book, chain, size=40)
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"agentId": str(agent.id)}))
    use(chain, 5, at=at("2025-06-08"), signal=signal)  # the new agent's usage: June's draft does not bill it
    row = balance(api, subscription)
    # June's draft bills the first agent's 130 units against its 100-unit pool, so the countdown says so too
    # (it read 0 of the new agent's pool).
    assert (row["poolSizeUnits"], row["consumedUnits"], row["remainingUnits"], row["overageInProgressUnits"]) == (
        100, 130, -30, 30)
    refreshed = ok(generate_june(api, chain, subscription), 200)
    assert refreshed["total"] == june["total"] == 72.5


def test_a_period_settled_before_a_patch_of_agent_id_is_verified_against_its_invoices_pool(
        api, book, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    ok(topup(api, subscription, 50), 201)
    use(chain, 130, at=at("2025-06-05"))
    ok(generate_june(api, chain, subscription), 201)
    run_jobs("2025-07-01T00:00:00Z")  # June's invoice is issued with the first agent's terms; June settled: 30 from
    # the top-up
    june = CreditGrant.objects.get(kind="period", period_start=at("2025-06-01"))
    assert (june.consumed_units, june.topup_units_drawn) == (130, 30)
    agent, _ = second_agent_with_its_own_pool(api, book, chain)
    frozen_now(at("2025-07-02"))
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"agentId": str(agent.id)}))
    report = ledger_verify(now=at("2025-07-02"), book=book, checks=("credit_pools",), repair=True)[0]
    assert report.drift == 0, report.findings
    june.refresh_from_db()
    assert (june.consumed_units, june.topup_units_drawn) == (130, 30)
    cache.clear()
    assert balance(api, subscription)["remainingUnits"] == 120  # July's new pool and the 20 top-up units left


def test_a_new_pool_size_leaves_the_period_a_draft_captured_on_the_size_it_bills(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    run_jobs("2025-06-10T12:00:00Z")  # June's grant
    use(chain, 130, at=at("2025-06-05"))
    ok(generate_june(api, chain, subscription), 201)
    [old] = ok(api.get(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies"))["results"]
    ok(api.patch(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{old['id']}",
                 {"tiers": [{"lower": 0, "upper": 200, "rate": 80}, {"lower": 200, "upper": None, "rate": "0.5"}]}))
    row = balance(api, subscription)
    assert (row["poolSizeUnits"], row["remainingUnits"], row["overageInProgressUnits"]) == (100, -30, 30)
    run_jobs("2025-07-01T00:00:00Z")
    june = CreditGrant.objects.get(kind="period", period_start=at("2025-06-01"))
    assert (june.units, june.consumed_units) == (100, 130)
    frozen_now(at("2025-07-02"))
    cache.clear()
    assert balance(api, subscription)["poolSizeUnits"] == 200  # July has no invoice yet: today's terms


def test_a_pool_replaced_after_the_draft_captured_it_still_counts_down_that_period(api, book, chain, frozen_now):
    """June's draft bills the pool (130 of 100 units: 30 of overage); the plan's pool is then replaced by a flat
    price. June is measured against the pool its invoice bills: the balance answered 404 and left the list, and June
    was never settled. July has no invoice and no pool."""
    subscription = pool_subscription(api, chain)
    ok(topup(api, subscription, 50), 201)
    use(chain, 130, at=at("2025-06-05"))
    ok(generate_june(api, chain, subscription), 201)
    [pool] = ok(api.get(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies"))["results"]
    assert api.delete(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{pool['id']}").status_code == 204
    create_strategies(api, chain.plan["id"], [{"name": "per call", "agentId": str(chain.agent.id),
                                               "chargeType": "usage", "signalId": str(chain.signal.id),
                                               "pricingModel": "flat", "rate": "0.5"}])
    cache.clear()
    row = balance(api, subscription)
    assert (row["poolSizeUnits"], row["consumedUnits"], row["remainingUnits"], row["overageInProgressUnits"]) == (
        100, 130, 20, 30)
    assert [listed["subscriptionId"] for listed in ok(api.get("/v1/credit-balances"))["balances"]] == [
        subscription["id"]]
    frozen_now(at("2025-07-01T00:05:00"))
    run_jobs("2025-07-01T00:05:00Z")  # June's invoice issued, July rolled over
    june = CreditGrant.objects.get(kind="period", period_start=at("2025-06-01"))
    assert (june.units, june.consumed_units, june.topup_units_drawn) == (100, 130, 30)
    cache.clear()
    assert api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance").status_code == 404
    report = ledger_verify(now=at("2025-07-01T00:06:00"), book=book, checks=("credit_pools",))[0]
    assert report.drift == 0, report.findings


def test_the_running_grant_of_a_period_a_plan_change_splits_holds_its_share_once(api, book, chain, frozen_now):
    starter = pool_subscription(api, chain, start="2025-05-01T00:00:00Z",
                                strategy=pool_strategy(chain, size=300, price=60, overage="0.5"))
    pro = create_plan(api, chain.agent.id, name="Pro pool")
    create_strategies(api, pro["id"], [pool_strategy(chain, size=1500, price=240, overage="0.3")])
    frozen_now(at("2025-06-20"))
    new = ok(api.post(f"/v1/subscriptions/{starter['id']}/change-plan",
                      {"planId": pro["id"], "effectiveAt": "2025-06-17T12:00:00Z"}), 201)
    use(chain, 100, at=at("2025-06-18"))
    run_jobs("2025-06-20T00:00:00Z")  # the alert job opens the new side's June grant
    grant = CreditGrant.objects.get(kind="period", subscription_id=new["id"])
    # June 17-30 of 30 days: 1500 x 14/30 = 700 units, as the balance reads (it was prorated twice: 326.67).
    assert grant.units == Decimal(700)
    assert balance(api, new)["poolSizeUnits"] == 700
