"""Plan changes (contract: "Plan changes") through POST/DELETE /v1/subscriptions/{id}/change-plan: the two
subscriptions, their links and changelogs, and the split period billed exactly, amounts computed by hand."""
from datetime import datetime, timezone
from zoneinfo import ZoneInfo
from decimal import ROUND_HALF_UP, Decimal

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from billing.services.plan_changes import subscription_plan_change_preview
from billing.services.subscriptions import subscriptions_advance
from tests.billing.support import changelog, error, ok
from tests.billing.test_exact_invoices import Book
from tests.factories import OrganizationFactory, book_of

pytestmark = pytest.mark.django_db
D = Decimal
UTC = timezone.utc
JUNE = ("2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z")


def pool(units, price, overage, signal) -> dict:
    return {"chargeType": "usage", "pricingModel": "credit_pool", "signalId": str(signal.id),
            "tiers": [{"lower": 0, "upper": units, "rate": price}, {"lower": units, "upper": None, "rate": overage}]}


def fee(rate, frequency="monthly") -> dict:
    return {"chargeType": "recurring", "rate": rate, "billingFrequency": frequency}


def seat(rate) -> dict:
    return {"chargeType": "seat_based", "pricingModel": "flat", "rate": rate}


def setup_fee(rate) -> dict:
    return {"chargeType": "onetime", "rate": rate}


def change(api, subscription, plan, status=201, **fields):
    return api.post(f"/v1/subscriptions/{subscription['id']}/change-plan", {"planId": plan["id"], **fields})


def lines(invoice) -> list[tuple[str, float, float]]:
    """(charge type, billed quantity, amount) in the invoice's order."""
    return [(line["chargeType"], line["quantity"], line["amount"]) for line in invoice["lines"]]


def fee_total(invoice) -> D:
    fees = ("recurring", "seat_based")
    return sum((D(str(line["amount"])) for line in invoice["lines"] if line["chargeType"] in fees), D(0))


@pytest.fixture
def acme(api, book):
    return Book(api, book)


def subscribe(acme, plan, start, **fields) -> dict:
    body = {"name": "Support desk", "planId": plan["id"], "agentId": str(acme.agent.id),
            "customerId": str(acme.customer.id), "startDate": start, "status": "active", "billingDay": 1, **fields}
    return ok(acme.api.post("/v1/subscriptions", body), 201)


# --------------------------------------------------------------------------- the split period, exactly

def test_an_upgrade_on_the_17th_of_a_30_day_month_splits_fees_seats_usage_and_the_pool(acme):
    credits = acme.signals["calls"]
    starter, _ = acme.plan(fee("30"), seat("6"), ("tickets", "0.10"), pool(300, "60", "0.50", credits),
                           setup_fee("100"))
    pro, _ = acme.plan(fee("90"), seat("9"), ("tickets", "0.08"), pool(1500, "240", "0.30", credits),
                       setup_fee("500"))
    old = subscribe(acme, starter, "2025-05-01T00:00:00Z", seatsCount=5, invoiceMemo="PO 7781",
                    metadata={"crm": "A-17"}, netTerms=15)
    acme.record(("tickets", 600, "2025-06-05T09:00:00Z"), ("tickets", 400, "2025-06-17T11:59:59Z"),
                ("calls", 200, "2025-06-10T10:00:00Z"),
                ("tickets", 500, "2025-06-17T12:00:00Z"), ("calls", 750, "2025-06-20T10:00:00Z"))

    new = ok(change(acme.api, old, pro, effectiveAt="2025-06-17T12:00:00Z", seatsCount=8), 201)

    assert new["planId"] == pro["id"] and new["previousSubscriptionId"] == old["id"]
    assert (new["startDate"], new["status"], new["seatsCount"]) == ("2025-06-17T12:00:00Z", "active", 8)
    assert (new["customerId"], new["agentId"], new["billingDay"], new["timezone"], new["billingCycle"],
            new["netTerms"], new["invoiceMemo"], new["metadata"], new["name"]) == (
        old["customerId"], old["agentId"], 1, old["timezone"], "monthly", 15, "PO 7781", {"crm": "A-17"}, old["name"])
    ended = ok(acme.api.get(f"/v1/subscriptions/{old['id']}"))
    assert (ended["endDate"], ended["status"], ended["nextSubscriptionId"]) == (
        "2025-06-17T12:00:00Z", "ended", new["id"])

    # Old side: June 1-16, 16 of 30 days. Fee 30 x 16/30 = 16.00; seats 5 x 6 = 30 x 16/30 = 16.00; pages before
    # the instant (600 + 400, the 17th's morning included) x 0.10 = 100.00; pool 300 x 16/30 = 160 units for
    # 60 x 16/30 = 32.00, 200 used: 40 beyond x 0.50 = 20.00, so 52.00. Total 184.00.
    before = acme.generate(old, ("2025-06-01T00:00:00Z", "2025-06-17T12:00:00Z"))
    assert lines(before) == [("recurring", 1, 16.0), ("seat_based", 5, 16.0), ("usage", 1000, 100.0),
                             ("usage", 200, 52.0)]
    assert before["total"] == 184.0
    assert "16 of 30 days" in before["lines"][3]["description"]
    # New side: June 17-30, 14 of 30 days. Fee 90 x 14/30 = 42.00; seats 8 x 9 = 72 x 14/30 = 33.60; pages 500 x
    # 0.08 = 40.00; pool 1500 x 14/30 = 700 units for 240 x 14/30 = 112.00, 750 used: 50 beyond x 0.30 = 15.00, so
    # 127.00; the setup fee of 500 is not charged. Total 242.60.
    after = acme.generate(new, ("2025-06-17T12:00:00Z", "2025-07-01T00:00:00Z"))
    assert lines(after) == [("recurring", 1, 42.0), ("seat_based", 8, 33.6), ("usage", 500, 40.0),
                            ("usage", 750, 127.0)]
    assert after["total"] == 242.6
    # July is the new plan's whole period: 90 + 72 + the whole pool price 240, still no setup fee.
    july = acme.generate(new, ("2025-07-01T00:00:00Z", "2025-08-01T00:00:00Z"))
    assert lines(july) == [("recurring", 1, 90.0), ("seat_based", 8, 72.0), ("usage", 0, 0.0), ("usage", 0, 240.0)]

    # Revenue labels read the same split: fees recognized over the days each side covers, the pool at each
    # side's share, no setup fee on the new side.
    old_revenue = acme.revenue(old, "2025-06-01", "2025-06-30")
    new_revenue = acme.revenue(new, "2025-06-01", "2025-06-30")
    def labels(body) -> list[D]:
        breakdown = body["breakdown"]
        return [D(str(value)) for value in (body["agentEarned"], breakdown["recurring"], breakdown["seat"],
                                            breakdown["onetime"], body["revenue"])]
    assert labels(old_revenue) == [D(152), D(16), D(16), D(0), D(184)]
    assert labels(new_revenue) == [D(167), D(42), D("33.6"), D(0), D("242.6")]

    old_log, new_log = changelog(acme.api, old["id"]), changelog(acme.api, new["id"])
    assert old_log[0]["kind"] == "plan_change" and old_log[0]["actor"].startswith("api-key:")
    assert old_log[0]["changes"]["nextSubscriptionId"] == {"before": None, "after": new["id"]}
    assert old_log[0]["changes"]["endDate"] == {"before": None, "after": "2025-06-17T12:00:00Z"}
    assert [entry["kind"] for entry in new_log] == ["plan_change"]
    assert new_log[0]["changes"]["planId"] == {"before": starter["id"], "after": pro["id"]}
    assert new_log[0]["changes"]["previousSubscriptionId"]["after"] == old["id"]
    assert new_log[0]["actor"] == old_log[0]["actor"]


