"""RevenueMetrics (`/v1/analytics/revenue`, `/v1/customers/{id}/revenue`, `/v1/subscriptions/{id}/revenue`)
and MRR (`/v1/analytics/mrr`), with every expected figure computed by hand from a small book."""
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from analytics.selectors.revenue import customer_revenue_total
from tests.analytics.support import D, get, models, money, rec, record  # noqa: F401 (fixtures)
from tests.billing.support import create_plan, create_strategies, ok
from tests.factories import AgentFactory, CustomerFactory, SignalFactory

MAY = {"startDate": "2025-05-01", "endDate": "2025-05-31"}
UTC = timezone.utc


@pytest.fixture
def sales(api, book, models, frozen_now):
    """NOW is 2025-06-10T12:00Z. Agent analyst, signal reports; every event costs 0.002 (alpha tokens).

    gamma, plan Pro, from 2025-05-11 (billing day 1, 3 seats): reports flat 2.00 (minimum 10 units),
    platform 31.00 a month, seats 6.20 each (minimum 5), setup 100.00 once.
      events: May 10 qty 1 (before the subscription: an orphan), May 12 qty 4, May 20 qty 3, June 5 qty 2.
    delta, plan Annual, from 2025-01-01 (billing day 1): 1200.00 a year, and a credit pool of 100 reports
      for 50.00, 0.75 beyond. events: May 15 qty 130.
    A developer's internal coding-agent event on May 15 (beta tokens: 0.02).
    """
    gamma = CustomerFactory(book=book, name="Gamma Inc", external_id="gamma")
    delta = CustomerFactory(book=book, name="Delta Co", external_id="delta")
    analyst = AgentFactory(book=book, name="Analyst", agent_code="analyst")
    reports = SignalFactory(book=book, agent=analyst, name="reports")
    agent_id, signal_id = str(analyst.id), str(reports.id)
    pro, annual = create_plan(api, agent_id, name="Pro"), create_plan(api, agent_id, name="Annual")
    per_report, platform, seats, setup = create_strategies(api, pro["id"], [
        {"name": "per report", "agentId": agent_id, "chargeType": "usage", "signalId": signal_id,
         "pricingModel": "flat", "rate": "2", "minimumCommitment": "10"},
        {"name": "platform", "agentId": agent_id, "chargeType": "recurring", "rate": "31"},
        {"name": "seats", "agentId": agent_id, "chargeType": "seat_based", "pricingModel": "flat", "rate": "6.2",
         "minimumCommitment": "5"},
        {"name": "setup", "agentId": agent_id, "chargeType": "onetime", "rate": "100"},
    ])
    yearly, pool = create_strategies(api, annual["id"], [
        {"name": "annual fee", "agentId": agent_id, "chargeType": "recurring", "rate": "1200",
         "billingFrequency": "yearly"},
        {"name": "report pool", "agentId": agent_id, "chargeType": "usage", "signalId": signal_id,
         "pricingModel": "credit_pool", "tiers": [{"lower": 0, "upper": 100, "rate": 50},
                                                  {"lower": 100, "upper": None, "rate": 0.75}]},
    ])

    def subscribe(plan, customer, **fields):
        return ok(api.post("/v1/subscriptions", {"name": plan["name"], "planId": plan["id"], "agentId": agent_id,
                                                 "customerId": str(customer.id), "billingDay": 1, **fields}), 201)
    gamma_sub = subscribe(pro, gamma, startDate="2025-05-11T00:00:00Z", seatsCount=3)
    delta_sub = subscribe(annual, delta, startDate="2025-01-01T00:00:00Z")
    record(api,
           rec("gamma", "analyst", "reports", "2025-05-10T12:00:00Z", quantity=1),
           rec("gamma", "analyst", "reports", "2025-05-12T10:00:00Z", quantity=4),
           rec("gamma", "analyst", "reports", "2025-05-20T10:00:00Z", quantity=3),
           rec("gamma", "analyst", "reports", "2025-06-05T10:00:00Z", quantity=2),
           rec("delta", "analyst", "reports", "2025-05-15T10:00:00Z", quantity=130),
           rec("dev@acme.test", "svc-coding-agent", "coding-session", "2025-05-15T11:00:00Z", model="beta-llm"))
    return SimpleNamespace(gamma=gamma, delta=delta, analyst=analyst, gamma_sub=gamma_sub, delta_sub=delta_sub,
                           pro=pro, annual=annual, per_report=per_report, platform=platform, seats=seats,
                           setup=setup, yearly=yearly, pool=pool)


