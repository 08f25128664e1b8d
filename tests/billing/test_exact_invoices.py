"""Exact invoices over HTTP (contract Decisions: "One subscription bills an event", "Invoices keep what was
reviewed", "Signal types bill alike"; spec §3: pricing changes affect only periods not yet invoiced).
Every amount is computed by hand, or by the small independent model at the end of this file."""
import random
from datetime import datetime, timezone
from decimal import Decimal as D

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.billing.support import create_plan, create_strategies, ok
from tests.factories import AgentFactory, CustomerFactory, OrganizationFactory, SignalFactory, book_of

pytestmark = pytest.mark.django_db
UTC = timezone.utc
MONTHS = [("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z"), ("2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z"),
          ("2025-03-01T00:00:00Z", "2025-04-01T00:00:00Z")]
JAN, FEB = MONTHS[0], MONTHS[1]


class Book:
    """One customer and one agent with signals `tickets` and `calls`, built through the API."""

    def __init__(self, api, book):
        self.api, self.book = api, book
        self.customer = CustomerFactory(book=book, email="ap@client.example.com")
        self.agent = AgentFactory(book=book)
        self.signals = {name: SignalFactory(book=book, agent=self.agent, name=name) for name in ("tickets", "calls")}

    def plan(self, *strategies) -> tuple[dict, list[dict]]:
        """A plan with `strategies`: (signal name, rate) for flat usage, or full strategy bodies."""
        plan = create_plan(self.api, self.agent.id)
        items = []
        for index, strategy in enumerate(strategies):
            if isinstance(strategy, tuple):
                signal, rate = strategy
                strategy = {"chargeType": "usage", "pricingModel": "flat", "rate": rate,
                            "signalId": str(self.signals[signal].id)}
            items.append({"name": f"{plan['name']} {index}", "agentId": str(self.agent.id), **strategy})
        return plan, create_strategies(self.api, plan["id"], items)

    def subscribe(self, plan: dict, start="2025-01-01T00:00:00Z") -> dict:
        return ok(self.api.post("/v1/subscriptions", {
            "name": "sub", "planId": plan["id"], "agentId": str(self.agent.id), "customerId": str(self.customer.id),
            "startDate": start, "billingDay": 1, "status": "active"}), 201)

    def record(self, *events):
        """events: (signal name, quantity, ISO instant)."""
        records = [{"customerExternalId": self.customer.external_id, "agentCode": self.agent.agent_code,
                    "signalName": signal, "quantity": quantity, "usageDate": when,
                    "model": "in-house-model", "modelProvider": "in-house",  # unpriced: cost plays no part here
                    "idempotencyKey": f"{signal}-{when}-{index}-{random.random()}"}
                   for index, (signal, quantity, when) in enumerate(events)]
        for start in range(0, len(records), 100):
            body = ok(self.api.post("/v1/usage/record", {"records": records[start:start + 100]}))
            refused = [(f["index"], f.get("code"), f.get("message")) for f in body["results"]["failed"] if not f["stored"]]
            assert not refused, refused

    def generate(self, subscription: dict, period=JAN, status=(200, 201)) -> dict:
        resp = self.api.post("/v1/invoices/generate", {
            "customerId": str(self.customer.id), "subscriptionId": subscription["id"],
            "billingPeriodStart": period[0], "billingPeriodEnd": period[1]})
        assert resp.status_code in status, resp.content[:600]
        return resp.json()

    def invoice(self, invoice_id) -> dict:
        return ok(self.api.get(f"/v1/invoices/{invoice_id}"))

    def patch_strategy(self, plan: dict, strategy: dict, **fields):
        ok(self.api.patch(f"/v1/pricing-plans/{plan['id']}/pricing-strategies/{strategy['id']}", fields))

    def revenue(self, subscription: dict, start: str, end: str) -> dict:
        return ok(self.api.get(f"/v1/subscriptions/{subscription['id']}/revenue",
                               {"startDate": start, "endDate": end}))


