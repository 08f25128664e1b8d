"""GET /v1/analytics/cost: totals, every breakdown, the prior window, filters, and event-to-plan attribution."""
from types import SimpleNamespace

import pytest

from tests.analytics.support import D, get, ledger, models, money, rec, record  # noqa: F401 (fixtures)
from tests.billing.support import create_plan, ok

COST = "/v1/analytics/cost"
APRIL = {"startDate": "2025-04-01", "endDate": "2025-04-30"}


@pytest.fixture
def plans(api, ledger):
    """Two subscriptions of acme on the writer agent, overlapping from 08:00 to 08:30 on April 7:
    early (plan Early) runs [April 1, April 7 08:30), main (plan Main) from April 7 08:00 on. The one that
    started first takes the overlap, so e1 (April 6) is Early's and e2 (April 7 09:00) Main's; beta's
    events and e6 (March 31) are orphans."""
    early_plan, main_plan = create_plan(api, ledger.writer.id, name="Early"), create_plan(api, ledger.writer.id,
                                                                                          name="Main")

    def subscribe(plan, **dates):
        return ok(api.post("/v1/subscriptions", {"name": plan["name"], "planId": plan["id"],
                                                 "agentId": str(ledger.writer.id),
                                                 "customerId": str(ledger.acme.id), **dates}), 201)
    early = subscribe(early_plan, startDate="2025-04-01T00:00:00Z", endDate="2025-04-07T08:30:00Z")
    main = subscribe(main_plan, startDate="2025-04-07T08:00:00Z")
    return SimpleNamespace(early=early, main=main, early_plan=early_plan["id"], main_plan=main_plan["id"])


def rows(body, field, key) -> dict:
    return {row[key]: (money(row["cost"]), row["eventCount"]) for row in body[field]}


def test_cost_totals_and_every_breakdown(api, ledger, plans):
    body = get(api, COST, **APRIL)
    assert (body["cost"], body["eventCount"], body["eventCountWithNullCost"]) == (0.046, 4, 0)
    assert body["window"] == {"start": "2025-04-01T00:00:00Z", "end": "2025-05-01T00:00:00Z"}
    assert rows(body, "byAgent", "agentId") == {str(ledger.writer.id): (D("0.024"), 3),
                                                str(ledger.research.id): (D("0.022"), 1)}
    assert rows(body, "byCustomer", "customerId") == {str(ledger.beta.id): (D("0.042"), 2),
                                                      str(ledger.acme.id): (D("0.004"), 2)}
    assert rows(body, "bySignal", "signalId") == {str(ledger.search.id): (D("0.022"), 1),
                                                  str(ledger.reports.id): (D("0.02"), 1),
                                                  str(ledger.pages.id): (D("0.004"), 2)}
    assert body["byDay"] == [{"date": "2025-04-06T00:00:00Z", "cost": 0.002, "eventCount": 1},
                             {"date": "2025-04-07T00:00:00Z", "cost": 0.022, "eventCount": 2},
                             {"date": "2025-04-30T00:00:00Z", "cost": 0.022, "eventCount": 1}]
    assert [row["agentId"] for row in body["byAgent"]] == [str(ledger.writer.id), str(ledger.research.id)]


def test_by_model_splits_multi_service_cost_and_puts_non_llm_under_null(api, ledger):
    """e4 is alpha (0.002) plus 4 search requests (0.02): the LLM part goes to alpha-llm, the API part to
    null; the event counts once under each."""
    body = get(api, COST, **APRIL)
    assert rows(body, "byModel", "model") == {"alpha-llm": (D("0.006"), 3), "beta-llm": (D("0.02"), 1),
                                              None: (D("0.02"), 1)}


def test_unpriced_events_count_and_add_nothing_under_the_null_model(api, ledger):
    body = get(api, COST, startDate="2025-05-01", endDate="2025-05-31")
    assert (body["cost"], body["eventCount"], body["eventCountWithNullCost"]) == (0, 1, 1)
    assert body["byModel"] == [{"model": None, "cost": 0, "eventCount": 1}]


def test_by_plan_follows_subscription_lives_to_the_instant(api, ledger, plans):
    body = get(api, COST, **APRIL)
    assert rows(body, "byPlan", "planId") == {plans.early_plan: (D("0.002"), 1), plans.main_plan: (D("0.002"), 1),
                                              None: (D("0.042"), 2)}