@pytest.mark.parametrize("effective_at", ["2025-04-01T00:00:00Z", "2025-04-01T10:00:00Z"])
def test_a_change_at_a_period_end_leaves_the_pool_of_a_period_the_subscription_started_in_whole(acme, effective_at):
    """March is the old side's first period, from March 11 (21 of 31 days: a pool is never prorated for a start
    inside its period). A change at its end, or later on April 1 (that day is the new side's), splits nothing of
    March: 95 units of a 100-unit pool bill the pool price, 100.00. The pool was prorated to 67.74 units for 67.74,
    with 27.26 units of overage at 2.00: 122.26."""
    credits = acme.signals["calls"]
    starter, _ = acme.plan(pool(100, "100", "2", credits))
    pro, _ = acme.plan(pool(100, "100", "2", credits))
    old = subscribe(acme, starter, "2025-03-11T00:00:00Z")
    acme.record(("calls", 95, "2025-03-20T00:00:00Z"))
    ok(change(acme.api, old, pro, effectiveAt=effective_at), 201)
    march = acme.generate(old, ("2025-03-11T00:00:00Z", "2025-04-01T00:00:00Z"))
    assert lines(march) == [("usage", 95, 100.0)]


@pytest.mark.parametrize("effective_at, amount", [("2025-04-01T00:00:00Z", 100.0), ("2025-04-01T10:00:00Z", 66.67)])
def test_a_new_side_cut_by_its_end_date_bills_its_pool_whole_unless_the_change_falls_inside_the_period(
        acme, effective_at, amount):
    """The new side ends April 21 with the endDate it took over: it covers 20 of April's 30 days. Changed at April's
    first instant, the change falls in no shared period: April is cut by the end alone, and 50 units of a 100-unit
    pool bill 100.00, as without a change (they billed 66.67). Changed at 10:00 that day, the change falls inside
    April (the old side holds its first ten hours): the new side's pool is prorated by the 20 days it covers,
    100 x 20/30 = 66.67, the 50 units within its 66.67."""
    credits = acme.signals["calls"]
    starter, _ = acme.plan(pool(100, "100", "2", credits))
    pro, _ = acme.plan(pool(100, "100", "2", credits))
    old = subscribe(acme, starter, "2025-03-01T00:00:00Z", endDate="2025-04-21T00:00:00Z")
    acme.record(("calls", 50, "2025-04-10T00:00:00Z"))
    new = ok(change(acme.api, old, pro, effectiveAt=effective_at), 201)
    april = acme.generate(new, (effective_at, "2025-04-21T00:00:00Z"))
    assert lines(april) == [("usage", 50, amount)]


def test_after_a_timezone_change_a_change_made_after_a_period_ended_leaves_that_period_whole(acme, frozen_now):
    """January in UTC; on January 25 the timezone becomes Los Angeles (from February on). The plan changes at
    2025-02-01T03:00Z, after January's period ended, though it is still January 31 in Los Angeles. Counted in the
    last period's timezone, the old side's end day fell on January's last day: its fee billed 30.00 of 31 and its
    pool 96.77 of 100.00. January is whole: 31.00 and the pool's 100.00 for 50 units."""
    credits = acme.signals["calls"]
    frozen_now(datetime(2025, 1, 25, 12, tzinfo=UTC))
    starter, _ = acme.plan(fee("31"), pool(100, "100", "2", credits))
    pro, _ = acme.plan(fee("31"), pool(100, "100", "2", credits))
    old = subscribe(acme, starter, "2025-01-01T00:00:00Z")
    ok(acme.api.patch(f"/v1/subscriptions/{old['id']}/invoice-dates", {"timezone": "America/Los_Angeles"}))
    acme.record(("calls", 50, "2025-01-20T00:00:00Z"))
    frozen_now(datetime(2025, 2, 2, 12, tzinfo=UTC))
    ok(change(acme.api, old, pro, effectiveAt="2025-02-01T03:00:00Z"), 201)
    january = acme.generate(old, ("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"))
    assert lines(january) == [("recurring", 1, 31.0), ("usage", 50, 100.0)]
    assert D(str(acme.revenue(old, "2025-01-01", "2025-01-31")["revenue"])) == D("131")  # revenue reads it alike