def figures(body) -> dict:
    """The labels of a RevenueMetrics body (or one of its subscription rows) as exact decimals."""
    names = ("revenue", "cost", "margin", "agentEarned", "agentEarnedMargin")
    return {**{name: money(body[name]) for name in names},
            **{name: money(value) for name, value in body["breakdown"].items()},
            "eventCount": body["eventCount"]}


# --------------------------------------------------------------------------- RevenueMetrics

def test_subscription_revenue_adds_prorated_fees_to_agent_earned(api, sales):
    """May: Agent-Earned is 7 reports x 2.00 = 14.00 (the 10-unit minimum is not applied); Revenue adds the
    platform fee and the seats (5 x 6.20 = 31.00), each prorated to the 21 of May's 31 days the subscription
    covers (21.00 each), and the setup fee (100.00): 156.00. Cost: two events, 0.004."""
    body = get(api, f"/v1/subscriptions/{sales.gamma_sub['id']}/revenue", **MAY)
    assert figures(body) == {"revenue": D(156), "cost": D("0.004"), "margin": D("155.996"), "agentEarned": D(14),
                             "agentEarnedMargin": D("13.996"), "usage": D(14), "recurring": D(21), "seat": D(21),
                             "onetime": D(100), "eventCount": 2}
    assert money(body["marginPercent"]) == pytest.approx(D("155.996") * 100 / 156)
    assert money(body["agentEarnedMarginPercent"]) == pytest.approx(D("13.996") * 100 / 14)
    assert body["window"] == {"start": "2025-05-01T00:00:00Z", "end": "2025-06-01T00:00:00Z"}
    assert body["currency"] == "USD" and body["eventCountWithNullCost"] == 0


def test_book_revenue_sums_subscriptions_and_counts_orphan_cost(api, sales):
    """delta in May: the pool earns 50.00 + 30 x 0.75 = 72.50; the yearly fee is 100.00 a month (whole
    period). The orphan event of May 10 is cost without revenue; internal usage is left out entirely."""
    body = get(api, "/v1/analytics/revenue", **MAY)
    assert figures(body) == {"revenue": D("328.5"), "cost": D("0.008"), "margin": D("328.492"),
                             "agentEarned": D("86.5"), "agentEarnedMargin": D("86.492"), "usage": D("86.5"),
                             "recurring": D(121), "seat": D(21), "onetime": D(100), "eventCount": 4}
    rows = {row["subscriptionId"]: row for row in body["bySubscription"]}
    assert [row["subscriptionId"] for row in body["bySubscription"]] == [sales.delta_sub["id"], sales.gamma_sub["id"]]
    assert figures(rows[sales.delta_sub["id"]]) == {
        "revenue": D("172.5"), "cost": D("0.002"), "margin": D("172.498"), "agentEarned": D("72.5"),
        "agentEarnedMargin": D("72.498"), "usage": D("72.5"), "recurring": D(100), "seat": D(0), "onetime": D(0),
        "eventCount": 1}
    assert rows[sales.gamma_sub["id"]]["customerId"] == str(sales.gamma.id)
    assert rows[sales.gamma_sub["id"]]["planId"] == sales.pro["id"]
    assert rows[sales.gamma_sub["id"]]["subscriptionName"] == "Pro"


def test_per_strategy_breakdown(api, sales):
    body = get(api, "/v1/analytics/revenue", **MAY)
    by_strategy = {row["strategyId"]: (row["chargeType"], row["quantity"], money(row["agentEarned"]),
                                       money(row["revenue"])) for row in body["byStrategy"]}
    assert by_strategy == {
        sales.setup["id"]: ("onetime", None, D(0), D(100)),
        sales.yearly["id"]: ("recurring", None, D(0), D(100)),
        sales.pool["id"]: ("usage", 130, D("72.5"), D("72.5")),
        sales.platform["id"]: ("recurring", None, D(0), D(21)),
        sales.seats["id"]: ("seat_based", 5, D(0), D(21)),
        sales.per_report["id"]: ("usage", 7, D(14), D(14)),
    }
    assert [row["revenue"] for row in body["byStrategy"]] == [100, 100, 72.5, 21, 21, 14]  # most revenue first
    assert body["byStrategy"][-1]["strategyName"] == "per report"


