"""A settled credit-pool period counts the events its subscription bills, as its invoice does, also when which
subscription bills them moves after the settlement (contract.md "One subscription bills an event", "Plan changes",
"Derived figures"): a plan change dated into a settled period, a subscription started before another. The period is
settled again with the events recorded by its first settlement, its draws on top-ups following, and the ledger
verifier finds nothing."""
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from billing.models import CreditGrant, PricingStrategy
from console.verification import ledger_verify
from tests.billing.pools import balance, pool_strategy, pool_subscription, run_jobs, topup, use
from tests.billing.support import create_plan, create_strategies, create_subscription, flat_usage, ok, recurring

pytestmark = pytest.mark.django_db


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def june_grant(subscription) -> CreditGrant:
    return CreditGrant.objects.get(kind="period", subscription_id=subscription["id"], period_start=at("2025-06-01"))


def pool_findings(book) -> list:
    [report] = ledger_verify(now=at("2025-07-10T01:00:00"), book=book)
    return report.findings.get("credit_pools", [])


def settled_june(api, chain, frozen_now, start="2025-05-01T00:00:00Z") -> dict:
    """A 100-unit pool (50 USD, overage 0.75) with 50 top-up units, 80 units used on June 5 and 70 on June 25, June
    settled on July 10: 150 consumed, the 50 beyond the pool drawn from the top-up."""
    subscription = pool_subscription(api, chain, start=start)
    ok(topup(api, subscription, 50), 201)  # on June 10 (the clock's NOW)
    use(chain, 80, at=at("2025-06-05T10:00:00"))
    use(chain, 70, at=at("2025-06-25T10:00:00"))
    frozen_now(at("2025-07-10T00:00:00"))
    run_jobs("2025-07-10T00:00:00Z")
    grant = june_grant(subscription)
    assert (grant.units, grant.consumed_units, grant.topup_units_drawn) == (100, 150, 50)
    return subscription


def test_a_plan_change_dated_into_a_settled_period_settles_the_old_sides_share_again(api, book, chain, frozen_now):
    old = settled_june(api, chain, frozen_now)
    flat = create_plan(api, chain.agent.id, name="Flat")
    create_strategies(api, flat["id"], [flat_usage(chain, rate="1")])
    new = ok(api.post(f"/v1/subscriptions/{old['id']}/change-plan",
                      {"planId": flat["id"], "effectiveAt": "2025-06-20T00:00:00Z"}), 201)
    grant = june_grant(old)
    # June 1-19 of 30 days: a pool of 100 x 19/30 = 63.33 units; the 80 units of June 5 are the old side's (the 70
    # of June 25 the new side's), so 80 - 63.33 = 16.67 come from the top-up, not 50.
    assert grant.units.quantize(Decimal("0.01")) == Decimal("63.33")
    assert grant.consumed_units == 80
    assert grant.topup_units_drawn.quantize(Decimal("0.01")) == Decimal("16.67")
    assert grant.settled_at == at("2025-07-10T00:00:00")  # the instant its first settlement read the ledger at
    # The old side no longer runs in July: its July grant is gone.
    assert not CreditGrant.objects.filter(kind="period", subscription_id=old["id"],
                                          period_start__gte=at("2025-07-01")).exists()
    assert new["previousSubscriptionId"] == old["id"]
    assert pool_findings(book) == []


def test_a_subscription_started_before_a_pool_takes_its_settled_usage_and_gives_back_the_draws(
        api, book, chain, frozen_now):
    pooled = settled_june(api, chain, frozen_now, start="2025-06-01T00:00:00Z")
    flat = create_plan(api, chain.agent.id, name="Flat")
    create_strategies(api, flat["id"], [flat_usage(chain, rate="1")])
    earlier = create_subscription(api, chain, planId=flat["id"], name="Earlier", startDate="2025-05-01T00:00:00Z")
    # The earliest-started subscription bills the customer's usage of the agent's signal: June's 150 units are the
    # flat plan's now, so the pool consumed none of them and drew nothing from the top-up.
    grant = june_grant(pooled)
    assert (grant.units, grant.consumed_units, grant.topup_units_drawn) == (100, 0, 0)
    assert earlier["status"] == "active"
    row = balance(api, pooled)
    assert (row["poolSizeUnits"], row["consumedUnits"], row["remainingUnits"]) == (100, 0, 150)  # July, 50 topped up
    assert pool_findings(book) == []