def test_usage_minimums_and_tier_bounds_are_not_prorated_at_a_change(acme):
    """Only fees and pools are prorated by covered days: each side's usage minimum raises its own usage whole.
    Old side (June 1-16, 16 of 30 days): 30 tickets, minimum 100 at 0.10 = 10.00 (not 100 x 16/30 = 53.33 units).
    New side (June 17-30): 10 tickets, minimum 50 at 0.20 = 10.00; tiers 0-20 at 0.50 then 0.25 on its other signal,
    25 calls = 20 x 0.50 + 5 x 0.25 = 11.25 (the bound stays 20, not 20 x 14/30)."""
    tickets, calls = acme.signals["tickets"], acme.signals["calls"]
    minimum = lambda rate, units: {"chargeType": "usage", "pricingModel": "flat", "signalId": str(tickets.id),
                                   "rate": rate, "minimumCommitment": units}
    graduated = {"chargeType": "usage", "pricingModel": "graduated", "signalId": str(calls.id),
                 "tiers": [{"lower": 0, "upper": 20, "rate": "0.50"}, {"lower": 20, "upper": None, "rate": "0.25"}]}
    starter, _ = acme.plan(minimum("0.10", 100))
    pro, _ = acme.plan(minimum("0.20", 50), graduated)
    old = subscribe(acme, starter, "2025-05-01T00:00:00Z")
    acme.record(("tickets", 30, "2025-06-05T09:00:00Z"), ("tickets", 10, "2025-06-20T09:00:00Z"),
                ("calls", 25, "2025-06-21T09:00:00Z"))
    new = ok(change(acme.api, old, pro, effectiveAt="2025-06-17T00:00:00Z"), 201)
    before = acme.generate(old, ("2025-06-01T00:00:00Z", "2025-06-17T00:00:00Z"))
    after = acme.generate(new, ("2025-06-17T00:00:00Z", "2025-07-01T00:00:00Z"))
    assert (before["total"], after["total"]) == (10.0, 21.25)
    assert [line["amount"] for line in after["lines"]] == [10.0, 11.25]


def test_revenue_of_a_window_that_starts_on_the_day_of_a_change_keeps_the_old_sides_usage_of_that_morning(acme):
    """The old side covers no day of the change (the new side has the 17th), yet it bills the usage recorded
    before 12:00 on it, as its invoice does: a window from the 17th reports it (it read 0)."""
    starter, _ = acme.plan(fee("30"), ("tickets", "1"))
    pro, _ = acme.plan(fee("90"), ("tickets", "2"))
    old = subscribe(acme, starter, "2025-05-01T00:00:00Z")
    acme.record(("tickets", 10, "2025-06-17T08:00:00Z"), ("tickets", 3, "2025-06-18T08:00:00Z"))
    new = ok(change(acme.api, old, pro, effectiveAt="2025-06-17T12:00:00Z"), 201)
    body = ok(acme.api.get("/v1/analytics/revenue", {"startDate": "2025-06-17", "endDate": "2025-06-30"}))
    assert D(str(body["agentEarned"])) == 10 + 3 * 2
    by_subscription = {row["subscriptionId"]: D(str(row["agentEarned"])) for row in body["bySubscription"]}
    assert by_subscription == {old["id"]: 10, new["id"]: 6}
    old_side = acme.revenue(old, "2025-06-17", "2025-06-30")
    assert (D(str(old_side["agentEarned"])), D(str(old_side["breakdown"]["recurring"]))) == (10, 0)


def test_a_downgrade_at_the_next_period_start_bills_both_periods_whole(acme, frozen_now):
    pro, _ = acme.plan(fee("90"), seat("9"), pool(1500, "240", "0.30", acme.signals["calls"]))
    starter, _ = acme.plan(fee("30"), seat("6"), pool(300, "60", "0.50", acme.signals["calls"]), setup_fee("100"))
    old = subscribe(acme, pro, "2025-05-01T00:00:00Z", seatsCount=4)
    acme.record(("calls", 1600, "2025-06-30T23:00:00Z"), ("calls", 320, "2025-07-01T00:00:00Z"))

    new = ok(change(acme.api, old, starter, effectiveAt="2025-07-01"), 201)  # a bare date: local midnight

    assert (new["startDate"], new["status"], new["currentPeriodStart"]) == ("2025-07-01T00:00:00Z", "upcoming", None)
    scheduled = ok(acme.api.get(f"/v1/subscriptions/{old['id']}"))
    assert (scheduled["status"], scheduled["endDate"], scheduled["nextSubscriptionId"]) == (
        "active", "2025-07-01T00:00:00Z", new["id"])
    assert scheduled["currentPeriodEnd"] == "2025-07-01T00:00:00Z"
    # June whole on Pro: 90 + 4 x 9 + pool 240 with 100 beyond x 0.30 = 30. July whole on Starter: 30 + 4 x 6 +
    # pool 60 with 20 beyond x 0.50 = 10; no setup fee.
    assert lines(acme.generate(old, JUNE)) == [("recurring", 1, 90.0), ("seat_based", 4, 36.0), ("usage", 1600, 270.0)]
    july = acme.generate(new, ("2025-07-01T00:00:00Z", "2025-08-01T00:00:00Z"))
    assert lines(july) == [("recurring", 1, 30.0), ("seat_based", 4, 24.0), ("usage", 320, 70.0)]

    frozen_now(datetime(2025, 7, 1, 0, 5, tzinfo=UTC))
    subscriptions_advance(now=datetime(2025, 7, 1, 0, 5, tzinfo=UTC))
    assert ok(acme.api.get(f"/v1/subscriptions/{old['id']}"))["status"] == "ended"
    assert ok(acme.api.get(f"/v1/subscriptions/{new['id']}"))["status"] == "active"