def test_by_plan_is_null_for_events_no_subscription_covers(api, ledger):
    assert rows(get(api, COST, **APRIL), "byPlan", "planId") == {None: (D("0.046"), 4)}


def test_subscription_filter_keeps_only_its_events(api, ledger, plans):
    body = get(api, COST, subscriptionId=plans.main["id"], startDate="2025-04-01", endDate="2025-05-31")
    assert (body["cost"], body["eventCount"], body["eventCountWithNullCost"]) == (0.002, 2, 1)  # e2 and e5
    assert rows(body, "byPlan", "planId") == {plans.main_plan: (D("0.002"), 2)}
    assert rows(body, "byCustomer", "customerId") == {str(ledger.acme.id): (D("0.002"), 2)}


@pytest.mark.parametrize("name, expected", [
    ("customerId", (D("0.004"), 2)), ("agentId", (D("0.024"), 3)), ("signalId", (D("0.02"), 1)),
])
def test_customer_agent_and_signal_filters(api, ledger, name, expected):
    target = {"customerId": ledger.acme, "agentId": ledger.writer, "signalId": ledger.reports}[name]
    body = get(api, COST, **{name: str(target.id)}, **APRIL)
    assert (money(body["cost"]), body["eventCount"]) == expected


def test_prior_window_is_the_equally_long_window_before(api, ledger, plans):
    """April has 30 days: the prior window is [March 2, April 1), holding e6 only."""
    body = get(api, COST, includePriorWindow="true", **APRIL)
    prior = body["prior"]
    assert prior["window"] == {"start": "2025-03-02T00:00:00Z", "end": "2025-04-01T00:00:00Z"}
    assert (prior["cost"], prior["eventCount"], prior["eventCountWithNullCost"]) == (0.002, 1, 0)
    assert prior["byDay"] == [{"date": "2025-03-31T00:00:00Z", "cost": 0.002, "eventCount": 1}]
    assert prior["byPlan"] == [{"planId": None, "cost": 0.002, "eventCount": 1}]
    assert "prior" not in prior and body["cost"] == 0.046
    assert "prior" not in get(api, COST, includePriorWindow="false", **APRIL)


def test_a_prior_window_before_the_earliest_date_is_a_422_naming_it(api, ledger):
    """1900-01-01 is the earliest date a query names: 1950-2000 has its prior window (1900-1950), a window from
    1900 to 9000 has none."""
    assert get(api, COST, includePriorWindow="true", startDate="1950-01-01", endDate="1999-12-31")["prior"]
    message = get(api, COST, status=422, includePriorWindow="true", startDate="1900-01-02",
                  endDate="9000-12-31")["message"]
    assert message[0].startswith("includePriorWindow: The window before this one would start before 1900-01-01")
    assert get(api, COST, startDate="1900-01-02", endDate="9000-12-31")["eventCount"] == 6  # e0-e5: the window alone reads


def test_orphan_events_of_a_deleted_signal_have_a_null_signal(api, ledger):
    assert api.delete(f"/v1/signals/{ledger.search.id}").status_code == 204
    assert rows(get(api, COST, **APRIL), "bySignal", "signalId")[None] == (D("0.022"), 1)


def test_internal_coding_agent_usage_counts_as_cost(api, ledger):
    record(api, rec("dev@acme.test", "svc-coding-agent", "coding-session", "2025-04-15T10:00:00Z", model="beta-llm"))
    body = get(api, COST, **APRIL)
    assert (money(body["cost"]), body["eventCount"]) == (D("0.066"), 5)


@pytest.mark.parametrize("params", [{}, {"startDate": "2025-04-01"}, {"endDate": "2025-04-30"}])
def test_start_and_end_dates_are_required(api, params):
    message = get(api, COST, status=400, **params)["message"]
    assert any(line.startswith(("startDate:", "endDate:")) for line in message)


@pytest.mark.parametrize("params, field", [
    ({"subscriptionId": "nope"}, "subscriptionId"), ({"includePriorWindow": "maybe"}, "includePriorWindow"),
    ({"startDate": "2025-02-30"}, "startDate"),
])
def test_bad_parameters_are_400(api, params, field):
    assert get(api, COST, status=400, **{**APRIL, **params})["message"][0].startswith(f"{field}:")