def test_a_change_at_a_period_start_drops_the_old_sides_grant_of_that_period(api, book, chain, frozen_now):
    old = settled_june(api, chain, frozen_now)  # and July's grant opened on July 10
    assert CreditGrant.objects.filter(kind="period", subscription_id=old["id"], period_start=at("2025-07-01")).exists()
    flat = create_plan(api, chain.agent.id, name="Flat")
    create_strategies(api, flat["id"], [flat_usage(chain, rate="1")])
    ok(api.post(f"/v1/subscriptions/{old['id']}/change-plan",
                {"planId": flat["id"], "effectiveAt": "2025-07-01T00:00:00Z"}), 201)
    # June is whole on the old side (settled as it was); July is the new side's, so the old side's grant goes.
    grant = june_grant(old)
    assert (grant.units, grant.consumed_units, grant.topup_units_drawn) == (100, 150, 50)
    assert not CreditGrant.objects.filter(kind="period", subscription_id=old["id"],
                                          period_start__gte=at("2025-07-01")).exists()
    assert pool_findings(book) == []


def settled_june_beside_an_earlier_subscription(api, chain, frozen_now) -> tuple[dict, dict, dict]:
    """`settled_june` for a pool subscription from June 1, beside one from May 1 on a plan that bills none of the
    signal (a 5 USD fee), its balance read once (so a shared cache holds July's 100 + 50 - 50 = 100)."""
    other = create_plan(api, chain.agent.id, name="Other")
    create_strategies(api, other["id"], [recurring(chain, rate="5")])
    earlier = create_subscription(api, chain, planId=other["id"], name="Earlier", startDate="2025-05-01T00:00:00Z")
    pooled = settled_june(api, chain, frozen_now, start="2025-06-01T00:00:00Z")
    assert balance(api, pooled)["remainingUnits"] == 100
    return other, earlier, pooled


def test_a_plan_patched_onto_an_earlier_subscription_takes_its_settled_usage(
        api, book, chain, frozen_now, django_capture_on_commit_callbacks):
    _, earlier, pooled = settled_june_beside_an_earlier_subscription(api, chain, frozen_now)
    flat = create_plan(api, chain.agent.id, name="Flat")
    create_strategies(api, flat["id"], [flat_usage(chain, rate="1")])
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.patch(f"/v1/subscriptions/{earlier['id']}", {"planId": flat["id"]}))
    # The earlier subscription bills the signal from May 1 now (a new plan applies to every period not invoiced):
    # June's 150 units are its own, so the pool consumed none of them and drew nothing from the top-up.
    assert (june_grant(pooled).consumed_units, june_grant(pooled).topup_units_drawn) == (0, 0)
    invoice = ok(api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                    "subscriptionId": earlier["id"],
                                                    "billingPeriodStart": "2025-06-01T00:00:00Z",
                                                    "billingPeriodEnd": "2025-07-01T00:00:00Z"}), 201)
    assert Decimal(str(invoice["total"])) == Decimal("150")
    assert balance(api, pooled)["remainingUnits"] == 150  # the cached 100 is gone with the commit
    assert pool_findings(book) == []


def test_a_strategy_added_to_an_earlier_subscriptions_plan_takes_its_settled_usage_and_its_delete_gives_it_back(
        api, book, chain, frozen_now, django_capture_on_commit_callbacks):
    other, _, pooled = settled_june_beside_an_earlier_subscription(api, chain, frozen_now)
    with django_capture_on_commit_callbacks(execute=True):
        [strategy] = create_strategies(api, other["id"], [flat_usage(chain, rate="1")])
    # The earlier subscription's plan bills the signal now, in every period no invoice holds: June's 150 units.
    assert (june_grant(pooled).consumed_units, june_grant(pooled).topup_units_drawn) == (0, 0)
    assert balance(api, pooled)["remainingUnits"] == 150
    assert pool_findings(book) == []
    # Deleted before any invoice of June, the strategy bills nothing there: June is the pool's again, as first settled.
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/v1/pricing-plans/{other['id']}/pricing-strategies/{strategy['id']}").status_code == 204
    grant = june_grant(pooled)
    assert (grant.consumed_units, grant.topup_units_drawn, grant.settled_at) == (150, 50, at("2025-07-10T00:00:00"))
    assert balance(api, pooled)["remainingUnits"] == 100
    assert pool_findings(book) == []