def test_a_change_on_the_31st_leaves_one_day_to_the_new_plan_and_the_shorter_month_bills_whole(acme):
    small, _ = acme.plan(fee("31"))
    large, _ = acme.plan(fee("62"))
    old = subscribe(acme, small, "2025-01-01T00:00:00Z")
    new = ok(change(acme.api, old, large, effectiveAt="2025-01-31T10:00:00Z"), 201)
    # January has 31 days: the old plan covers the 1st-30th (31 x 30/31 = 30.00), the new one the 31st (62 x 1/31).
    assert lines(acme.generate(old, ("2025-01-01T00:00:00Z", "2025-01-31T10:00:00Z"))) == [("recurring", 1, 30.0)]
    assert lines(acme.generate(new, ("2025-01-31T10:00:00Z", "2025-02-01T00:00:00Z"))) == [("recurring", 1, 2.0)]
    # February (28 days) is the new plan's whole period: 62.00, not 62 x 28/31.
    assert lines(acme.generate(new, ("2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"))) == [("recurring", 1, 62.0)]


def test_a_change_inside_the_first_period_prorates_the_old_sides_fee_by_its_days_not_its_prorated_amount(acme):
    small, _ = acme.plan(fee("62"))
    large, _ = acme.plan(fee("93"))
    # proratedAmount 20.00 priced January 22-31 (62 x 10/31); the change on the 27th leaves the old side the
    # 22nd-26th: 62 x 5/31 = 10.00, and the new side the 27th-31st: 93 x 5/31 = 15.00.
    old = subscribe(acme, small, "2025-01-22T00:00:00Z", proratedAmount=20)
    new = ok(change(acme.api, old, large, effectiveAt="2025-01-27T00:00:00Z"), 201)
    assert lines(acme.generate(old, ("2025-01-22T00:00:00Z", "2025-01-27T00:00:00Z"))) == [("recurring", 1, 10.0)]
    assert lines(acme.generate(new, ("2025-01-27T00:00:00Z", "2025-02-01T00:00:00Z"))) == [("recurring", 1, 15.0)]


def test_a_change_in_the_subscriptions_timezone_across_the_dst_change_splits_at_local_days(acme):
    small, _ = acme.plan(fee("31"), ("tickets", "1"))
    large, _ = acme.plan(fee("62"), ("tickets", "3"))
    old = subscribe(acme, small, "2025-02-01", timezone="America/New_York")  # local midnight: 05:00Z
    assert old["startDate"] == "2025-02-01T05:00:00Z"
    # New York moves to EDT (UTC-4) on March 9. 02:30Z on the 20th is 22:30 on March 19, local.
    acme.record(("tickets", 10, "2025-03-20T02:29:59Z"), ("tickets", 5, "2025-03-20T02:30:00Z"))
    new = ok(change(acme.api, old, large, effectiveAt="2025-03-20T02:30:00Z"), 201)
    assert new["timezone"] == "America/New_York"
    # March is [March 1 05:00Z, April 1 04:00Z): 31 local days. The old plan covers March 1-18 (18 days: 31 x
    # 18/31 = 18.00) and the event before the instant (10 x 1); the new one March 19-31 (13 days: 62 x 13/31 =
    # 26.00) and the event at the instant (5 x 3).
    before = acme.generate(old, ("2025-03-01T05:00:00Z", "2025-03-20T02:30:00Z"))
    after = acme.generate(new, ("2025-03-20T02:30:00Z", "2025-04-01T04:00:00Z"))
    assert lines(before) == [("recurring", 1, 18.0), ("usage", 10, 10.0)]
    assert lines(after) == [("recurring", 1, 26.0), ("usage", 5, 15.0)]
    # The new subscription's periods turn at New York midnight on the old grid: April is [April 1 04:00Z, May 1).
    april = acme.generate(new, ("2025-04-01T04:00:00Z", "2025-05-01T04:00:00Z"))
    assert lines(april) == [("recurring", 1, 62.0), ("usage", 0, 0.0)]


def test_a_yearly_cycle_changed_mid_year_keeps_the_yearly_grid(acme):
    basic, _ = acme.plan(fee("365", "yearly"))
    premium, _ = acme.plan(fee("730", "yearly"))
    old = subscribe(acme, basic, "2025-03-01T00:00:00Z", billingCycle="yearly", billingDay=None)
    new = ok(change(acme.api, old, premium, effectiveAt="2025-09-10T00:00:00Z"), 201)
    # The year [2025-03-01, 2026-03-01) has 365 days; March 1 - September 9 is 193 of them (365 x 193/365 = 193.00),
    # September 10 - February 28 the other 172 (730 x 172/365 = 344.00).
    assert lines(acme.generate(old, ("2025-03-01T00:00:00Z", "2025-09-10T00:00:00Z"))) == [("recurring", 1, 193.0)]
    first = acme.generate(new, ("2025-09-10T00:00:00Z", "2026-03-01T00:00:00Z"))
    assert (first["periodStart"], first["periodEnd"], lines(first)) == (
        "2025-09-10T00:00:00Z", "2026-03-01T00:00:00Z", [("recurring", 1, 344.0)])
    # The next year still turns on March 1 (the old subscription's grid), billed whole.
    following = acme.generate(new, ("2026-03-01T00:00:00Z", "2027-03-01T00:00:00Z"))
    assert lines(following) == [("recurring", 1, 730.0)]


