"""Figures read or derived from the usage ledger agree with it and with each other, through price overrides,
back-filled months, plan changes, replays and deleted signals (contract: "Derived figures"). Every expected amount is
worked by hand from the records the test sends (catalog rates in USD per million tokens in comments)."""
from datetime import datetime, timezone
from decimal import Decimal as D
from types import SimpleNamespace

import pytest

from catalog.models import ServiceEntry
from customers.models import Agent, Signal
from tests.billing.test_exact_invoices import Book

pytestmark = pytest.mark.django_db

# gpt-4o: $2.50 in, $10 out per million -> 1M in + 100k out = 2.5 + 1.0 = 3.5
GPT_4O = {"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 1_000_000, "outputTokens": 100_000}
# claude-sonnet-4-5: $3 in per million -> 100k in = 0.3
CLAUDE = {"model": "claude-sonnet-4-5", "modelProvider": "anthropic", "inputTokens": 100_000}
# gpt-4o-mini: $0.15 in per million -> 1M in = 0.15
MINI = {"model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 1_000_000}


def num(value) -> D:
    return D(repr(value)) if isinstance(value, float) else D(str(value))


def ok(resp, status=200):
    assert resp.status_code == status, (resp.status_code, resp.content[:800])
    return resp.json() if resp.content else None


def record(api, *records):
    body = ok(api.post("/v1/usage/record", {"records": list(records)}))
    assert body["successful"] == len(records), body["results"]["failed"]
    return [row["eventId"] for row in body["results"]["success"]]


def rec(when, customer="cust-1", agent="bot", signal="answers", **fields):
    return {"customerExternalId": customer, "agentCode": agent, "signalName": signal, "usageDate": when, **fields}


def gpt_4o() -> ServiceEntry:
    return ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")


def cost(api, start, end, **params):
    return ok(api.get("/v1/analytics/cost", {"startDate": start, "endDate": end, **params}))


def usage(api, start, end, **params):
    return ok(api.get("/v1/analytics/usage", {"startDate": start, "endDate": end, **params}))


def by_key(rows, key):
    return {row[key]: (num(row["cost"]), row["eventCount"]) for row in rows}


def matter_figures(api, matter_id):
    body = ok(api.get(f"/v1/matters/{matter_id}"))
    return num(body["actualCost"]), body["eventCount"]


def event_costs(api, ids):
    rows = ok(api.get("/v1/events", {"limit": 100}))
    found = {row["id"]: row["usageCost"] for row in rows}
    return [None if found[i] is None else D(found[i]) for i in ids]


# --------------------------------------------------------------------------- overrides over a back-filled month

def _override_world(api):
    matter = ok(api.post("/v1/matters", {"matterNumber": "M-1", "name": "Case", "clientName": "Client"}), 201)
    ids = record(api,
                 rec("2025-03-10T10:00:00Z", metadata={"matterId": "M-1"}, **GPT_4O),  # 3.5
                 rec("2025-03-20T10:00:00Z", metadata={"matterId": "M-1"}, services=[GPT_4O, CLAUDE]),  # 3.8
                 rec("2025-02-27T10:00:00Z", metadata={"matterId": "M-1"}, **GPT_4O),  # 3.5, before the override
                 rec("2025-03-15T23:00:00Z", **MINI))  # 0.15, unassigned
    return matter, ids


def test_an_override_of_a_back_filled_month_moves_every_cost_reader_alike_and_its_deletion_moves_them_back(api):
    matter, ids = _override_world(api)
    assert event_costs(api, ids) == [D("3.5"), D("3.8"), D("3.5"), D("0.15")]
    march = cost(api, "2025-03-01", "2025-03-31")
    assert (num(march["cost"]), march["eventCount"]) == (D("7.45"), 3)
    assert matter_figures(api, matter["id"]) == (D("10.8"), 3)

    # $1 input from March: gpt-4o 1M in + 100k out = 1 + 1 = 2
    body = ok(api.post("/v1/price-overrides", {"serviceId": str(gpt_4o().id), "inputCost": "0.000001",
                                               "effectiveFrom": "2025-03-01T00:00:00Z"}), 201)
    assert (body["eventsAffected"], body["eventsRepriced"]) == (2, 2)
    assert event_costs(api, ids) == [D("2"), D("2.3"), D("3.5"), D("0.15")]
    march = cost(api, "2025-03-01", "2025-03-31")
    assert (num(march["cost"]), march["eventCount"]) == (D("4.45"), 3)
    assert by_key(march["byModel"], "model") == {"gpt-4o": (D("4"), 2), "claude-sonnet-4-5": (D("0.3"), 1),
                                                 "gpt-4o-mini": (D("0.15"), 1)}
    assert by_key(march["byDay"], "date") == {"2025-03-10T00:00:00Z": (D("2"), 1),
                                              "2025-03-15T00:00:00Z": (D("0.15"), 1),
                                              "2025-03-20T00:00:00Z": (D("2.3"), 1)}
    # A window with edges inside days reads those days from the events: the same figures.
    edges = cost(api, "2025-03-10T09:00:00Z", "2025-03-20T11:00:00Z")
    assert (num(edges["cost"]), edges["eventCount"]) == (D("4.45"), 3)
    spring = usage(api, "2025-02-01", "2025-03-31", groupBy="monthly")
    assert num(spring["summary"]["totalCost"]) == D("7.95")  # 3.5 + 4.45
    assert {row["date"][:7]: num(row["totalCost"]) for row in spring["timeSeriesData"]} == {
        "2025-02": D("3.5"), "2025-03": D("4.45")}
    assert matter_figures(api, matter["id"]) == (D("7.8"), 3)  # 2 + 2.3 + 3.5
    audit = ok(api.get("/v1/matters/audit", {"startDate": "2025-03-01", "endDate": "2025-03-31"}))
    assert num(audit["totals"]["cost"]) == D("4.45")

    resp = ok(api.delete(f"/v1/price-overrides/{body['id']}"))
    assert resp["eventsRepriced"] == 2
    assert event_costs(api, ids) == [D("3.5"), D("3.8"), D("3.5"), D("0.15")]
    march = cost(api, "2025-03-01", "2025-03-31")
    assert (num(march["cost"]), march["eventCount"]) == (D("7.45"), 3)
    assert by_key(march["byModel"], "model")["gpt-4o"] == (D("7"), 2)
    assert matter_figures(api, matter["id"]) == (D("10.8"), 3)


# --------------------------------------------------------------------------- a past plan change in New York, billing day 15

def _pool(units, price, overage, signal) -> dict:
    return {"chargeType": "usage", "pricingModel": "credit_pool", "signalId": str(signal.id),
            "tiers": [{"lower": 0, "upper": units, "rate": price}, {"lower": units, "upper": None, "rate": overage}]}


def _fee(rate) -> dict:
    return {"chargeType": "recurring", "rate": rate}


def _seat(rate) -> dict:
    return {"chargeType": "seat_based", "pricingModel": "flat", "rate": rate}


def _revenue_labels(body) -> tuple:
    breakdown = body["breakdown"]
    return tuple(num(value) for value in (body["agentEarned"], breakdown["recurring"], breakdown["seat"],
                                          body["revenue"]))


@pytest.fixture
def ny_change(api, book, frozen_now):
    """Billing day 15 in New York; Starter -> Pro at 12:00 EDT on June 25 2025 (16:00Z), made on June 28.

    Period [June 15 04:00Z, July 15 04:00Z): 30 local days; the old side covers June 15-24 (10 days), the new side
    June 25 - July 14 (20 days)."""
    acme = Book(api, book)
    calls = acme.signals["calls"]
    starter, _ = acme.plan(_fee("30"), _seat("6"), ("tickets", "0.10"), _pool(300, "60", "0.50", calls))
    pro, _ = acme.plan(_fee("90"), _seat("9"), ("tickets", "0.08"), _pool(1500, "240", "0.30", calls))
    frozen_now(datetime(2025, 6, 16, 12, tzinfo=timezone.utc))
    old = ok(api.post("/v1/subscriptions", {
        "name": "Desk", "planId": starter["id"], "agentId": str(acme.agent.id), "customerId": str(acme.customer.id),
        "startDate": "2025-04-15T04:00:00Z", "status": "active", "billingDay": 15, "timezone": "America/New_York",
        "seatsCount": 5}), 201)
    acme.record(("calls", 10, "2025-06-15T03:00:00Z"),  # June 14, 23:00 EDT: the period before
                ("tickets", 100, "2025-06-16T12:00:00Z"),
                ("calls", 150, "2025-06-20T10:00:00Z"),
                ("calls", 30, "2025-06-25T15:59:59Z"),  # the change's day, before its instant: the old side's
                ("calls", 1100, "2025-06-26T10:00:00Z"),
                ("tickets", 50, "2025-06-27T10:00:00Z"))
    frozen_now(datetime(2025, 6, 28, 12, tzinfo=timezone.utc))
    new = ok(api.post(f"/v1/subscriptions/{old['id']}/change-plan",
                      {"planId": pro["id"], "effectiveAt": "2025-06-25T16:00:00Z", "seatsCount": 8}), 201)
    return SimpleNamespace(acme=acme, old=old, new=new, api=api)


def test_a_past_plan_change_in_new_york_bills_each_side_as_its_revenue_reads_it(ny_change):
    acme, old, new = ny_change.acme, ny_change.old, ny_change.new
    # Old: fee 30 x 10/30 = 10; seats 5 x 6 = 30 x 10/30 = 10; tickets 100 x 0.10 = 10; pool 300 x 10/30 = 100 units
    # for 60 x 10/30 = 20, 180 used: 80 beyond x 0.50 = 40, so 60. Total 90.
    before = acme.generate(old, ("2025-06-15T04:00:00Z", "2025-06-25T16:00:00Z"))
    assert [num(line["amount"]) for line in before["lines"]] == [D(10), D(10), D(10), D(60)]
    assert num(before["total"]) == D(90)
    # New: fee 90 x 20/30 = 60; seats 8 x 9 = 72 x 20/30 = 48; tickets 50 x 0.08 = 4; pool 1000 units for 160,
    # 1100 used: 100 beyond x 0.30 = 30, so 190. Total 302.
    after = acme.generate(new, ("2025-06-25T16:00:00Z", "2025-07-15T04:00:00Z"))
    assert [num(line["amount"]) for line in after["lines"]] == [D(60), D(48), D(4), D(190)]
    assert num(after["total"]) == D(302)
    # Revenue over the period's instants: the same split.
    window = ("2025-06-15T04:00:00Z", "2025-07-15T04:00:00Z")
    assert _revenue_labels(acme.revenue(old, *window)) == (D(70), D(10), D(10), D(90))
    assert _revenue_labels(acme.revenue(new, *window)) == (D(194), D(60), D(48), D(302))
    customer = ok(ny_change.api.get(f"/v1/customers/{acme.customer.id}/revenue",
                                    {"startDate": window[0], "endDate": window[1]}))
    assert num(customer["revenue"]) == D(392)


def test_a_past_plan_change_in_new_york_leaves_the_new_side_a_pool_of_its_days(ny_change):
    balance = ok(ny_change.api.get(f"/v1/subscriptions/{ny_change.new['id']}/credit-balance"))
    # 1500 x 20/30 = 1000 units; 1100 drawn since the change.
    assert (num(balance["poolSizeUnits"]), num(balance["consumedUnits"]), num(balance["remainingUnits"]),
            num(balance["overageInProgressUnits"])) == (D(1000), D(1100), D(-100), D(100))
    assert (balance["periodStart"], balance["periodEnd"]) == ("2025-06-25T16:00:00Z", "2025-07-15T04:00:00Z")


def test_a_past_plan_change_in_new_york_gives_run_rate_mrr_the_new_sides_usage(ny_change):
    body = ok(ny_change.api.get("/v1/analytics/mrr", {"variant": "runRate"}))
    rows = {row["subscriptionId"]: row for row in body["breakdown"]}
    assert list(rows) == [ny_change.new["id"]]  # the old side ended
    row = rows[ny_change.new["id"]]
    # fee 90; seats 8 x 9 = 72; usage of [May 29 12:00Z, June 28 12:00Z) it bills: 1100 calls in the pool (240),
    # 50 tickets x 0.08 = 4.
    assert (num(row["recurring"]), num(row["seatBased"]), num(row["usage"])) == (D(90), D(72), D(244))


# --------------------------------------------------------------------------- overrides beside replays, orphans and old years

def test_a_replay_after_a_repricing_answers_the_original_event_and_the_month_counts_it_once_at_its_new_price(api):
    [event_id] = record(api, rec("2025-03-10T10:00:00Z", idempotencyKey="k-1", **GPT_4O))
    ok(api.post("/v1/price-overrides", {"serviceId": str(gpt_4o().id), "inputCost": "0.000001",
                                        "effectiveFrom": "2025-03-01T00:00:00Z"}), 201)
    body = ok(api.post("/v1/usage/record", {"records": [rec("2025-03-10T10:00:00Z", idempotencyKey="k-1",
                                                            **GPT_4O)]}))
    [replayed] = body["results"]["success"]
    assert replayed["eventId"] == event_id
    assert event_costs(api, [event_id]) == [D("2")]
    march = cost(api, "2025-03-01", "2025-03-31")
    assert (num(march["cost"]), march["eventCount"]) == (D("2"), 1)


def test_an_orphaned_events_repricing_moves_the_null_signal_and_agent_rows_of_cost_and_usage(api, book):
    ids = record(api, rec("2025-03-10T10:00:00Z", **GPT_4O), rec("2025-03-10T23:00:00Z", signal="other", **GPT_4O))
    answers = Signal.objects.get(book=book, short_name="answers")
    assert api.delete(f"/v1/signals/{answers.id}").status_code == 204
    ok(api.post("/v1/price-overrides", {"serviceId": str(gpt_4o().id), "inputCost": "0.000001",
                                        "effectiveFrom": "2025-03-01T00:00:00Z"}), 201)
    assert event_costs(api, ids) == [D("2"), D("2")]
    for window in (("2025-03-01", "2025-03-31"), ("2025-03-10T09:00:00Z", "2025-03-10T23:30:00Z")):
        march = cost(api, *window)
        assert (num(march["cost"]), march["eventCount"]) == (D("4"), 2)
        signals = {row["signalId"]: (num(row["cost"]), row["eventCount"]) for row in march["bySignal"]}
        other = Signal.objects.get(book=book, short_name="other")
        assert signals == {None: (D("2"), 1), str(other.id): (D("2"), 1)}
        spent = usage(api, *window, breakdownBy="signal")
        assert num(spent["summary"]["totalCost"]) == D("4")
        summary = {row["dimensionId"]: num(row["totalCost"]) for row in spent["dimensionBreakdown"]["summary"]}
        assert summary == {None: D("2"), str(other.id): D("2")}


def test_an_undated_override_reprices_an_event_of_a_year_no_partition_holds(api):
    [old_id] = record(api, rec("1990-05-10T10:00:00Z", metadata={}, **GPT_4O))
    matter = ok(api.post("/v1/matters", {"matterNumber": "M-9", "name": "Old", "clientName": "Client"}), 201)
    ok(api.post("/v1/matters/assign", {"eventId": old_id, "matterId": matter["id"]}), 201)
    created = ok(api.post("/v1/price-overrides", {"serviceId": str(gpt_4o().id), "inputCost": "0.000001"}), 201)
    assert created["eventsRepriced"] == 1
    may = cost(api, "1990-05-01", "1990-05-31")
    assert (num(may["cost"]), may["eventCount"]) == (D("2"), 1)
    assert matter_figures(api, matter["id"]) == (D("2"), 1)
    ok(api.delete(f"/v1/price-overrides/{created['id']}"))
    may = cost(api, "1990-05-01", "1990-05-31")
    assert num(may["cost"]) == D("3.5")
    assert matter_figures(api, matter["id"]) == (D("3.5"), 1)


def test_a_model_override_prices_the_unknown_part_of_a_multi_service_event_in_every_reader(api):
    acme = {"model": "acme-llm", "modelProvider": "acme", "inputTokens": 1_000_000}
    ok(api.post("/v1/matters", {"matterNumber": "M-2", "name": "Case", "clientName": "Client"}), 201)
    body = ok(api.post("/v1/usage/record", {"records": [
        rec("2025-03-10T10:00:00Z", metadata={"matterId": "M-2"}, services=[GPT_4O, acme])]}))
    [failed] = body["results"]["failed"]
    assert failed["stored"] is True
    event_id = failed["eventId"]
    march = cost(api, "2025-03-01", "2025-03-31")
    assert (num(march["cost"]), march["eventCountWithNullCost"]) == (D("0"), 1)
    # acme-llm at $0.50 in: 1M in = 0.5; the event: 3.5 + 0.5 = 4
    ok(api.post("/v1/price-overrides", {"model": "acme-llm", "modelProvider": "acme", "inputCost": "0.0000005"}), 201)
    assert event_costs(api, [event_id]) == [D("4")]
    march = cost(api, "2025-03-01", "2025-03-31")
    assert (num(march["cost"]), march["eventCountWithNullCost"]) == (D("4"), 0)
    assert by_key(march["byModel"], "model") == {"gpt-4o": (D("3.5"), 1), None: (D("0.5"), 1)}
    listed = ok(api.get("/v1/matters"))["results"]
    assert [(num(row["actualCost"]), row["eventsMissingCost"]) for row in listed] == [(D("4"), 0)]


# --------------------------------------------------------------------------- seats: what an invoice captured stays

def test_seats_changed_after_an_issued_invoice_leave_its_periods_revenue_as_billed(api, book, frozen_now):
    acme = Book(api, book)
    plan, _ = acme.plan(_seat("10"), ("tickets", "1"))
    frozen_now(datetime(2025, 6, 10, tzinfo=timezone.utc))
    subscription = ok(api.post("/v1/subscriptions", {
        "name": "Desk", "planId": plan["id"], "agentId": str(acme.agent.id), "customerId": str(acme.customer.id),
        "startDate": "2025-05-01T00:00:00Z", "status": "active", "billingDay": 1, "seatsCount": 5}), 201)
    acme.record(("tickets", 7, "2025-05-20T10:00:00Z"))
    may = acme.generate(subscription, ("2025-05-01T00:00:00Z", "2025-06-01T00:00:00Z"))
    assert num(may["total"]) == D(57)  # 5 x 10 + 7 x 1
    ok(api.post(f"/v1/invoices/{may['id']}/send", {"recipientEmail": "ap@example.com"}))
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"seatsCount": 8}))
    assert _revenue_labels(acme.revenue(subscription, "2025-05-01", "2025-05-31")) == (D(7), D(0), D(50), D(57))
    # June: 8 seats, no invoice yet
    assert _revenue_labels(acme.revenue(subscription, "2025-06-01", "2025-06-30")) == (D(0), D(0), D(80), D(80))
    june = acme.generate(subscription, ("2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z"))
    assert num(june["total"]) == D(80)