@pytest.fixture
def acme(api, book):
    return Book(api, book)


def usage_amount(invoice: dict) -> D:
    return sum((D(str(line["amount"])) for line in invoice["lines"] if line["chargeType"] == "usage"), D(0))


def used(invoice: dict) -> D:
    return sum((D(str(line["usedQuantity"])) for line in invoice["lines"] if line["chargeType"] == "usage"), D(0))


# --------------------------------------------------------------------------- one subscription bills an event

def test_two_overlapping_subscriptions_bill_an_event_once_by_the_earlier_one(acme):
    cheap, _ = acme.plan(("tickets", "1"))
    dear, _ = acme.plan(("tickets", "2"))
    first = acme.subscribe(cheap, "2025-01-01T00:00:00Z")
    second = acme.subscribe(dear, "2025-01-05T00:00:00Z")
    acme.record(("tickets", 10, "2025-01-10T12:00:00Z"))
    assert acme.generate(first)["total"] == 10
    assert acme.generate(second)["total"] == 0  # 10 units, billed once: 10, not 10 + 20
    assert D(str(acme.revenue(first, "2025-01-01", "2025-01-31")["agentEarned"])) == 10
    assert D(str(acme.revenue(second, "2025-01-01", "2025-01-31")["agentEarned"])) == 0


def test_subscriptions_starting_together_give_the_event_to_the_lowest_id(acme):
    plan_a, _ = acme.plan(("tickets", "1"))
    plan_b, _ = acme.plan(("tickets", "2"))
    subscriptions = sorted([acme.subscribe(plan_a), acme.subscribe(plan_b)], key=lambda s: s["id"])
    acme.record(("tickets", 7, "2025-01-10T12:00:00Z"))
    totals = [used(acme.generate(subscription)) for subscription in subscriptions]
    assert totals == [7, 0]


def test_a_later_subscription_bills_the_signals_the_earlier_one_does_not(acme):
    tickets_only, _ = acme.plan(("tickets", "1"))
    calls_too, _ = acme.plan(("tickets", "5"), ("calls", "3"))
    earlier = acme.subscribe(tickets_only, "2025-01-01T00:00:00Z")
    later = acme.subscribe(calls_too, "2025-01-02T00:00:00Z")
    acme.record(("tickets", 2, "2025-01-10T12:00:00Z"), ("calls", 4, "2025-01-10T12:00:00Z"))
    assert acme.generate(earlier)["total"] == 2  # its tickets
    assert acme.generate(later)["total"] == 12  # the calls only (4 x 3): the tickets are the earlier one's


def test_a_deactivated_strategy_hands_its_signal_to_the_next_subscription_for_periods_not_invoiced(acme):
    cheap, (cheap_tickets,) = acme.plan(("tickets", "1"))
    dear, _ = acme.plan(("tickets", "2"))
    first, second = acme.subscribe(cheap), acme.subscribe(dear, "2025-01-02T00:00:00Z")
    acme.record(("tickets", 3, "2025-01-10T12:00:00Z"), ("tickets", 5, "2025-02-10T12:00:00Z"))
    january = acme.generate(first)
    ok(acme.api.post(f"/v1/invoices/{january['id']}/send", {}))
    acme.patch_strategy(cheap, cheap_tickets, active=False)
    # January stays the first subscription's (its invoice captured the strategy); February moves over.
    assert acme.generate(second)["total"] == 0
    assert acme.generate(first, FEB)["total"] == 0
    assert acme.generate(second, FEB)["total"] == 10


# --------------------------------------------------------------------------- invoices keep what was reviewed