def test_the_credit_balance_of_each_side_counts_down_its_share_of_the_pool(acme, frozen_now):
    starter, _ = acme.plan(pool(300, "60", "0.50", acme.signals["calls"]))
    pro, _ = acme.plan(pool(1500, "240", "0.30", acme.signals["calls"]))
    frozen_now(datetime(2025, 6, 20, 12, 0, tzinfo=UTC))
    old = subscribe(acme, starter, "2025-05-01T00:00:00Z")
    acme.record(("calls", 100, "2025-06-18T10:00:00Z"))
    new = ok(change(acme.api, old, pro, effectiveAt="2025-06-17T12:00:00Z"), 201)
    balance = ok(acme.api.get(f"/v1/subscriptions/{new['id']}/credit-balance"))
    # 1500 x 14/30 = 700 units for the new side's June; 100 drawn.
    assert (balance["poolSizeUnits"], balance["consumedUnits"], balance["remainingUnits"]) == (700, 100, 600)


def test_a_change_scheduled_inside_the_period_shrinks_the_old_sides_pool_now(acme, frozen_now):
    starter, _ = acme.plan(pool(300, "60", "0.50", acme.signals["calls"]))
    pro, _ = acme.plan(pool(1500, "240", "0.30", acme.signals["calls"]))
    old = subscribe(acme, starter, "2025-05-01T00:00:00Z")  # the clock reads 2025-06-10T12:00Z
    acme.record(("calls", 100, "2025-06-05T10:00:00Z"))
    new = ok(change(acme.api, old, pro, effectiveAt="2025-06-17T12:00:00Z"), 201)
    assert new["status"] == "upcoming"
    balance = ok(acme.api.get(f"/v1/subscriptions/{old['id']}/credit-balance"))
    # June 1-16 of 30 days: 300 x 16/30 = 160 units; 100 drawn, 60 left (37.50%).
    assert (balance["poolSizeUnits"], balance["remainingUnits"], balance["remainingPercent"]) == (160, 60, 37.5)
    assert balance["periodEnd"] == "2025-06-17T12:00:00Z"


def test_a_change_on_the_first_day_of_a_period_leaves_the_old_side_a_pool_of_no_days(acme, frozen_now):
    """The day the change takes effect belongs to the new side (contract: "Plan changes"): a change at 10:00 on June
    1 leaves the old side June's first hours and none of its days, so a pool of 0 units for 0.00 and its morning's
    100 calls all beyond it (100 x 0.50 = 50.00), while the new side's pool is whole (240.00). The old side had been
    billed its whole pool (60.00)."""
    starter, _ = acme.plan(pool(300, "60", "0.50", acme.signals["calls"]))
    pro, _ = acme.plan(pool(1500, "240", "0.30", acme.signals["calls"]))
    frozen_now(datetime(2025, 6, 1, 9, 0, tzinfo=UTC))
    old = subscribe(acme, starter, "2025-05-01T00:00:00Z")
    acme.record(("calls", 100, "2025-06-01T08:00:00Z"))
    new = ok(change(acme.api, old, pro, effectiveAt="2025-06-01T10:00:00Z"), 201)  # an hour ahead
    assert ok(acme.api.get(f"/v1/subscriptions/{old['id']}/credit-balance"))["poolSizeUnits"] == 0
    frozen_now(datetime(2025, 7, 1, 0, 5, tzinfo=UTC))
    before = acme.generate(old, ("2025-06-01T00:00:00Z", "2025-06-01T10:00:00Z"))
    after = acme.generate(new, ("2025-06-01T10:00:00Z", "2025-07-01T00:00:00Z"))
    assert [(line["chargeType"], line["amount"]) for line in before["lines"]] == [("usage", 50.0)]
    assert [(line["chargeType"], line["amount"]) for line in after["lines"]] == [("usage", 240.0)]


def test_a_change_in_the_period_after_a_billing_day_change_measures_both_sides_against_that_period(acme, frozen_now):
    """The billing day moves to 15 during [Jun 1, Jul 1), so the next period is [Jul 1, Jul 15), 14 days, billed its
    whole fee. A change on Jul 10 splits that period: the old side Jul 1-9, 28 x 9/14 = 18.00, the new side Jul
    10-14, 28 x 5/14 = 10.00, one fee between them as the period without the change. The new side had been measured
    against [Jun 15, Jul 15) (4.67) and the old side against its own 9 days (28.00); the preview showed the old side
    from Jun 15, with June's second half that June's invoice bills."""
    small, _ = acme.plan(fee("28"))
    large, _ = acme.plan(fee("28"))
    frozen_now(datetime(2025, 6, 10, tzinfo=UTC))
    old = subscribe(acme, small, "2025-05-01T00:00:00Z")
    ok(acme.api.patch(f"/v1/subscriptions/{old['id']}/invoice-dates", {"billingDay": 15}))
    frozen_now(datetime(2025, 7, 5, tzinfo=UTC))
    preview_old, preview_new = subscription_plan_change_preview(
        book=acme.book, subscription_id=old["id"], now=datetime(2025, 7, 5, tzinfo=UTC), actor="test",
        plan_id=large["id"], effective_at=datetime(2025, 7, 10, tzinfo=UTC))
    assert (preview_old.period_start, preview_old.total) == (datetime(2025, 7, 1, tzinfo=UTC), D("18.00"))
    assert (preview_new.period_end, preview_new.total) == (datetime(2025, 7, 15, tzinfo=UTC), D("10.00"))
    new = ok(change(acme.api, old, large, effectiveAt="2025-07-10T00:00:00Z"), 201)
    before = acme.generate(old, ("2025-07-01T00:00:00Z", "2025-07-10T00:00:00Z"))
    after = acme.generate(new, ("2025-07-10T00:00:00Z", "2025-07-15T00:00:00Z"))
    assert (fee_total(before), fee_total(after)) == (D("18.00"), D("10.00"))
    following = acme.generate(new, ("2025-07-15T00:00:00Z", "2025-08-15T00:00:00Z"))
    assert fee_total(following) == D("28.00")