def test_customer_revenue_includes_the_customers_orphan_events_in_cost(api, sales):
    body = get(api, f"/v1/customers/{sales.gamma.id}/revenue", **MAY)
    assert (money(body["revenue"]), money(body["cost"]), body["eventCount"]) == (D(156), D("0.006"), 3)
    assert [row["subscriptionId"] for row in body["bySubscription"]] == [sales.gamma_sub["id"]]


def test_fees_are_recognized_per_billing_period_across_a_period_turn(api, sales):
    """May 21 - June 10: 11 of May's 31 days and 10 of June's 30 days of a 31.00 fee; no setup fee (the
    subscription started before); usage: June 5 only (2 reports)."""
    body = get(api, f"/v1/subscriptions/{sales.gamma_sub['id']}/revenue", startDate="2025-05-21",
               endDate="2025-06-10")
    fee = D(31) * 11 / 31 + D(31) * 10 / 30
    assert money(body["breakdown"]["recurring"]) == pytest.approx(fee)
    assert money(body["breakdown"]["seat"]) == pytest.approx(fee)
    assert (money(body["agentEarned"]), body["breakdown"]["onetime"]) == (D(4), 0)


def test_customer_revenue_total_counts_fractions_of_days_at_instant_edges(book, sales):
    """[May 21 12:00, May 31 12:00) holds 10 of May's 31 days: 10.00 of each fee, no events."""
    total = customer_revenue_total(book=book, customer=sales.gamma, start=datetime(2025, 5, 21, 12, tzinfo=UTC),
                                   end=datetime(2025, 5, 31, 12, tzinfo=UTC))
    assert total == D(20)
    assert customer_revenue_total(book=book, customer=sales.gamma, start=datetime(2025, 5, 1, tzinfo=UTC),
                                  end=datetime(2025, 6, 1, tzinfo=UTC)) == D(156)


def test_internal_coding_agent_usage_never_changes_revenue_metrics(api, sales):
    before = get(api, "/v1/analytics/revenue", **MAY)
    record(api, rec("dev@acme.test", "svc-coding-agent", "coding-session", "2025-05-16T11:00:00Z", model="beta-llm"))
    assert get(api, "/v1/analytics/revenue", **MAY) == before
    developer = api.get("/v1/customers", {"externalId": "dev@acme.test"}).json()[0]
    body = get(api, f"/v1/customers/{developer['id']}/revenue", **MAY)
    assert (body["revenue"], body["cost"], body["eventCount"], body["bySubscription"]) == (0, 0, 0, [])


def test_revenue_default_window_is_the_last_30_days_utc(api, sales):
    """NOW is June 10: May 12 to June 10, both included."""
    body = get(api, "/v1/analytics/revenue")
    assert body["window"] == {"start": "2025-05-12T00:00:00Z", "end": "2025-06-11T00:00:00Z"}


def test_revenue_reads_are_404_for_unknown_or_foreign_ids(api, other_api, sales):
    get(other_api, f"/v1/customers/{sales.gamma.id}/revenue", status=404)
    get(other_api, f"/v1/subscriptions/{sales.gamma_sub['id']}/revenue", status=404)
    get(api, "/v1/customers/not-a-uuid/revenue", status=404)
    assert get(other_api, "/v1/analytics/revenue", **MAY)["revenue"] == 0


def test_bad_revenue_window_is_400_or_422(api):
    assert get(api, "/v1/analytics/revenue", status=400, startDate="May 1")["message"][0].startswith("startDate:")
    get(api, "/v1/analytics/revenue", status=422, startDate="2025-05-10", endDate="2025-05-01")


def test_a_volume_signal_earns_the_sum_of_its_quantities(api, book, sales):
    """Contract "Signal types bill alike": events of quantity 0, 0 and 2.5 on a volume (activity) signal earn
    2.5 x 1.00, as they would on an outcome signal: no floor of one per event."""
    searches = SignalFactory(book=book, agent=sales.analyst, name="searches", type="volume")
    plan = create_plan(api, str(sales.analyst.id), name="Search")
    create_strategies(api, plan["id"], [{"name": "per search", "agentId": str(sales.analyst.id),
                                         "chargeType": "usage", "signalId": str(searches.id),
                                         "pricingModel": "flat", "rate": "1"}])
    epsilon = CustomerFactory(book=book, name="Epsilon", external_id="epsilon")
    subscription = ok(api.post("/v1/subscriptions", {"name": "Search", "planId": plan["id"],
                                                     "agentId": str(sales.analyst.id),
                                                     "customerId": str(epsilon.id),
                                                     "startDate": "2025-05-01T00:00:00Z"}), 201)
    record(api, *(rec("epsilon", "analyst", "searches", f"2025-05-2{day}T10:00:00Z", quantity=quantity)
                  for day, quantity in ((0, 0), (1, 0), (2, "2.5"))))
    body = get(api, f"/v1/subscriptions/{subscription['id']}/revenue", **MAY)
    assert (money(body["agentEarned"]), body["byStrategy"][0]["quantity"]) == (D("2.5"), 2.5)
    mrr = get(api, "/v1/analytics/mrr", variant="runRate", subscriptionId=subscription["id"])
    assert money(mrr["breakdown"][0]["usage"]) == D("2.5")