def test_send_issues_exactly_what_the_draft_shows_after_a_rate_change(acme):
    plan, (strategy,) = acme.plan(("tickets", "1"))
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 10, "2025-01-10T12:00:00Z"))
    draft = acme.generate(subscription)
    assert draft["total"] == 10
    acme.patch_strategy(plan, strategy, rate="3")
    assert acme.invoice(draft["id"])["total"] == 10
    ok(acme.api.post(f"/v1/invoices/{draft['id']}/send", {}))
    sent = acme.invoice(draft["id"])
    assert (sent["status"], sent["total"]) == ("issued", 10)
    assert [line["amount"] for line in sent["lines"]] == [line["amount"] for line in draft["lines"]]


def test_a_strategy_deleted_after_generate_keeps_its_line_at_send(acme):
    plan, (tickets, fee) = acme.plan(("tickets", "1"), {"chargeType": "recurring", "rate": "20"})
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 4, "2025-01-10T12:00:00Z"))
    draft = acme.generate(subscription)
    assert draft["total"] == 24
    ok(acme.api.delete(f"/v1/pricing-plans/{plan['id']}/pricing-strategies/{fee['id']}"), 204)
    ok(acme.api.post(f"/v1/invoices/{draft['id']}/send", {}))
    assert acme.invoice(draft["id"])["total"] == 24


def test_generating_again_refreshes_the_usage_with_the_captured_terms(acme):
    plan, (strategy,) = acme.plan(("tickets", "1"))
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 10, "2025-01-10T12:00:00Z"))
    draft = acme.generate(subscription)
    acme.patch_strategy(plan, strategy, rate="3")
    acme.record(("tickets", 5, "2025-01-20T12:00:00Z"))
    again = acme.generate(subscription)
    assert (again["id"], again["invoiceNumber"]) == (draft["id"], draft["invoiceNumber"])
    assert again["total"] == 15  # 15 units at the captured 1.00, not 3.00
    # February has no invoice yet: it is priced with today's terms.
    acme.record(("tickets", 2, "2025-02-10T12:00:00Z"))
    assert acme.generate(subscription, FEB)["total"] == 6


def test_the_end_of_period_job_refreshes_the_draft_then_issues_it(acme):
    plan, (strategy,) = acme.plan(("tickets", "1"))
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 10, "2025-01-10T12:00:00Z"))
    draft = acme.generate(subscription)
    acme.patch_strategy(plan, strategy, rate="3")
    acme.record(("tickets", 1, "2025-01-31T23:00:00Z"))  # late usage of the period
    call_command("run_scheduled_jobs", now="2025-02-01T06:00:00Z")
    issued = acme.invoice(draft["id"])
    assert (issued["status"], issued["total"]) == ("issued", 11)


def test_revenue_of_an_invoiced_period_uses_its_invoices_terms_and_later_periods_todays(acme):
    plan, (strategy,) = acme.plan(("tickets", "1"))
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 10, "2025-01-10T12:00:00Z"), ("tickets", 10, "2025-02-10T12:00:00Z"))
    ok(acme.api.post(f"/v1/invoices/{acme.generate(subscription)['id']}/send", {}))
    acme.patch_strategy(plan, strategy, rate="3")
    assert D(str(acme.revenue(subscription, "2025-01-01", "2025-01-31")["agentEarned"])) == 10
    assert D(str(acme.revenue(subscription, "2025-02-01", "2025-02-28")["agentEarned"])) == 30
    assert D(str(acme.revenue(subscription, "2025-01-01", "2025-02-28")["agentEarned"])) == 40


def test_a_void_invoice_captures_nothing(acme):
    plan, (strategy,) = acme.plan(("tickets", "1"))
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 10, "2025-01-10T12:00:00Z"))
    draft = acme.generate(subscription)
    ok(acme.api.post(f"/v1/invoices/{draft['id']}/void", {}))
    acme.patch_strategy(plan, strategy, rate="2")
    assert acme.generate(subscription, status=(201,))["total"] == 20


# --------------------------------------------------------------------------- what a period bills