def test_a_scheduled_successor_after_a_billing_day_change_is_first_billed_from_its_own_start(acme, frozen_now):
    """The billing day moves to 15 from Jul 1; a change is scheduled for Jul 15 12:00. The successor's current
    period (its first, while upcoming) runs from its start to Aug 15: it had been [Jul 1, Jul 15), where the
    successor does not run (its fee "0 of 14 days"), because the rules it carries took effect before it started."""
    small, _ = acme.plan(fee("62"))
    large, _ = acme.plan(fee("31"))
    frozen_now(datetime(2025, 6, 10, tzinfo=UTC))
    old = subscribe(acme, small, "2025-05-01T00:00:00Z")
    ok(acme.api.patch(f"/v1/subscriptions/{old['id']}/invoice-dates", {"billingDay": 15}))
    new = ok(change(acme.api, old, large, effectiveAt="2025-07-15T12:00:00Z"), 201)
    assert new["status"] == "upcoming"
    invoice = ok(acme.api.post("/v1/invoices/generate", {"customerId": str(acme.customer.id),
                                                         "subscriptionId": new["id"]}), 201)
    # The period on the grid from Jul 15 (the successor's life, from 12:00, is what its fee covers: every day of it).
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-07-15T00:00:00Z", "2025-08-15T00:00:00Z")
    assert fee_total(invoice) == D("31.00")  # Jul 15 to Aug 14: the period's 31 local days


# --------------------------------------------------------------------------- refusals

def test_a_change_into_a_period_a_finalized_invoice_bills_is_a_409_naming_it(acme):
    plan, _ = acme.plan(fee("30"))
    other, _ = acme.plan(fee("60"))
    old = subscribe(acme, plan, "2025-05-01T00:00:00Z")
    may = acme.generate(old, ("2025-05-01T00:00:00Z", "2025-06-01T00:00:00Z"))
    ok(acme.api.post(f"/v1/invoices/{may['id']}/send", {}))
    message = error(change(acme.api, old, other, effectiveAt="2025-05-20T00:00:00Z"), 409)
    assert may["invoiceNumber"] in message and "void it first" in message
    assert ok(acme.api.get(f"/v1/subscriptions/{old['id']}"))["nextSubscriptionId"] is None
    # Money received: voiding needs a refund first; paid in full: never voided, so the remedy is a later change.
    from billing.models import Invoice
    from billing.services.payments import payment_record_received

    book = Invoice.objects.get(pk=may["id"]).book
    payment_record_received(book=book, invoice_id=may["id"], amount=Decimal(10), reference="wire-1",
                            now=datetime(2025, 6, 2, tzinfo=timezone.utc))
    message = error(change(acme.api, old, other, effectiveAt="2025-05-20T00:00:00Z"), 409)
    assert "refund its payments and void it first" in message
    payment_record_received(book=book, invoice_id=may["id"], amount=Decimal(20), reference="wire-2",
                            now=datetime(2025, 6, 3, tzinfo=timezone.utc))
    message = error(change(acme.api, old, other, effectiveAt="2025-05-20T00:00:00Z"), 409)
    assert "a paid invoice stays as it is: change the plan from 2025-06-01T00:00:00Z on" in message
    # A draft does not block: it is cut at the change and re-priced (same number): June 1-15, 15 of 30 days.
    june = acme.generate(old, JUNE)
    ok(change(acme.api, old, other, effectiveAt="2025-06-16T00:00:00Z"), 201)
    cut = ok(acme.api.get(f"/v1/invoices/{june['id']}"))
    assert (cut["invoiceNumber"], cut["status"], cut["periodEnd"]) == (june["invoiceNumber"], "draft",
                                                                     "2025-06-16T00:00:00Z")
    assert lines(cut) == [("recurring", 1, 15.0)]  # 30 x 15/30


def test_the_409_names_the_end_of_the_last_finalized_invoice_the_change_would_meet(acme):
    # Naming the first one's end sent the caller to a change the next finalized invoice refused again.
    plan, _ = acme.plan(fee("30"))
    other, _ = acme.plan(fee("60"))
    old = subscribe(acme, plan, "2025-05-01T00:00:00Z")
    for period in (("2025-05-01T00:00:00Z", "2025-06-01T00:00:00Z"), JUNE):
        ok(acme.api.post(f"/v1/invoices/{acme.generate(old, period)['id']}/send", {}))
    message = error(change(acme.api, old, other, effectiveAt="2025-05-20T00:00:00Z"), 409)
    assert "change the plan from 2025-07-01T00:00:00Z on" in message and "1 later finalized invoice" in message
    assert "which the change at 2025-05-20T00:00:00Z would split" in message
    # A finalized invoice wholly after the change is not split, but would bill the old plan after its end.
    ok(acme.api.post(f"/v1/invoices/{acme.generate(old, ('2025-05-01T00:00:00Z', '2025-06-01T00:00:00Z'))['id']}"
                     "/void", {"reason": "re-issued"}))
    message = error(change(acme.api, old, other, effectiveAt="2025-05-20T00:00:00Z"), 409)
    assert "2025-06-01T00:00:00Z to 2025-07-01T00:00:00Z, which the change at 2025-05-20T00:00:00Z would leave " \
           "billing the old plan after the subscription ended" in message
    ok(change(acme.api, old, other, effectiveAt="2025-07-01T00:00:00Z"), 201)  # the advice, followed, is taken


