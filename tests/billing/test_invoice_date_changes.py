"""A billingDay or timezone change takes effect from the next period (docs/decisions/plans-and-subscriptions.md):
the periods before it, the current one included, keep the grid they were billed on. A period that the
subscription covers in part is prorated against its cycle on that grid (contract, Proration: "fee x covered days /
days in the period"). Before, the change re-measured them on the new grid, where they matched no cycle and were
billed the whole fee, a reviewed draft included once the end-of-period job refreshed it."""
from datetime import UTC, datetime

import pytest

from billing.services.invoices import invoices_finalize_due
from core import clock
from tests.billing.invoice_support import amounts, billing_chain, generate, recurring
from tests.billing.support import ok
from tests.billing.test_subscription_job import run_jobs

pytestmark = pytest.mark.django_db

JANUARY_FROM_22 = ("2025-01-22T00:00:00Z", "2025-01-31T23:59:59Z")  # 10 of January's 31 days: 62 x 10/31 = 20.00


@pytest.fixture
def now(monkeypatch):
    current = {"now": datetime(2025, 1, 25, 12, tzinfo=UTC)}
    monkeypatch.setattr(clock, "now", lambda: current["now"])

    def move(moment: datetime) -> datetime:
        current["now"] = moment
        return moment
    return move


def change_dates(api, chain, **dates):
    return ok(api.patch(f"/v1/subscriptions/{chain.subscription['id']}/invoice-dates", dates))


@pytest.fixture
def from_the_22nd(api, book, now):
    """Started January 22 on billing day 1, a monthly fee of 62.00: January's period is [Jan 22, Feb 1)."""
    return billing_chain(api, book, [recurring("62")], start="2025-01-22T00:00:00Z", billingDay=1)


@pytest.mark.parametrize("dates", [{"billingDay": 15}, {"timezone": "Asia/Tokyo"},
                                   {"billingDay": 15, "timezone": "America/New_York"}],
                         ids=["billing day", "timezone", "both"])
def test_the_current_partial_period_stays_prorated_on_its_own_grid(api, from_the_22nd, dates):
    change_dates(api, from_the_22nd, **dates)
    invoice = ok(generate(api, from_the_22nd, period=None), 201)
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-01-22T00:00:00Z", "2025-02-01T00:00:00Z")
    assert amounts(invoice) == [("recurring", 20.0)]
    assert amounts(ok(generate(api, from_the_22nd, JANUARY_FROM_22))) == [("recurring", 20.0)]  # the same draft


def test_a_reviewed_draft_is_issued_as_reviewed_after_a_billing_day_change(api, from_the_22nd, now):
    invoice = ok(generate(api, from_the_22nd, period=None), 201)
    assert amounts(invoice) == [("recurring", 20.0)]
    change_dates(api, from_the_22nd, billingDay=15)
    invoices_finalize_due(now=now(datetime(2025, 2, 1, 1, tzinfo=UTC)))
    issued = ok(api.get(f"/v1/invoices/{invoice['id']}"))
    assert (issued["status"], amounts(issued), issued["total"]) == ("issued", [("recurring", 20.0)], 20.0)


def test_an_end_in_the_current_period_stays_prorated_after_a_billing_day_change(api, book, now):
    chain = billing_chain(api, book, [recurring("62")], start="2025-01-01T00:00:00Z", billingDay=1,
                          endDate="2025-01-21")
    change_dates(api, chain, billingDay=15)
    invoice = ok(generate(api, chain, period=None), 201)
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-01-01T00:00:00Z", "2025-01-21T00:00:00Z")
    assert amounts(invoice) == [("recurring", 40.0)]  # 62 x 20/31