# --------------------------------------------------------------------------- MRR

def mrr_rows(body) -> dict:
    return {row["subscriptionId"]: {key: money(value) if key not in ("subscriptionId", "customerId", "agentId",
                                                                      "planId") else value
                                    for key, value in row.items()} for row in body["breakdown"]}


def test_run_rate_mrr_counts_fees_a_month_and_the_last_30_days_of_usage(api, sales):
    """Last 30 days: [May 11 12:00, June 10 12:00). gamma: platform 31 + seats 5 x 6.20 + 9 reports x 2.00
    = 80.00; delta: 1200 / 12 + the pool on 130 reports (72.50) = 172.50."""
    body = get(api, "/v1/analytics/mrr", variant="runRate")
    assert (body["variant"], money(body["mrr"])) == ("runRate", D("252.5"))
    rows = mrr_rows(body)
    assert rows[sales.gamma_sub["id"]] == {
        "subscriptionId": sales.gamma_sub["id"], "customerId": str(sales.gamma.id), "agentId": str(sales.analyst.id),
        "planId": sales.pro["id"], "recurring": D(31), "seatBased": D(31), "usage": D(18), "total": D(80)}
    assert (rows[sales.delta_sub["id"]]["recurring"], rows[sales.delta_sub["id"]]["usage"]) == (D(100), D("72.5"))
    assert [row["subscriptionId"] for row in body["breakdown"]] == [sales.delta_sub["id"], sales.gamma_sub["id"]]


def test_committed_mrr_replaces_usage_by_the_minimum_commitment(api, sales):
    """gamma: minimum 10 reports x 2.00 = 20.00; delta's pool has no minimum, and its price (50.00) is billed every
    period, used or not: 50.00."""
    body = get(api, "/v1/analytics/mrr", variant="committed")
    rows = mrr_rows(body)
    assert (rows[sales.gamma_sub["id"]]["usage"], rows[sales.gamma_sub["id"]]["total"]) == (D(20), D(82))
    assert (rows[sales.delta_sub["id"]]["usage"], rows[sales.delta_sub["id"]]["total"]) == (D(50), D(150))
    assert money(body["mrr"]) == D(232)


def test_mrr_counts_the_subscriptions_running_now_before_the_scheduled_job_moves_their_status(api, sales, frozen_now):
    """delta's endDate is set to June 15 and epsilon starts (upcoming) on June 12; on June 20 no scheduled job has
    run, so delta is still stored `active` and epsilon `upcoming`. MRR counts what runs on June 20: gamma and
    epsilon (platform 31 + 5 seats x 6.20, no usage: committed 20 for gamma's minimum, 20 for epsilon's), not delta
    (it bills 1200 / 12 = 100 a month while it runs)."""
    ok(api.patch(f"/v1/subscriptions/{sales.delta_sub['id']}", {"endDate": "2025-06-15T00:00:00Z"}), 200)
    epsilon = CustomerFactory(book=sales.gamma.book, name="Epsilon", external_id="epsilon")
    epsilon_sub = ok(api.post("/v1/subscriptions", {"name": "Pro", "planId": sales.pro["id"],
                                                    "agentId": str(sales.analyst.id), "customerId": str(epsilon.id),
                                                    "billingDay": 1, "startDate": "2025-06-12T00:00:00Z"}), 201)
    assert epsilon_sub["status"] == "upcoming"
    frozen_now(datetime(2025, 6, 20, tzinfo=timezone.utc))
    stored = {row["id"]: row["status"] for row in ok(api.get("/v1/subscriptions"), 200)}
    assert (stored[sales.delta_sub["id"]], stored[epsilon_sub["id"]]) == ("active", "upcoming")

    body = get(api, "/v1/analytics/mrr", variant="committed")
    rows = mrr_rows(body)
    assert set(rows) == {sales.gamma_sub["id"], epsilon_sub["id"]}
    assert (rows[epsilon_sub["id"]]["total"], money(body["mrr"])) == (D(82), D(164))
    body = get(api, "/v1/analytics/mrr", variant="committed", subscriptionId=sales.delta_sub["id"])
    assert (body["breakdown"], money(body["mrr"])) == ([], D(0))