def test_a_past_plan_change_in_a_ten_day_custom_cycle_splits_fees_and_pools_by_its_days(api, book, frozen_now):
    acme = Book(api, book)
    calls = acme.signals["calls"]
    small, _ = acme.plan(_fee("30"), _pool(100, "20", "1", calls))
    large, _ = acme.plan(_fee("50"), _pool(200, "40", "0.5", calls))
    frozen_now(datetime(2025, 6, 12, 12, tzinfo=timezone.utc))
    old = ok(api.post("/v1/subscriptions", {
        "name": "Desk", "planId": small["id"], "agentId": str(acme.agent.id), "customerId": str(acme.customer.id),
        "startDate": "2025-06-01T00:00:00Z", "status": "active", "billingCycle": "custom", "customCycleDays": 10}),
        201)
    acme.record(("calls", 40, "2025-06-12T10:00:00Z"), ("calls", 150, "2025-06-15T10:00:00Z"))
    frozen_now(datetime(2025, 6, 16, 12, tzinfo=timezone.utc))
    new = ok(api.post(f"/v1/subscriptions/{old['id']}/change-plan",
                      {"planId": large["id"], "effectiveAt": "2025-06-14T10:00:00Z"}), 201)
    # A monthly fee over a 10-day cycle is 12 x F x 10 / 365 (docs/decisions/pricing.md).
    # Period [June 11, June 21): old June 11-13 (3 of 10 days): fee 360 x 10/365 x 3/10 = 2.9589 -> 2.96; pool 30
    # units for 6, 40 used: 10 x 1 = 10, so 16.
    before = acme.generate(old, ("2025-06-11T00:00:00Z", "2025-06-14T10:00:00Z"))
    assert [num(line["amount"]) for line in before["lines"]] == [D("2.96"), D(16)]
    # New June 14-20 (7 of 10): fee 600 x 10/365 x 7/10 = 11.5068 -> 11.51; pool 140 units for 28, 150 used:
    # 10 x 0.5 = 5, so 33.
    after = acme.generate(new, ("2025-06-14T10:00:00Z", "2025-06-21T00:00:00Z"))
    assert [num(line["amount"]) for line in after["lines"]] == [D("11.51"), D(33)]
    window = ("2025-06-11T00:00:00Z", "2025-06-21T00:00:00Z")
    cents = D("0.01")
    assert num(acme.revenue(old, *window)["revenue"]).quantize(cents) == D("18.96")
    assert num(acme.revenue(new, *window)["revenue"]).quantize(cents) == D("44.51")
    balance = ok(api.get(f"/v1/subscriptions/{new['id']}/credit-balance"))
    assert (num(balance["poolSizeUnits"]), num(balance["consumedUnits"]), num(balance["overageInProgressUnits"])) == (
        D(140), D(150), D(10))