def test_unknown_filter_ids_are_404(api, ledger):
    get(api, COST, status=404, subscriptionId="6f1c3a52-1b7e-4a55-9d1e-1b2c3d4e5f60", **APRIL)
    get(api, COST, status=404, customerId="6f1c3a52-1b7e-4a55-9d1e-1b2c3d4e5f60", **APRIL)


def test_a_window_of_partial_and_whole_months_counts_every_event_once(api, ledger):
    """March 15 - May 10: part of March and of May from day rows, all of April from month rows."""
    body = get(api, COST, startDate="2025-03-15", endDate="2025-05-10")
    assert (money(body["cost"]), body["eventCount"], body["eventCountWithNullCost"]) == (D("0.048"), 6, 1)
    assert rows(body, "byCustomer", "customerId") == {str(ledger.beta.id): (D("0.042"), 2),
                                                      str(ledger.acme.id): (D("0.006"), 4)}
    assert sum(row["eventCount"] for row in body["byDay"]) == 6


def test_a_read_counts_the_events_its_catch_up_missed_in_the_rollups_days_as_in_its_partial_ones(api, ledger, plans,
                                                                                                monkeypatch):
    """A read catches the rollup up, then takes its snapshot: a batch committed in between is in the snapshot's
    events (its partial days read them) and still in the backlog, not the rollup (its whole days read that). Such
    a batch counted on April 1 afternoon and not on the 6th. The read adds its snapshot's backlog to the rollup's
    days: here no catch-up at all runs, and every breakdown equals the caught-up answer."""
    from customers import usage_sums
    from customers.models import RollupBacklog

    record(api, rec("acme", "writer", "pages", "2025-04-01T15:00:00Z"))
    window = {"startDate": "2025-04-01T12:00:00Z", "endDate": "2025-04-30"}
    monkeypatch.setattr(usage_sums, "analytics_rollup_catch_up", lambda **kwargs: 0)
    missed = get(api, COST, **window)
    assert RollupBacklog.objects.count() == 7  # every event waits
    monkeypatch.undo()
    caught_up = get(api, COST, **window)
    assert not RollupBacklog.objects.exists()
    assert missed == caught_up
    assert (missed["eventCount"], money(missed["cost"])) == (5, D("0.048"))
    assert {row["planId"]: row["eventCount"] for row in missed["byPlan"]} == {plans.early_plan: 2,
                                                                            plans.main_plan: 1, None: 2}


def test_an_end_written_as_the_last_second_of_a_day_means_the_following_midnight_as_on_an_invoice(api, ledger):
    """`...T23:59:59Z` closes a window as a billingPeriodEnd does (contract.md, Periods): an event in that last
    second counts, so the same window text reads the same events here as on an invoice."""
    record(api, rec("acme", "writer", "pages", "2025-04-30T23:59:59.500Z", idempotencyKey="last-second"))
    whole = get(api, COST, **APRIL)
    written = get(api, COST, startDate="2025-04-01T00:00:00Z", endDate="2025-04-30T23:59:59Z")
    assert written["window"] == whole["window"] == {"start": "2025-04-01T00:00:00Z", "end": "2025-05-01T00:00:00Z"}
    assert (written["cost"], written["eventCount"]) == (whole["cost"], whole["eventCount"]) == (0.048, 5)
    usage = get(api, "/v1/analytics/usage", startDate="2025-04-01T00:00:00Z", endDate="2025-04-30T23:59:59Z")
    assert usage["summary"]["totalEvents"] == 5
    listed = ok(api.get("/v1/events", {"startDate": "2025-04-30T00:00:00Z", "endDate": "2025-04-30T23:59:59Z",
                                      "limit": 100}))
    assert "last-second" in {row["idempotencyKey"] for row in listed}
    # Read in the offset written, as an invoice reads it: the last second of April 30 in UTC-7 is 06:59:59Z.
    record(api, rec("acme", "writer", "pages", "2025-05-01T06:59:59.500Z", idempotencyKey="offset-last-second"))
    window = {"startDate": "2025-04-30T00:00:00-07:00", "endDate": "2025-04-30T23:59:59-07:00"}
    listed = ok(api.get("/v1/events", {**window, "limit": 100}))
    assert "offset-last-second" in {row["idempotencyKey"] for row in listed}
    assert get(api, COST, **window)["window"]["end"] == "2025-05-01T07:00:00Z"