def test_each_period_keeps_the_rules_it_had_through_two_changes(api, from_the_22nd, now):
    """Day 1 until Feb 1, day 15 from there (the period [Feb 1, Feb 15) runs to the new grid's first turn, billed
    its whole fee as before), then day 20 from Feb 15."""
    change_dates(api, from_the_22nd, billingDay=15)
    run_jobs(now(datetime(2025, 2, 5, tzinfo=UTC)).isoformat())
    change_dates(api, from_the_22nd, billingDay=20)
    run_jobs(now(datetime(2025, 2, 16, tzinfo=UTC)).isoformat())
    body = ok(api.get(f"/v1/subscriptions/{from_the_22nd.subscription['id']}"))
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-02-15T00:00:00Z", "2025-02-20T00:00:00Z")
    assert amounts(ok(generate(api, from_the_22nd, JANUARY_FROM_22), 201)) == [("recurring", 20.0)]
    assert amounts(ok(generate(api, from_the_22nd, ("2025-02-01T00:00:00Z", "2025-02-14T23:59:59Z")), 201)) == [
        ("recurring", 62.0)]


def test_a_second_change_in_the_same_period_replaces_the_first(api, from_the_22nd, now):
    change_dates(api, from_the_22nd, billingDay=15)
    change_dates(api, from_the_22nd, billingDay=10)
    run_jobs(now(datetime(2025, 2, 5, tzinfo=UTC)).isoformat())
    body = ok(api.get(f"/v1/subscriptions/{from_the_22nd.subscription['id']}"))
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-02-01T00:00:00Z", "2025-02-10T00:00:00Z")
    assert amounts(ok(generate(api, from_the_22nd, JANUARY_FROM_22), 201)) == [("recurring", 20.0)]


def test_revenue_recognizes_each_periods_fee_over_the_days_it_was_billed_for(api, book, now):
    """Day 1 until Feb 1, then day 15: `[Jan 1, Feb 1)`, `[Feb 1, Feb 15)` (to the new grid's first turn, its whole
    fee) and `[Feb 15, Mar 15)` each bill 62.00. Revenue spreads each fee over its own period's days: February
    holds the second period whole and 14 of the third's 28 days, 62 + 31 = 93.00; the three periods together
    186.00, as their invoices. On the new grid alone February read 28 + 31 = 59.00."""
    chain = billing_chain(api, book, [recurring("62")], start="2025-01-01T00:00:00Z", billingDay=1)
    change_dates(api, chain, billingDay=15)
    billed = [ok(generate(api, chain, period), 201)["total"] for period in [
        ("2025-01-01T00:00:00Z", "2025-01-31T23:59:59Z"), ("2025-02-01T00:00:00Z", "2025-02-14T23:59:59Z"),
        ("2025-02-15T00:00:00Z", "2025-03-14T23:59:59Z")]]
    assert billed == [62.0, 62.0, 62.0]
    path = f"/v1/subscriptions/{chain.subscription['id']}/revenue"

    def recurring_revenue(start, end):
        return ok(api.get(path, {"startDate": start, "endDate": end}))["breakdown"]["recurring"]

    assert recurring_revenue("2025-02-01", "2025-02-28") == 93.0
    assert recurring_revenue("2025-01-01", "2025-03-14") == sum(billed)


def test_a_period_before_a_timezone_change_is_shown_in_the_timezone_it_was_billed_in(api, from_the_22nd):
    """Invoice documents, the console and the portal write a period's days in its own timezone: after a change to
    Tokyo, January's UTC period read "2025-01-22 09:00 JST to 2025-02-01 09:00 JST"."""
    from billing.invoice_documents import period_label
    from billing.models import Invoice
    change_dates(api, from_the_22nd, timezone="Asia/Tokyo")
    invoice = ok(generate(api, from_the_22nd, period=None), 201)
    assert period_label(Invoice.objects.get(pk=invoice["id"])) == "2025-01-22 to 2025-01-31"


# --------------------------------------------------------------------------- a plan change while a change is pending