# --------------------------------------------------------------------------- orphans priced again, twice

def test_repricing_an_orphan_caught_up_after_its_signal_went_keeps_every_cost_reader_on_the_ledger(api, book):
    """A signal deleted after its events were rolled up leaves them under its id in the rollup, while a re-pricing
    takes them out and puts them back under the null signal: that row then holds the difference of costs with no
    event of its own. An orphan caught up after its signal went adds its event there; priced again, the row's events
    fall back to none while its cost does not, and the row must stay."""
    def delete_signal(name):
        signal = Signal.objects.get(book=book, short_name=name)
        assert api.delete(f"/v1/signals/{signal.id}").status_code == 204

    matter = ok(api.post("/v1/matters", {"matterNumber": "M-3", "name": "Case", "clientName": "Client"}), 201)
    [first] = record(api, rec("2025-03-10T10:00:00Z", signal="s1", metadata={"matterId": "M-3"}, **GPT_4O))  # 3.5
    assert num(cost(api, "2025-03-01", "2025-03-31")["cost"]) == D("3.5")  # rolled up under s1
    delete_signal("s1")
    # $1 input from March 1: 1 + 1 = 2
    ok(api.post("/v1/price-overrides", {"serviceId": str(gpt_4o().id), "inputCost": "0.000001",
                                        "effectiveFrom": "2025-03-01T00:00:00Z"}), 201)
    [second] = record(api, rec("2025-03-10T15:00:00Z", signal="s2", metadata={"matterId": "M-3"}, **GPT_4O))  # 2
    delete_signal("s2")  # before the rollup caught it up
    assert num(cost(api, "2025-03-01", "2025-03-31")["cost"]) == D("4")  # 2 + 2
    # $0.50 input from noon on March 10: the second event only, 0.5 + 1 = 1.5
    ok(api.post("/v1/price-overrides", {"serviceId": str(gpt_4o().id), "inputCost": "0.0000005",
                                        "effectiveFrom": "2025-03-10T12:00:00Z"}), 201)
    assert event_costs(api, [first, second]) == [D("2"), D("1.5")]
    assert matter_figures(api, matter["id"]) == (D("3.5"), 2)
    march = cost(api, "2025-03-01", "2025-03-31")
    assert (num(march["cost"]), march["eventCount"]) == (D("3.5"), 2)
    assert by_key(march["bySignal"], "signalId") == {None: (D("3.5"), 2)}
    assert num(usage(api, "2025-03-01", "2025-03-31", breakdownBy="signal")["summary"]["totalCost"]) == D("3.5")