def test_a_plan_of_another_agent_is_a_422_and_an_unknown_plan_a_404(acme, api):
    plan, _ = acme.plan(fee("30"))
    old = subscribe(acme, plan, "2025-05-01T00:00:00Z")
    stranger = Book(api, acme.book)
    foreign, _ = stranger.plan(fee("60"))
    assert "not a plan of agent" in error(change(acme.api, old, foreign), 422)
    assert error(api.post(f"/v1/subscriptions/{old['id']}/change-plan",
                          {"planId": "7a1d2c3e-0000-4000-8000-000000000000"}), 404)
    assert "planId" in error(api.post(f"/v1/subscriptions/{old['id']}/change-plan", {}), 400)
    assert "effectiveAt" in error(change(acme.api, old, plan, effectiveAt="2025-04-01T00:00:00Z"), 422)
    # A misspelled field is a 400, not a change taking effect now (which nothing could withdraw once in effect).
    message = error(change(acme.api, old, plan, effectiveDate="2099-01-01"), 400)
    assert message.startswith("effectiveDate: Not a field of this request") and "effectiveAt" in message
    assert ok(api.get(f"/v1/subscriptions/{old['id']}"))["nextSubscriptionId"] is None


def test_a_subscription_of_another_organization_reads_as_404(acme, other_api):
    plan, _ = acme.plan(fee("30"))
    old = subscribe(acme, plan, "2025-05-01T00:00:00Z")
    assert error(other_api.post(f"/v1/subscriptions/{old['id']}/change-plan", {"planId": plan["id"]}), 404)
    assert error(other_api.delete(f"/v1/subscriptions/{old['id']}/change-plan"), 404)


# --------------------------------------------------------------------------- scheduled changes

def fee_plans(acme, *rates) -> list[dict]:
    """A plan of one monthly fee for each rate."""
    return [acme.plan(fee(rate))[0] for rate in rates]


def test_a_scheduled_change_is_replaced_by_a_second_call_and_withdrawn_by_delete(acme, frozen_now):
    current, first_choice, second_choice = fee_plans(acme, "30", "60", "90")
    old = subscribe(acme, current, "2025-05-01T00:00:00Z", endDate="2025-12-31T23:59:59Z")
    pending = ok(change(acme.api, old, first_choice, effectiveAt="2025-07-01T00:00:00Z"), 201)
    assert pending["endDate"] == "2026-01-01T00:00:00Z"  # the remaining term moves to the new plan

    replacing = ok(change(acme.api, old, second_choice, effectiveAt="2025-08-01T00:00:00Z"), 201)
    assert acme.api.get(f"/v1/subscriptions/{pending['id']}").status_code == 404
    scheduled = ok(acme.api.get(f"/v1/subscriptions/{old['id']}"))
    assert (scheduled["endDate"], scheduled["nextSubscriptionId"]) == ("2025-08-01T00:00:00Z", replacing["id"])
    assert "replaced" in changelog(acme.api, old["id"])[1]["summary"]

    restored = ok(acme.api.delete(f"/v1/subscriptions/{old['id']}/change-plan"))
    assert (restored["endDate"], restored["nextSubscriptionId"], restored["status"]) == (
        "2026-01-01T00:00:00Z", None, "active")
    assert acme.api.get(f"/v1/subscriptions/{replacing['id']}").status_code == 404
    assert "withdrawn" in changelog(acme.api, old["id"])[0]["summary"]
    assert "no scheduled plan change" in error(acme.api.delete(f"/v1/subscriptions/{old['id']}/change-plan"), 404)


def test_withdrawing_gives_the_old_subscription_its_own_end_back_not_the_one_the_new_side_was_given_since(
        acme, frozen_now):
    current, other = fee_plans(acme, "30", "60")
    old = subscribe(acme, current, "2025-05-01T00:00:00Z")
    pending = ok(change(acme.api, old, other, effectiveAt="2025-07-01T00:00:00Z"), 201)
    shortened = ok(acme.api.patch(f"/v1/subscriptions/{pending['id']}", {"endDate": "2025-09-01T00:00:00Z"}))
    assert (shortened["endDate"], shortened["isForever"]) == ("2025-09-01T00:00:00Z", False)

    restored = ok(acme.api.delete(f"/v1/subscriptions/{old['id']}/change-plan"))
    assert old["endDate"] is None
    assert (restored["endDate"], restored["isForever"], restored["nextSubscriptionId"]) == (
        None, old["isForever"], None)