def change_plan(api, chain, **body) -> dict:
    from tests.billing.support import create_plan, create_strategies
    plan = create_plan(api, chain.agent.id, name="Growth")
    create_strategies(api, plan["id"], [{"name": "growth fee", "agentId": str(chain.agent.id), **recurring("62")}])
    return ok(api.post(f"/v1/subscriptions/{chain.subscription['id']}/change-plan", {"planId": plan["id"], **body}),
              201)


def current_period(api, subscription_id) -> tuple[str, str]:
    body = ok(api.get(f"/v1/subscriptions/{subscription_id}"))
    return body["currentPeriodStart"], body["currentPeriodEnd"]


@pytest.fixture
def day_15_from_february(api, book, now):
    """Started January 1 on billing day 1, changed on January 10 to day 15: the change takes effect on Feb 1."""
    now(datetime(2025, 1, 10, 12, tzinfo=UTC))
    chain = billing_chain(api, book, [recurring("62")], start="2025-01-01T00:00:00Z", billingDay=1)
    change_dates(api, chain, billingDay=15)
    return chain


def test_a_plan_change_before_the_new_billing_day_takes_effect_keeps_the_period_on_its_grid(api, day_15_from_february,
                                                                                           now):
    """A change now, January 12 12:00: the new side's period is [Jan 12 12:00, Feb 1), its fee 62 x 20/31 = 40.00 (it
    was stored as [Jan 12 12:00, Jan 15), on the grid not yet in force, and billed 62.00 for two and a half days)."""
    now(datetime(2025, 1, 12, 12, tzinfo=UTC))
    successor = change_plan(api, day_15_from_february)
    assert current_period(api, successor["id"]) == ("2025-01-12T12:00:00Z", "2025-02-01T00:00:00Z")
    day_15_from_february.subscription = successor
    assert amounts(ok(generate(api, day_15_from_february, period=None), 201)) == [("recurring", 40.0)]
    run_jobs(now(datetime(2025, 2, 2, tzinfo=UTC)).isoformat())
    assert current_period(api, successor["id"]) == ("2025-02-01T00:00:00Z", "2025-02-15T00:00:00Z")


def test_a_scheduled_plan_change_starts_its_side_on_the_grid_in_force(api, day_15_from_february, now):
    successor = change_plan(api, day_15_from_february, effectiveAt="2025-01-20T00:00:00Z")
    run_jobs(now(datetime(2025, 1, 20, 1, tzinfo=UTC)).isoformat())
    assert current_period(api, successor["id"]) == ("2025-01-20T00:00:00Z", "2025-02-01T00:00:00Z")


def test_a_plan_change_dated_before_the_new_billing_day_took_effect(api, day_15_from_february, now):
    """On February 5 (in the period [Feb 1, Feb 15)), a change effective January 25: the old side's last period is
    [Jan 1, Jan 25) on the day-1 grid, and the new side is in [Feb 1, Feb 15)."""
    run_jobs(now(datetime(2025, 2, 5, tzinfo=UTC)).isoformat())
    successor = change_plan(api, day_15_from_february, effectiveAt="2025-01-25T00:00:00Z")
    assert current_period(api, day_15_from_february.subscription["id"]) == ("2025-01-01T00:00:00Z",
                                                                            "2025-01-25T00:00:00Z")
    assert current_period(api, successor["id"]) == ("2025-02-01T00:00:00Z", "2025-02-15T00:00:00Z")


def test_bare_dates_of_a_period_before_a_timezone_change_are_its_own_timezones_days(api, from_the_22nd):
    """`billingPeriodStart: 2025-01-22` after a change to Tokyo is January 22 as January was billed (UTC), the same
    period as the default one, not midnight in Tokyo (a window measured against itself)."""
    change_dates(api, from_the_22nd, timezone="Asia/Tokyo")
    invoice = ok(generate(api, from_the_22nd, ("2025-01-22", "2025-02-01")), 201)
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-01-22T00:00:00Z", "2025-02-01T00:00:00Z")
    assert amounts(invoice) == [("recurring", 20.0)]