def test_repricing_an_orphan_of_a_deleted_agent_keeps_cost_by_agent_on_the_ledger(api, book):
    """As above, with the agents deleted (their signals first): the events' agent is null, the rollup keeps its id."""
    def delete_agent(code):
        agent = Agent.objects.get(book=book, agent_code=code)
        for signal in agent.signals.all():
            assert api.delete(f"/v1/signals/{signal.id}").status_code == 204
        assert api.delete(f"/v1/agents/{agent.id}").status_code == 204

    [first] = record(api, rec("2025-03-10T10:00:00Z", agent="a1", **GPT_4O))  # 3.5
    assert num(cost(api, "2025-03-01", "2025-03-31")["cost"]) == D("3.5")
    delete_agent("a1")
    ok(api.post("/v1/price-overrides", {"serviceId": str(gpt_4o().id), "inputCost": "0.000001",
                                        "effectiveFrom": "2025-03-01T00:00:00Z"}), 201)  # 2
    [second] = record(api, rec("2025-03-10T15:00:00Z", agent="a2", **GPT_4O))  # 2
    delete_agent("a2")
    assert num(cost(api, "2025-03-01", "2025-03-31")["cost"]) == D("4")
    ok(api.post("/v1/price-overrides", {"serviceId": str(gpt_4o().id), "inputCost": "0.0000005",
                                        "effectiveFrom": "2025-03-10T12:00:00Z"}), 201)  # the second: 1.5
    assert event_costs(api, [first, second]) == [D("2"), D("1.5")]
    march = cost(api, "2025-03-01", "2025-03-31")
    assert (num(march["cost"]), march["eventCount"]) == (D("3.5"), 2)
    assert by_key(march["byAgent"], "agentId") == {None: (D("3.5"), 2)}