def test_a_change_whose_new_subscription_scheduled_one_of_its_own_is_withdrawn_after_that_one(acme, frozen_now):
    first, second, third = fee_plans(acme, "30", "60", "90")
    old = subscribe(acme, first, "2025-05-01T00:00:00Z", endDate="2026-01-01T00:00:00Z")
    middle = ok(change(acme.api, old, second, effectiveAt="2025-07-01T00:00:00Z"), 201)
    last = ok(change(acme.api, middle, third, effectiveAt="2025-08-01T00:00:00Z"), 201)

    for refused in (acme.api.delete(f"/v1/subscriptions/{old['id']}/change-plan"),
                    change(acme.api, old, third, effectiveAt="2025-09-01T00:00:00Z")):
        message = error(refused, 409)
        assert middle["id"] in message and f"DELETE /v1/subscriptions/{middle['id']}/change-plan" in message
    assert ok(acme.api.get(f"/v1/subscriptions/{old['id']}"))["nextSubscriptionId"] == middle["id"]
    assert ok(acme.api.get(f"/v1/subscriptions/{last['id']}"))["previousSubscriptionId"] == middle["id"]

    assert ok(acme.api.delete(f"/v1/subscriptions/{middle['id']}/change-plan"))["endDate"] == "2026-01-01T00:00:00Z"
    restored = ok(acme.api.delete(f"/v1/subscriptions/{old['id']}/change-plan"))
    assert (restored["endDate"], restored["nextSubscriptionId"]) == ("2026-01-01T00:00:00Z", None)
    assert [acme.api.get(f"/v1/subscriptions/{row['id']}").status_code for row in (middle, last)] == [404, 404]


def test_a_change_that_took_effect_can_no_longer_be_withdrawn_or_replaced(acme, frozen_now):
    current, _ = acme.plan(fee("30"))
    other, _ = acme.plan(fee("60"))
    old = subscribe(acme, current, "2025-05-01T00:00:00Z")
    new = ok(change(acme.api, old, other, effectiveAt="2025-07-01T00:00:00Z"), 201)
    frozen_now(datetime(2025, 7, 2, tzinfo=UTC))
    assert new["id"] in error(acme.api.delete(f"/v1/subscriptions/{old['id']}/change-plan"), 409)
    assert new["id"] in error(change(acme.api, old, current), 409)


# --------------------------------------------------------------------------- properties

def _cents(amount: D) -> D:
    return amount.quantize(D("0.01"), rounding=ROUND_HALF_UP)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(old_fee=st.integers(1, 500), new_fee=st.integers(1, 500), old_rate=st.sampled_from(["0.25", "1", "2.5"]),
       new_rate=st.sampled_from(["0.1", "1.5", "3"]), zone=st.sampled_from(["UTC", "America/New_York", "Asia/Kolkata"]),
       month=st.sampled_from([2, 3, 6, 11]), fraction=st.integers(1, 9999),
       events=st.lists(st.tuples(st.integers(0, 9999), st.integers(0, 50)), max_size=15))
def test_every_event_is_billed_once_and_the_fees_add_up_to_each_plans_fee_by_its_days(
        client_for, old_fee, new_fee, old_rate, new_rate, zone, month, fraction, events):
    """A month of 2025 in the subscription's time zone (February, the DST months March and November, June), split
    at a random instant inside it; random events over the month."""
    org = OrganizationFactory()
    acme = Book(client_for(organization=org), book_of(org, "test"))
    old_plan, _ = acme.plan(fee(str(old_fee)), ("tickets", old_rate))
    new_plan, _ = acme.plan(fee(str(new_fee)), ("tickets", new_rate))
    local = ZoneInfo(zone)
    month_start = datetime(2025, month, 1, tzinfo=local).astimezone(UTC)
    month_end = datetime(2025, month + 1, 1, tzinfo=local).astimezone(UTC)
    length = month_end - month_start

    def instant(share: int) -> datetime:  # a point of the month, in ten-thousandths (never its first instant)
        return month_start + length * share / 10000

    def text(moment: datetime) -> str:
        return moment.isoformat().replace("+00:00", "Z")
    at = instant(fraction)
    old = subscribe(acme, old_plan, "2025-01-01", timezone=zone)
    recorded = [("tickets", quantity, text(instant(share))) for share, quantity in events]
    if recorded:
        acme.record(*recorded)
    new = ok(change(acme.api, old, new_plan, effectiveAt=text(at)), 201)
    before = acme.generate(old, (text(month_start), text(at)))
    after = acme.generate(new, (text(at), text(month_end)))

    def used(invoice) -> D:
        return sum((D(str(line["usedQuantity"])) for line in invoice["lines"] if line["chargeType"] == "usage"), D(0))
    assert used(before) + used(after) == sum((D(quantity) for _, quantity, _ in recorded), D(0))
    assert used(after) == sum((D(q) for share, q in events if instant(share) >= at), D(0))
    days = (month_end.astimezone(local).date() - month_start.astimezone(local).date()).days
    old_days = at.astimezone(local).day - 1  # the change day is the new plan's
    assert fee_total(before) == _cents(D(old_fee) * old_days / days)
    assert fee_total(after) == _cents(D(new_fee) * (days - old_days) / days)


def test_the_end_of_a_subscription_a_change_ends_moves_only_through_change_plan(acme, frozen_now):
    current, _ = acme.plan(fee("30"))
    other, _ = acme.plan(fee("60"))
    old = subscribe(acme, current, "2025-05-01T00:00:00Z")
    ok(change(acme.api, old, other, effectiveAt="2025-07-01T00:00:00Z"), 201)
    for body in ({"endDate": "2025-09-01"}, {"isForever": True}, {"status": "ended"}):
        assert "change-plan" in error(acme.api.patch(f"/v1/subscriptions/{old['id']}", body), 422)
    assert ok(acme.api.patch(f"/v1/subscriptions/{old['id']}", {"endDate": "2025-07-01T00:00:00Z",
                                                                  "name": "Renamed"}))["name"] == "Renamed"