@pytest.mark.parametrize("signal_type", ["volume", "usage"])
def test_signal_types_bill_alike_in_revenue_and_invoices(acme, signal_type):
    acme.signals["tickets"].type = signal_type
    acme.signals["tickets"].save(update_fields=["type"])
    plan, _ = acme.plan(("tickets", "2"))
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 0, "2025-01-10T12:00:00Z"), ("tickets", 0.5, "2025-01-11T12:00:00Z"),
                ("tickets", 3, "2025-01-12T12:00:00Z"))
    assert acme.generate(subscription)["total"] == 7  # (0 + 0.5 + 3) x 2
    assert D(str(acme.revenue(subscription, "2025-01-01", "2025-01-31")["agentEarned"])) == 7


def test_agent_earned_prices_each_billing_period_on_its_own_total(acme):
    tiers = [{"lower": 0, "upper": 100, "rate": "1"}, {"lower": 100, "upper": None, "rate": "0.5"}]
    plan, _ = acme.plan({"chargeType": "usage", "pricingModel": "graduated", "tiers": tiers,
                         "signalId": str(acme.signals["tickets"].id)})
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 80, "2025-01-10T12:00:00Z"), ("tickets", 80, "2025-02-10T12:00:00Z"))
    assert acme.generate(subscription)["total"] == 80
    assert acme.generate(subscription, FEB)["total"] == 80
    # 80 + 80, each period through the tiers on its own: not 160 through them once (100 + 30).
    assert D(str(acme.revenue(subscription, "2025-01-01", "2025-02-28")["agentEarned"])) == 160


# --------------------------------------------------------------------------- properties

def _model_usage(subscriptions, plans, events) -> dict:
    """An independent model of the contract's rule: (subscription index, month index, signal) -> units."""
    billed = {}
    for signal, quantity, when in events:
        moment = datetime.fromisoformat(when.replace("Z", "+00:00"))
        eligible = [index for index, (plan_index, start, sub_id) in enumerate(subscriptions)
                    if start <= moment and signal in plans[plan_index]]
        if not eligible:
            continue
        winner = min(eligible, key=lambda index: (subscriptions[index][1], subscriptions[index][2]))
        month = next(i for i, (lo, hi) in enumerate(MONTHS) if lo <= when < hi)
        billed[(winner, month, signal)] = billed.get((winner, month, signal), D(0)) + D(str(quantity))
    return billed


def record_drawn(acme: Book, raw_events) -> list[tuple]:
    """Record the drawn (signal, quantity, day of 2025, hour) events; returns them as (signal, quantity, ISO)."""
    events = []
    for signal, quantity, day, hour in raw_events:
        when = datetime.fromordinal(datetime(2025, 1, 1).toordinal() + day).replace(hour=hour, tzinfo=UTC)
        events.append((signal, quantity, when.isoformat().replace("+00:00", "Z")))
    if events:
        acme.record(*events)
    return events


plans_strategy = st.lists(st.dictionaries(st.sampled_from(["tickets", "calls"]),
                                          st.sampled_from(["0.25", "1", "1.5", "2.75"]), min_size=1),
                          min_size=1, max_size=3)
events_strategy = st.lists(st.tuples(st.sampled_from(["tickets", "calls"]), st.integers(0, 40),
                                     st.integers(0, 89), st.integers(0, 23)), max_size=25)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(plans=plans_strategy, start_days=st.lists(st.integers(0, 50), min_size=3, max_size=3),
       raw_events=events_strategy)