def test_bare_dates_of_a_period_before_a_change_west_of_utc_end_where_that_period_ends(api, from_the_22nd):
    """After a change to Los Angeles, `billingPeriodEnd: 2025-02-01` closes January's UTC period at Feb 1 00:00Z; read
    in Los Angeles it reached 8 hours into February and the window, matching no period, billed 62.00."""
    change_dates(api, from_the_22nd, timezone="America/Los_Angeles")
    invoice = ok(generate(api, from_the_22nd, ("2025-01-22", "2025-02-01")), 201)
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-01-22T00:00:00Z", "2025-02-01T00:00:00Z")
    assert amounts(invoice) == [("recurring", 20.0)]


def test_a_bare_effective_date_is_a_day_of_the_period_it_falls_in_while_a_timezone_change_is_pending(api, book, now):
    """January is billed in UTC; a change to Tokyo on January 10 takes effect on February 1. A plan change on January
    25 effective `2025-01-20` starts January 20 at UTC midnight: the old side keeps 19 of January's 31 days, 62 x 19/31
    = 38.00, the new side 12, 31 x 12/31 = 12.00 (read in Tokyo it began 9 hours earlier: 36.00 and 13.00)."""
    from tests.billing.support import create_plan, create_strategies
    now(datetime(2025, 1, 10, 12, tzinfo=UTC))
    chain = billing_chain(api, book, [recurring("62")], start="2025-01-01T00:00:00Z", billingDay=1)
    change_dates(api, chain, timezone="Asia/Tokyo")
    now(datetime(2025, 1, 25, 12, tzinfo=UTC))
    plan = create_plan(api, chain.agent.id, name="Lite")
    create_strategies(api, plan["id"], [{"name": "lite fee", "agentId": str(chain.agent.id), **recurring("31")}])
    successor = ok(api.post(f"/v1/subscriptions/{chain.subscription['id']}/change-plan",
                            {"planId": plan["id"], "effectiveAt": "2025-01-20"}), 201)
    assert successor["startDate"] == "2025-01-20T00:00:00Z"
    assert amounts(ok(generate(api, chain, period=None), 201)) == [("recurring", 38.0)]
    chain.subscription = successor
    assert amounts(ok(generate(api, chain, period=None), 201)) == [("recurring", 12.0)]


def test_revenue_recognizes_the_whole_fee_of_the_first_period_after_a_timezone_change(api, book, now):
    """UTC until Feb 1, then Tokyo: `[Feb 1 00:00Z, Feb 28 15:00Z)` starts at 09:00 on February 1 in Tokyo and its
    invoice bills 28 of its 28 days, 62.00. Revenue over the period is that fee; it counted from 09:00, 27.625 days,
    61.17, and three periods' revenue fell short of their three invoices."""
    chain = billing_chain(api, book, [recurring("62")], start="2025-01-01T00:00:00Z", billingDay=1)
    change_dates(api, chain, timezone="Asia/Tokyo")
    periods = [("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"), ("2025-02-01T00:00:00Z", "2025-02-28T15:00:00Z"),
               ("2025-02-28T15:00:00Z", "2025-03-31T15:00:00Z")]
    billed = []
    for start, end in periods:
        invoice = ok(generate(api, chain, (start, end)), 201)
        assert (invoice["periodStart"], invoice["periodEnd"]) == (start, end)
        billed.append(invoice["total"])
    assert billed == [62.0, 62.0, 62.0]
    path = f"/v1/subscriptions/{chain.subscription['id']}/revenue"

    def recurring_revenue(start, end):
        return ok(api.get(path, {"startDate": start, "endDate": end}))["breakdown"]["recurring"]

    assert recurring_revenue(*periods[1]) == 62.0
    assert recurring_revenue(periods[0][0], periods[2][1]) == sum(billed)