def test_mrr_filters_by_customer_or_subscription(api, sales):
    body = get(api, "/v1/analytics/mrr", variant="runRate", customerId=str(sales.gamma.id))
    assert list(mrr_rows(body)) == [sales.gamma_sub["id"]] and money(body["mrr"]) == D(80)
    body = get(api, "/v1/analytics/mrr", variant="committed", subscriptionId=sales.delta_sub["id"])
    assert list(mrr_rows(body)) == [sales.delta_sub["id"]] and money(body["mrr"]) == D(150)


def test_mrr_leaves_out_subscriptions_that_are_not_active(api, sales, frozen_now):
    ok(api.patch(f"/v1/subscriptions/{sales.delta_sub['id']}", {"status": "ended"}))
    assert list(mrr_rows(get(api, "/v1/analytics/mrr", variant="runRate"))) == [sales.gamma_sub["id"]]


def test_invalid_variant_is_400_listing_the_accepted_values(api):
    message = get(api, "/v1/analytics/mrr", status=400, variant="yearly")["message"][0]
    assert message.startswith("variant:") and all(v in message for v in ("canonical", "runRate", "committed", "all"))

def test_a_window_too_long_to_price_is_a_422_before_any_pricing(api, sales, book, models):
    """A one-day cycle from 1900 to 9000 has 2.6 million periods (a read of it held a worker for minutes): more
    than a read prices. The same subscription over a year, and the book's other reads, still answer."""
    agent_id, epsilon = str(sales.analyst.id), CustomerFactory(book=book, name="Epsilon", external_id="epsilon")
    daily = ok(api.post("/v1/subscriptions", {
        "name": "daily", "planId": sales.pro["id"], "agentId": agent_id, "customerId": str(epsilon.id),
        "startDate": "1900-01-01T00:00:00Z", "billingCycle": "custom", "customCycleDays": 1}), 201)
    long_window = {"startDate": "1900-01-01", "endDate": "9000-12-31"}
    for path in ("/v1/analytics/revenue", f"/v1/subscriptions/{daily['id']}/revenue",
                 f"/v1/customers/{epsilon.id}/revenue"):
        message = get(api, path, status=422, **long_window)["message"]
        assert message[0].startswith("endDate: From startDate to endDate the subscriptions reported have up to ")
        assert "more than the 200,000 one revenue read prices" in message[0]
    assert get(api, f"/v1/subscriptions/{daily['id']}/revenue", startDate="2024-01-01", endDate="2024-12-31")
    assert get(api, "/v1/analytics/revenue", **long_window | {"startDate": "2000-01-01"}, status=422)
    assert get(api, f"/v1/subscriptions/{sales.delta_sub['id']}/revenue", **long_window)["revenue"]


def test_billing_segments_pair_each_unit_with_exactly_the_claims_it_meets(monkeypatch):
    """`_billing_segments` walks the claims of each signal alongside the units instead of comparing every pair: the
    same segments as every pair compared, over random days of units and claims (open ones and unbilled signals
    included)."""
    import random
    import uuid
    from datetime import timedelta

    import analytics.selectors.revenue as revenue
    from billing.pricing.attribution import Claim

    generator = random.Random(7)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for _ in range(30):
        subscription, customer = uuid.uuid4(), uuid.uuid4()
        signals = [(uuid.uuid4(), uuid.uuid4()) for _ in range(3)]
        cuts = sorted(generator.sample(range(1, 200), 12))
        units = [revenue.PricingUnit(start + timedelta(days=lo), start + timedelta(days=hi),
                                     SimpleNamespace(billed_signals={signal for _, signal in generator.sample(signals, 2)}),
                                     start + timedelta(days=lo), start + timedelta(days=hi))
                 for lo, hi in zip([0, *cuts], cuts)]
        claims = []
        for agent, signal in signals:  # one signal's claims never overlap
            days = sorted(generator.sample(range(0, 220), 8))
            for lo, hi in zip(days[::2], days[1::2]):
                claims.append(Claim(subscription, customer, agent, signal, start + timedelta(days=lo),
                                    None if hi == days[-1] and generator.random() < 0.5 else start + timedelta(days=hi)))
        claims.sort(key=lambda claim: claim.start)
        monkeypatch.setattr(revenue, "_pricing_units", lambda timeline, window, units=units: units)
        expected = {((subscription, index, claim.signal_id, False), customer, claim.agent_id, *piece, claim.signal_id)
                    for index, unit in enumerate(units) for claim in claims
                    if claim.signal_id in unit.terms.billed_signals
                    and (piece := claim.clip(unit.start, unit.end)) is not None}
        _, segments, whole_segments = revenue._billing_segments(None, claims, None)
        assert len(segments) == len(expected) and set(segments) == expected
        assert whole_segments == []  # no unit is cut by the window