def test_every_event_is_billed_once_and_revenue_over_invoiced_periods_equals_the_usage_lines(
        client_for, plans, start_days, raw_events):
    """One subscription per plan (a customer holds one subscription per plan and agent at a time), starting
    on random days, possibly the same day; random events of both signals over three months."""
    org = OrganizationFactory()
    acme = Book(client_for(organization=org), book_of(org, "test"))
    created_plans = [acme.plan(*((signal, rate) for signal, rate in plan.items()))[0] for plan in plans]
    subscriptions, model_subscriptions = [], []
    for plan_index, day in enumerate(start_days[:len(plans)]):
        start = datetime.fromordinal(datetime(2025, 1, 1).toordinal() + day).replace(tzinfo=UTC)
        subscription = acme.subscribe(created_plans[plan_index], start.isoformat().replace("+00:00", "Z"))
        subscriptions.append(subscription)
        model_subscriptions.append((plan_index, start, subscription["id"]))
    events = record_drawn(acme, raw_events)
    expected = _model_usage(model_subscriptions, plans, events)
    billed_total = D(0)
    for index, subscription in enumerate(subscriptions):
        start, usage_lines = model_subscriptions[index][1], D(0)
        for month, period in enumerate(MONTHS):
            if datetime.fromisoformat(period[1].replace("Z", "+00:00")) <= start:
                continue  # the subscription does not run in this month
            invoice = acme.generate(subscription, period)
            for line in invoice["lines"]:
                signal = next(name for name, signal in acme.signals.items() if str(signal.id) == line["signalId"])
                assert D(str(line["usedQuantity"])) == expected.get((index, month, signal), D(0)), (index, month)
                billed_total += D(str(line["usedQuantity"]))
            usage_lines += usage_amount(invoice)
        # Whole invoiced periods (rates of cents x whole units: the rounded lines are exact).
        earned = acme.revenue(subscription, "2025-01-01", "2025-03-31")["agentEarned"]
        assert D(str(earned)) == usage_lines
    assert billed_total == sum(expected.values(), D(0))


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(plans=plans_strategy, start_days=st.lists(st.integers(0, 50), min_size=3, max_size=3),
       issued=st.lists(st.sets(st.integers(0, 2)), min_size=3, max_size=3), raw_events=events_strategy)
def test_an_event_is_billed_once_whatever_order_subscriptions_are_created_and_periods_issued_in(
        client_for, plans, start_days, issued, raw_events):
    """The usage first; then the subscriptions are created one by one (a later one may start earlier: a backdated
    subscription), each issuing some of its months right after it is created. At the end every other month is
    generated: across all the invoices, final and draft, each event that some subscription bills is billed once,
    and no issued invoice changed."""
    org = OrganizationFactory()
    acme = Book(client_for(organization=org), book_of(org, "test"))
    events = record_drawn(acme, raw_events)
    subscriptions, finals = [], {}
    for index, plan in enumerate(plans):
        created, _ = acme.plan(*((signal, rate) for signal, rate in plan.items()))
        start = datetime.fromordinal(datetime(2025, 1, 1).toordinal() + start_days[index]).replace(tzinfo=UTC)
        subscription = acme.subscribe(created, start.isoformat().replace("+00:00", "Z"))
        subscriptions.append((subscription, start, set(plan)))
        runs = {month for month, (_, end) in enumerate(MONTHS)
                if datetime.fromisoformat(end.replace("Z", "+00:00")) > start}
        issued[index] &= runs
        for month in sorted(issued[index]):
            invoice = acme.generate(subscription, MONTHS[month])
            ok(acme.api.post(f"/v1/invoices/{invoice['id']}/send", {}))
            finals[invoice["id"]] = acme.invoice(invoice["id"])
    billed = sum((used(invoice) for invoice in finals.values()), D(0))
    for index, (subscription, start, _) in enumerate(subscriptions):
        for month, (_, end) in enumerate(MONTHS):
            if month not in issued[index] and datetime.fromisoformat(end.replace("Z", "+00:00")) > start:
                billed += used(acme.generate(subscription, MONTHS[month]))
    billable = sum((D(quantity) for signal, quantity, when in events
                    if any(start <= datetime.fromisoformat(when.replace("Z", "+00:00")) and signal in signals
                           for _, start, signals in subscriptions)), D(0))
    assert billed == billable, (plans, start_days, issued, events)
    for invoice_id, invoice in finals.items():
        assert acme.invoice(invoice_id)["lines"] == invoice["lines"]