def test_a_void_releases_the_terms_its_invoice_captured_and_the_pool_gives_up_what_they_now_bill(
        api, book, chain, frozen_now, django_capture_on_commit_callbacks):
    other, earlier, pooled = settled_june_beside_an_earlier_subscription(api, chain, frozen_now)
    period = {"customerId": str(chain.customer.id), "subscriptionId": earlier["id"],
              "billingPeriodStart": "2025-06-01T00:00:00Z", "billingPeriodEnd": "2025-07-01T00:00:00Z"}
    draft = ok(api.post("/v1/invoices/generate", period), 201)  # June under the recurring fee alone
    with django_capture_on_commit_callbacks(execute=True):
        create_strategies(api, other["id"], [flat_usage(chain, rate="1")])
    # The draft holds June under the terms it captured: June's 150 units stay the pool's.
    assert (june_grant(pooled).consumed_units, june_grant(pooled).topup_units_drawn) == (150, 50)
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.post(f"/v1/invoices/{draft['id']}/void", {"reason": "bill the usage too"}))
    # Void, June is billed under the plan's terms of now: the earlier subscription's flat usage takes the 150 units,
    # so the pool consumed none of them and its top-up is whole again.
    again = ok(api.post("/v1/invoices/generate", period), 201)
    assert Decimal(str(again["total"])) == Decimal("155")  # 5 recurring + 150 x 1
    assert (june_grant(pooled).consumed_units, june_grant(pooled).topup_units_drawn) == (0, 0)
    assert balance(api, pooled)["remainingUnits"] == 150
    assert pool_findings(book) == []


def test_an_end_moved_into_the_past_gives_the_events_after_it_to_the_next_subscription_and_back(
        api, book, chain, frozen_now, django_capture_on_commit_callbacks):
    flat = create_plan(api, chain.agent.id, name="Flat")
    create_strategies(api, flat["id"], [flat_usage(chain, rate="1")])
    earlier = create_subscription(api, chain, planId=flat["id"], name="Earlier", startDate="2025-01-01T00:00:00Z")
    pooled = pool_subscription(api, chain, start="2025-05-15T00:00:00Z")  # periods from the 15th to the 15th
    ok(topup(api, pooled, 50), 201)
    use(chain, 80, at=at("2025-06-03T10:00:00"))
    use(chain, 70, at=at("2025-06-10T10:00:00"))
    frozen_now(at("2025-06-20T00:00:00"))
    run_jobs("2025-06-20T00:00:00Z")
    grant = CreditGrant.objects.get(kind="period", subscription_id=pooled["id"], period_start=at("2025-05-15"))
    # The earlier subscription bills the signal: the 150 units are its own, the pool's May 15 period consumed none.
    assert (grant.consumed_units, grant.topup_units_drawn, grant.settled_at) == (0, 0, at("2025-06-20T00:00:00"))

    def moved(end: str) -> tuple:
        with django_capture_on_commit_callbacks(execute=True):
            ok(api.patch(f"/v1/subscriptions/{earlier['id']}", {"endDate": end}))
        grant.refresh_from_db()
        [report] = ledger_verify(now=at("2025-06-20T01:00:00"), book=book)
        assert report.findings.get("credit_pools", []) == []
        return grant.consumed_units, grant.topup_units_drawn, balance(api, pooled)["remainingUnits"]

    # Ended on June 5 (inside its current period), it bills June 3's 80 units; June 10's 70 are the pool's, within
    # its 100 units (nothing drawn: the current period's 100 and the 50 topped up remain).
    assert moved("2025-06-05T00:00:00Z") == (70, 0, 150)
    # Ended at June 2, both: 150 units, 50 of them beyond the pool's 100 and drawn from the top-up.
    assert moved("2025-06-02T00:00:00Z") == (150, 50, 100)
    # Moved later again, to June 4: June 3's 80 units go back to the earlier subscription.
    assert moved("2025-06-04T00:00:00Z") == (70, 0, 150)


def test_a_settled_period_of_a_signal_deleted_since_is_no_drift(
        api, book, chain, frozen_now, django_capture_on_commit_callbacks):
    """Deleting the signal orphans its events (signal null): the ledger no longer says what the period used, and
    what it settled stays, as the final invoice's line does; the verifier reported drift no repair could clear."""
    pooled = settled_june(api, chain, frozen_now)
    invoice = ok(api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                    "subscriptionId": pooled["id"],
                                                    "billingPeriodStart": "2025-06-01T00:00:00Z",
                                                    "billingPeriodEnd": "2025-07-01T00:00:00Z"}), 201)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {"recipientEmail": "ap@example.com"}))
    with django_capture_on_commit_callbacks(execute=True):
        for strategy in PricingStrategy.objects.filter(signal=chain.signal, deleted_at__isnull=True):
            assert api.delete(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{strategy.pk}"
                              ).status_code == 204
        assert api.delete(f"/v1/signals/{chain.signal.id}").status_code == 204
    [report] = ledger_verify(now=at("2025-07-10T01:00:00"), book=book)
    assert report.findings.get("credit_pools", []) == [] and report.findings.get("final_invoices", []) == []
    assert (june_grant(pooled).consumed_units, june_grant(pooled).topup_units_drawn) == (150, 50)