def test_months_that_cut_a_credit_pools_periods_add_up_to_the_periods(api, book, models, frozen_now):
    """A pool of 100 units for 300.00, 1.00 beyond, billing day 3. Each period earns what its invoice bills
    (`[Mar 3, Apr 3)`: 120 units, 300 + 20 = 320.00; `[Apr 3, May 3)`: 40 units, 300.00), and a window holding part
    of a period earns that share of it by quantity. Pricing each part on its own earned the pool's price once for
    every month that met the period: 300 + 600 + 300 over the three months against 620.00 billed."""
    customer = CustomerFactory(book=book, name="Stark", external_id="stark")
    agent = AgentFactory(book=book, name="Transcriber", agent_code="transcriber")
    minutes = SignalFactory(book=book, agent=agent, name="minutes")
    plan = create_plan(api, str(agent.id), name="Pool")
    create_strategies(api, plan["id"], [
        {"name": "minute pool", "agentId": str(agent.id), "chargeType": "usage", "signalId": str(minutes.id),
         "pricingModel": "credit_pool", "tiers": [{"lower": 0, "upper": 100, "rate": 300},
                                                  {"lower": 100, "upper": None, "rate": 1}]}])
    subscription = ok(api.post("/v1/subscriptions", {
        "name": "Pool", "planId": plan["id"], "agentId": str(agent.id), "customerId": str(customer.id),
        "startDate": "2025-03-03T00:00:00Z", "billingDay": 3}), 201)
    record(api, *(rec("stark", "transcriber", "minutes", when, quantity=quantity) for when, quantity in [
        ("2025-03-10T10:00:00Z", 60), ("2025-04-01T10:00:00Z", 60), ("2025-04-20T10:00:00Z", 30),
        ("2025-05-02T10:00:00Z", 10)]))
    path = f"/v1/subscriptions/{subscription['id']}/revenue"

    def earned(start, end):
        return money(get(api, path, startDate=start, endDate=end)["agentEarned"])

    march, april, may = (earned("2025-03-01", "2025-03-31"), earned("2025-04-01", "2025-04-30"),
                         earned("2025-05-01", "2025-05-31"))
    assert (march, april, may) == (D(160), D(160) + D(225), D(75))  # 320 x 60/120; + 300 x 30/40; 300 x 10/40
    assert march + april + may == earned("2025-03-01", "2025-05-31") == D(620)


@pytest.mark.parametrize("ending", ["paid", "refunded", "void"])
def test_a_refunded_invoice_is_treated_like_a_void_one_for_revenue_recognition(api, book, client, settings, ending):
    # Spec: "A refunded invoice ... is treated like void for revenue recognition". Its captured terms priced its
    # period's Agent-Earned as a paid invoice's do: 10 tickets at the captured 1.00 after the rate became 3.00.
    from tests.billing.invoice_support import WEBHOOK_SECRET, billing_chain, draft, event, pay, usage

    settings.STRIPE_WEBHOOK_SECRET, settings.STRIPE_SECRET_KEY = WEBHOOK_SECRET, ""
    chain = billing_chain(api, book, [usage("1.00")])
    event(chain, 10, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    if ending == "void":
        ok(api.post(f"/v1/invoices/{invoice['id']}/void", {}))
    else:
        assert pay(client, invoice).status_code == 200
        if ending == "refunded":
            payment = ok(api.get(f"/v1/invoices/{invoice['id']}"))["payments"][0]
            ok(api.post(f"/v1/invoices/{invoice['id']}/payments/{payment['id']}/refund", {}), 201)
    assert ok(api.get(f"/v1/invoices/{invoice['id']}"))["status"] == ending
    (strategy,) = chain.strategies
    ok(api.patch(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{strategy['id']}", {"rate": "3.00"}))
    january = get(api, "/v1/analytics/revenue", startDate="2025-01-01", endDate="2025-01-31")
    assert money(january["agentEarned"]) == (D(10) if ending == "paid" else D(30))