PRICING_CHANGES = ("rate", "deactivate", "delete", "add", "seats", "tiers")


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(changes=st.lists(st.sampled_from(PRICING_CHANGES), min_size=1, max_size=4),
       quantities=st.lists(st.integers(0, 300), min_size=1, max_size=5), late=st.integers(0, 50))
def test_the_sent_invoice_is_the_reviewed_draft_whatever_changes_in_between(client_for, changes, quantities, late):
    org = OrganizationFactory()
    acme = Book(client_for(organization=org), book_of(org, "test"))
    tiers = [{"lower": 0, "upper": 100, "rate": "0.4"}, {"lower": 100, "upper": None, "rate": "0.15"}]
    plan, strategies = acme.plan(("tickets", "1.25"),
                                 {"chargeType": "usage", "pricingModel": "graduated", "tiers": tiers,
                                  "signalId": str(acme.signals["calls"].id)},
                                 {"chargeType": "recurring", "rate": "19.99"},
                                 {"chargeType": "seat_based", "pricingModel": "flat", "rate": "4.5"})
    subscription = acme.subscribe(plan)
    ok(acme.api.patch(f"/v1/subscriptions/{subscription['id']}", {"seatsCount": 3}))
    acme.record(*((("tickets", "calls")[i % 2], q, f"2025-01-{10 + i:02d}T12:00:00Z")
                  for i, q in enumerate(quantities)))
    draft = acme.generate(subscription)
    for change in changes:
        if change == "rate":
            acme.patch_strategy(plan, strategies[0], rate="7")
        elif change == "deactivate":
            acme.patch_strategy(plan, strategies[1], active=False)
        elif change == "delete":
            acme.api.delete(f"/v1/pricing-plans/{plan['id']}/pricing-strategies/{strategies[2]['id']}")
        elif change == "add":
            create_strategies(acme.api, plan["id"], [{"name": "new fee", "agentId": str(acme.agent.id),
                                                      "chargeType": "recurring", "rate": "100"}])
        elif change == "seats":
            ok(acme.api.patch(f"/v1/subscriptions/{subscription['id']}", {"seatsCount": 9}))
        else:
            acme.patch_strategy(plan, strategies[1], tiers=[{"lower": 0, "upper": None, "rate": "9"}])
    if late:
        acme.record(("tickets", late, "2025-01-30T12:00:00Z"))  # arrives after the review: not on the sent bill
    ok(acme.api.post(f"/v1/invoices/{draft['id']}/send", {}))
    sent = acme.invoice(draft["id"])
    keys = ("chargeType", "quantity", "usedQuantity", "amount", "description")
    assert [[line[k] for k in keys] for line in sent["lines"]] == [[line[k] for k in keys] for line in draft["lines"]]
    assert (sent["subtotal"], sent["total"]) == (draft["subtotal"], draft["total"])


def test_a_period_beyond_what_an_invoice_holds_is_a_422_and_stores_nothing(acme):
    """Rates are unbounded and usage is bounded per event only: a bill past the columns is refused, naming
    the line, with no invoice (and no invoice number) taken."""
    plan, _ = acme.plan(("tickets", "5000000"))
    subscription = acme.subscribe(plan)
    acme.record(("tickets", 1000000, "2025-01-10T12:00:00Z"))  # 10^6 units x 5,000,000 = 5 x 10^12 USD
    resp = acme.api.post("/v1/invoices/generate", {
        "customerId": str(acme.customer.id), "subscriptionId": subscription["id"],
        "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]})
    assert resp.status_code == 422, resp.content[:300]
    assert "lines[0]" in " ".join(resp.json()["message"])
    assert ok(acme.api.get("/v1/invoices"))["data"] == []