def test_settling_again_leaves_a_period_that_just_ended_to_the_job_that_waits_for_batches_in_flight(
        api, book, chain, frozen_now):
    """July ended a few minutes ago and no alert job has settled it yet when a subscription created before the pool
    moves June's claims. Settling June again inside that request's transaction cannot wait for the book's batches
    still committing; settling July there too counted it without a batch dated in July that commits a moment later,
    for good (the invoice, which waits, billed it). July is left to the alert job."""
    pooled = settled_june(api, chain, frozen_now, start="2025-06-01T00:00:00Z")
    frozen_now(at("2025-08-01T00:05:00"))
    flat = create_plan(api, chain.agent.id, name="Flat")
    create_strategies(api, flat["id"], [flat_usage(chain, rate="1")])
    create_subscription(api, chain, planId=flat["id"], name="Earlier", startDate="2025-05-01T00:00:00Z")
    assert june_grant(pooled).consumed_units == 0  # settled again: the flat plan bills June now
    july = CreditGrant.objects.get(kind="period", subscription_id=pooled["id"], period_start=at("2025-07-01"))
    assert july.settled_at is None
    run_jobs("2025-08-01T00:05:00Z")
    july.refresh_from_db()
    assert july.settled_at == at("2025-08-01T00:05:00")


# --------------------------------------------------------------------------- an end that cuts the running period

def running_june_overdrawn(api, chain, frozen_now) -> dict:
    """A 100-unit pool from June 1 with 50 top-up units granted on June 3 (the top-up opens June's grant, to July 1),
    130 units used on June 5, the clock at June 10 12:00: June runs 30 units past its pool."""
    subscription = pool_subscription(api, chain)
    frozen_now(at("2025-06-03T00:00:00"))
    ok(topup(api, subscription, 50), 201)
    frozen_now(at("2025-06-10T12:00:00"))
    use(chain, 130, at=at("2025-06-05T10:00:00"))
    assert june_grant(subscription).period_end == at("2025-07-01")
    return subscription


def test_a_subscription_ended_mid_period_settles_its_last_period_at_its_end(api, book, chain, frozen_now):
    subscription = running_june_overdrawn(api, chain, frozen_now)
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "ended"}))
    # June ended at 12:00 on June 10: it takes the 30 units beyond its pool from the top-up now, not on July 1.
    grant = june_grant(subscription)
    assert (grant.period_end, grant.settled_at) == (at("2025-06-10T12:00:00"), None)
    row = balance(api, subscription)
    assert (row["noActivePeriod"], row["remainingUnits"]) == (True, 120)
    frozen_now(at("2025-06-10T12:05:00"))
    run_jobs("2025-06-10T12:05:00Z")
    grant = june_grant(subscription)
    assert (grant.consumed_units, grant.topup_units_drawn, grant.settled_at) == (130, 30, at("2025-06-10T12:05:00"))
    assert pool_findings(book) == []


def test_a_plan_change_in_the_past_settles_the_old_sides_cut_period(api, book, chain, frozen_now):
    old = running_june_overdrawn(api, chain, frozen_now)
    flat = create_plan(api, chain.agent.id, name="Flat")
    create_strategies(api, flat["id"], [flat_usage(chain, rate="1")])
    ok(api.post(f"/v1/subscriptions/{old['id']}/change-plan",
                {"planId": flat["id"], "effectiveAt": "2025-06-07T00:00:00Z"}), 201)
    # June 1-6 of 30 days: a pool of 100 x 6/30 = 20 units, so the 130 units of June 5 take 110 beyond it: the
    # whole top-up of 50.
    grant = june_grant(old)
    assert (grant.period_end, grant.units, grant.settled_at) == (at("2025-06-07"), 20, None)
    run_jobs("2025-06-10T12:00:00Z")
    grant = june_grant(old)
    assert (grant.units, grant.consumed_units, grant.topup_units_drawn) == (20, 130, 50)
    assert pool_findings(book) == []


def test_a_grant_left_at_its_cycles_end_by_an_earlier_end_is_settled_by_the_next_job(api, book, chain, frozen_now):
    subscription = running_june_overdrawn(api, chain, frozen_now)
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "ended"}))
    # As an end written before grants followed it left June's grant: to the cycle's end.
    CreditGrant.objects.filter(kind="period", subscription_id=subscription["id"]).update(period_end=at("2025-07-01"))
    frozen_now(at("2025-06-10T12:05:00"))
    run_jobs("2025-06-10T12:05:00Z")
    grant = june_grant(subscription)
    assert (grant.period_end, grant.consumed_units, grant.topup_units_drawn) == (at("2025-06-10T12:00:00"), 130, 30)
    assert pool_findings(book) == []
