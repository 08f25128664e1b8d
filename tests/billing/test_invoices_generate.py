"""POST /v1/invoices/generate over HTTP: totals computed by hand (spec sections 2-4; contract Decisions:
Periods, Tiers, Rounding, Proration, Internal coding-agent usage; docs/decisions/invoices.md)."""
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from billing.models import Invoice
from billing.services.invoices import final_invoices_keep_claims
from customers.models import Customer
from tests.billing.invoice_support import (FEB, JAN, amounts, billing_chain, credit_pool, draft, event,
                                           generate, onetime, recurring, seats, tiered, usage)
from tests.billing.support import create_plan, create_strategies, error, ok
from tests.factories import AgentFactory, CustomerFactory, SignalFactory, book_of

pytestmark = pytest.mark.django_db

NO_SUCH_ID = "00000000-0000-4000-8000-000000000000"


# --------------------------------------------------------------------------- pricing models on the period total

def test_flat_usage_bills_the_periods_total_quantity_times_the_rate(api, book):
    chain = billing_chain(api, book, [usage("0.25")])
    event(chain, 10, "2025-01-10T12:00:00Z")
    event(chain, 30, "2025-01-11T12:00:00Z")
    invoice = draft(api, chain)
    assert invoice["totalAmount"] == 10 and invoice["total"] == 10
    line = invoice["lines"][0]
    assert (line["chargeType"], line["quantity"], line["usedQuantity"], line["amount"]) == ("usage", 40, 40, 10)
    assert line["signalId"] == str(chain.signal.id) and line["strategyId"] == chain.strategies[0]["id"]


@pytest.mark.parametrize("model, quantities, expected", [
    ("graduated", [50, 60, 40], 12.5),  # 100 x 0.10 + 50 x 0.05, on the total (not per event)
    ("volume", [50, 60, 40], 7.5),  # 150 falls in tier 2: every unit at 0.05
    ("volume", [60, 40], 10),  # exactly at the tier edge (100): still tier 1
    ("graduated", [], 0),
    ("graduated", ["100.5"], 10.03),  # fractional: 10 + 0.5 x 0.05 = 10.025 -> 10.03 (half-up)
])
def test_tiered_models_price_the_periods_total(api, book, model, quantities, expected):
    chain = billing_chain(api, book, [tiered(model)])
    for day, quantity in enumerate(quantities, start=10):
        event(chain, quantity, f"2025-01-{day}T12:00:00Z")
    assert draft(api, chain)["total"] == expected


@pytest.mark.parametrize("quantities, expected", [([70, 60], 72.5), ([], 50), ([100], 50)])
def test_credit_pool_bills_the_pool_price_every_period_plus_overage(api, book, quantities, expected):
    chain = billing_chain(api, book, [credit_pool(100, 50, "0.75")])
    for day, quantity in enumerate(quantities, start=10):
        event(chain, quantity, f"2025-01-{day}T12:00:00Z")
    assert draft(api, chain)["total"] == expected


def test_minimum_commitment_raises_the_billed_quantity(api, book):
    chain = billing_chain(api, book, [usage("0.25", minimumCommitment=100)])
    event(chain, 40, "2025-01-10T12:00:00Z")
    line = draft(api, chain)["lines"][0]
    assert (line["quantity"], line["usedQuantity"], line["amount"]) == (100, 40, 25)


@pytest.mark.parametrize("signal_type", ["volume", "usage"])
def test_volume_and_usage_signals_both_bill_the_sum_of_their_quantities(api, book, signal_type):
    """Contract "Signal types bill alike": no floor, no rounding (0 bills 0, 0.5 bills 0.5)."""
    chain = billing_chain(api, book, [usage("2")], signal_type=signal_type)
    for day, quantity in ((10, 0), (11, "0.5"), (12, 3)):
        event(chain, quantity, f"2025-01-{day}T12:00:00Z")
    line = draft(api, chain)["lines"][0]
    assert (line["usedQuantity"], line["amount"]) == (3.5, 7)  # (0 + 0.5 + 3) x 2


def test_usage_of_other_customers_agents_and_signals_is_not_billed(api, book):
    chain = billing_chain(api, book, [usage("1")])
    neighbour = billing_chain(api, book, [usage("1")])
    event(chain, 2, "2025-01-10T12:00:00Z")
    event(neighbour, 50, "2025-01-10T12:00:00Z")
    assert draft(api, chain)["total"] == 2


# --------------------------------------------------------------------------- fees

def test_recurring_fee_is_billed_whole_each_cycle(api, book):
    chain = billing_chain(api, book, [recurring("49")])
    assert draft(api, chain, JAN)["total"] == 49
    assert draft(api, chain, FEB)["total"] == 49


def test_seat_fee_bills_max_of_seats_and_minimum_commitment(api, book):
    chain = billing_chain(api, book, [seats("10", minimum=5)], seatsCount=3)
    line = draft(api, chain)["lines"][0]
    assert (line["chargeType"], line["quantity"], line["amount"]) == ("seat_based", 5, 50)


def test_one_time_fee_lands_only_on_the_first_period(api, book):
    chain = billing_chain(api, book, [recurring("49"), onetime("100")])
    assert amounts(draft(api, chain, JAN)) == [("recurring", 49), ("onetime", 100)]
    assert amounts(draft(api, chain, FEB)) == [("recurring", 49)]


def test_yearly_fee_on_a_monthly_cycle_bills_a_twelfth(api, book):
    chain = billing_chain(api, book, [recurring("1200", frequency="yearly")])
    assert draft(api, chain)["total"] == 100


def test_partial_first_period_prorates_fees_by_days_not_usage(api, book):
    """Start January 22, billing day 1: 10 of January's 31 days. 62 x 10/31 = 20.00; yearly 1200 -> 100 x 10/31 =
    32.258 -> 32.26; usage is never prorated."""
    chain = billing_chain(api, book, [recurring("62"), recurring("1200", frequency="yearly"), usage("1")],
                          start="2025-01-22T00:00:00Z", billingDay=1)
    event(chain, 7, "2025-01-25T12:00:00Z")
    invoice = draft(api, chain, ("2025-01-22T00:00:00Z", "2025-02-01T00:00:00Z"))
    assert amounts(invoice) == [("recurring", 20), ("recurring", 32.26), ("usage", 7)]
    assert (invoice["lines"][0]["proratedDays"], invoice["lines"][0]["periodDays"]) == (10, 31)
    assert invoice["total"] == 59.26


def test_the_whole_calendar_month_gives_the_same_proration_as_the_cut_first_period(api, book):
    chain = billing_chain(api, book, [recurring("62")], start="2025-01-22T00:00:00Z", billingDay=1)
    assert draft(api, chain, JAN)["total"] == 20


def test_prorated_amount_replaces_the_prorated_fees_of_the_first_period(api, book):
    chain = billing_chain(api, book, [recurring("49"), seats("10", minimum=5), usage("1")],
                          start="2025-01-22T00:00:00Z", billingDay=1, seatsCount=3, proratedAmount="30")
    event(chain, 4, "2025-01-25T12:00:00Z")
    assert amounts(draft(api, chain, JAN)) == [("prorated", 30), ("usage", 4)]
    assert amounts(draft(api, chain, FEB)) == [("recurring", 49), ("seat_based", 50), ("usage", 0)]


def test_a_refreshed_draft_names_the_agent_of_its_terms_on_every_line_after_a_patch_of_agent_id(api, book):
    chain = billing_chain(api, book, [recurring("49"), usage("1")], start="2025-01-22T00:00:00Z", billingDay=1,
                          proratedAmount="30")
    event(chain, 4, "2025-01-25T12:00:00Z")
    assert amounts(draft(api, chain, JAN)) == [("prorated", 30), ("usage", 4)]
    other = AgentFactory(book=book)
    ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents", {"agentId": str(other.id)}), 201)
    ok(api.patch(f"/v1/subscriptions/{chain.subscription['id']}", {"agentId": str(other.id)}))
    refreshed = ok(generate(api, chain), 200)
    assert [line["agentId"] for line in refreshed["lines"]] == [str(chain.agent.id)] * 2
    assert [(entry["agentId"], entry["amount"]) for entry in refreshed["agentBreakdown"]] == [(str(chain.agent.id), 34)]


def test_default_period_in_a_non_utc_time_zone_runs_local_midnight_to_local_midnight(api, book, frozen_now):
    """Paris, start January 22 (a bare date is local midnight), billing day 1, now January 25: the current period is
    [Jan 22 00:00 Paris, Feb 1 00:00 Paris) and 62 is prorated 10/31; usage at Feb 1 00:30 Paris is February's."""
    frozen_now(datetime(2025, 1, 25, 12, tzinfo=timezone.utc))
    chain = billing_chain(api, book, [recurring("62"), usage("1")], start="2025-01-22", billingDay=1,
                          timezone="Europe/Paris")
    event(chain, 2, "2025-01-31T22:30:00Z")  # 23:30 in Paris: January
    event(chain, 5, "2025-01-31T23:30:00Z")  # 00:30 on February 1 in Paris
    invoice = draft(api, chain, period=None)
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-01-21T23:00:00Z", "2025-01-31T23:00:00Z")
    assert amounts(invoice) == [("recurring", 20), ("usage", 2)]


def test_a_period_ending_on_a_day_whose_midnight_a_dst_change_skips_counts_its_days_in_the_zone(api, book,
                                                                                              frozen_now):
    """Santiago's clocks skip September 7, 2025 00:00 (the day starts at 01:00, -03). Billing day 7, start August 17:
    the cycle August 7 to September 7 has 31 days, the subscription covers 21 of them: 31.00 x 21/31 = 21.00 (the
    end at 01:00 local was read as inside September 7: 22 of 32 days, 21.31). Ended at that day's start (a bare
    endDate), September's period bills its 6 days of 30: 30.00 x 6/30 = 6.00."""
    frozen_now(datetime(2025, 8, 20, 12, tzinfo=timezone.utc))
    chain = billing_chain(api, book, [recurring("31")], start="2025-08-17", billingDay=7, timezone="America/Santiago")
    invoice = draft(api, chain, period=None)
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-08-17T04:00:00Z", "2025-09-07T04:00:00Z")
    assert amounts(invoice) == [("recurring", 21)]
    assert (invoice["lines"][0]["proratedDays"], invoice["lines"][0]["periodDays"]) == (21, 31)
    ended = billing_chain(api, book, [recurring("30")], customer=CustomerFactory(book=book), start="2025-08-01",
                          billingDay=1, timezone="America/Santiago", endDate="2025-09-07")
    september = draft(api, ended, ("2025-09-01T04:00:00Z", "2025-10-01T03:00:00Z"))
    assert amounts(september) == [("recurring", 6)]


# --------------------------------------------------------------------------- periods

def test_period_is_half_open_and_a_last_second_end_means_the_next_midnight(api, book):
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 3, "2025-01-31T23:59:59.500Z")
    event(chain, 5, "2025-02-01T00:00:00Z")
    january = draft(api, chain, JAN)
    assert (january["periodStart"], january["periodEnd"]) == ("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z")
    assert january["total"] == 3
    assert draft(api, chain, FEB)["total"] == 5


def test_the_period_defaults_to_the_subscriptions_current_period(api, book, frozen_now):
    chain = billing_chain(api, book, [recurring("10")], start="2025-01-15T00:00:00Z")
    invoice = draft(api, chain, period=None)
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-05-15T00:00:00Z", "2025-06-15T00:00:00Z")


def test_the_default_period_is_the_one_in_force_now_when_the_stored_one_has_ended(api, book, frozen_now):
    """Spec §4 "default to current period": the stored period rolls forward only when the scheduled job runs (every
    few minutes; never where no scheduler runs). Past its end, the default is the period in force now, not the one
    already past (generating it would bill that period's fees again as current)."""
    chain = billing_chain(api, book, [recurring("10")], start="2025-01-15T00:00:00Z")
    frozen_now(datetime(2025, 7, 20, 12, tzinfo=timezone.utc))  # stored: May 15 to June 15, no job run since
    invoice = draft(api, chain, period=None)
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-07-15T00:00:00Z", "2025-08-15T00:00:00Z")


def test_a_bare_date_period_runs_between_local_midnights(api, book):
    chain = billing_chain(api, book, [recurring("10")])
    invoice = draft(api, chain, ("2025-01-01", "2025-02-01"))
    assert (invoice["periodStart"], invoice["periodEnd"]) == ("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z")


# --------------------------------------------------------------------------- discount, tax, rounding, memo

def test_each_line_is_rounded_once_and_the_total_is_the_sum_of_rounded_lines(api, book):
    chain = billing_chain(api, book, [usage("0.005"), recurring("2.675")])
    event(chain, 1, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    assert amounts(invoice) == [("usage", 0.01), ("recurring", 2.68)]
    assert invoice["subtotal"] == 2.69 and invoice["total"] == 2.69  # rounding the exact sum would give 2.68


def test_discount_and_tax_set_on_generate(api, book):
    """100.00 less 10% and 5.00 is 85.00; 8.25% tax on it is 7.0125 -> 7.01; total 92.01."""
    chain = billing_chain(api, book, [recurring("100")])
    invoice = draft(api, chain, discountPercent=10, discountFixed="5", taxRate="8.25")
    assert (invoice["subtotal"], invoice["discountTotal"], invoice["taxTotal"], invoice["total"]) == (
        100, 15, 7.01, 92.01)
    assert (invoice["discountPercent"], invoice["discountFixed"], invoice["taxRate"]) == (10, 5, 8.25)


def test_a_discount_never_exceeds_the_subtotal(api, book):
    chain = billing_chain(api, book, [recurring("20")])
    invoice = draft(api, chain, discountFixed="50", taxRate=10)
    assert (invoice["discountTotal"], invoice["taxTotal"], invoice["total"]) == (20, 0, 0)


@pytest.mark.parametrize("field, value", [("discountPercent", 101), ("discountPercent", -1), ("taxRate", "x"),
                                          ("discountFixed", "0.001"), ("discountFixed", -5)])
def test_out_of_range_settings_are_400(api, book, field, value):
    chain = billing_chain(api, book, [recurring("20")])
    assert field in error(generate(api, chain, **{field: value}), 400)


def test_the_subscriptions_invoice_memo_is_printed(api, book):
    chain = billing_chain(api, book, [recurring("20")], invoiceMemo="PO 4411, net 30")
    assert draft(api, chain)["invoiceMemo"] == "PO 4411, net 30"


def test_the_agent_breakdown_sums_lines_per_agent(api, book):
    chain = billing_chain(api, book, [recurring("20"), usage("1")])
    event(chain, 5, "2025-01-10T12:00:00Z")
    assert draft(api, chain)["agentBreakdown"] == [{
        "agentId": str(chain.agent.id), "agentCode": chain.agent.agent_code, "agentName": chain.agent.name,
        "amount": 25, "lineCount": 2}]


# --------------------------------------------------------------------------- numbers, repeats, overlaps

def test_numbers_are_consecutive_per_book(api, book, other_api, other_book):
    first = draft(api, billing_chain(api, book, [recurring("1")]))
    second = draft(api, billing_chain(api, book, [recurring("1")]))
    foreign = draft(other_api, billing_chain(other_api, other_book, [recurring("1")]))
    assert (first["invoiceNumber"], second["invoiceNumber"]) == ("INV-000001", "INV-000002")
    assert foreign["invoiceNumber"] == "INV-000001"


def test_generating_a_drafted_period_again_reprices_the_draft_in_place(api, book):
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 2, "2025-01-10T12:00:00Z")
    first = draft(api, chain)
    event(chain, 3, "2025-01-11T12:00:00Z")
    again = ok(generate(api, chain, taxRate=10), 200)
    assert (again["id"], again["invoiceNumber"]) == (first["id"], first["invoiceNumber"])
    assert (again["subtotal"], again["taxTotal"], again["total"]) == (5, 0.5, 5.5)
    assert Invoice.objects.count() == 1


def test_generating_a_finalized_period_again_returns_it_unchanged(api, book):
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 2, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    event(chain, 3, "2025-01-11T12:00:00Z")
    again = ok(generate(api, chain), 200)
    assert (again["id"], again["status"], again["total"]) == (invoice["id"], "issued", 2)


def test_a_period_overlapping_another_invoice_of_the_subscription_is_409(api, book):
    chain = billing_chain(api, book, [recurring("10")])
    january = draft(api, chain)
    message = error(generate(api, chain, ("2025-01-15T00:00:00Z", "2025-02-15T00:00:00Z")), 409)
    assert january["invoiceNumber"] in message
    ok(api.post(f"/v1/invoices/{january['id']}/void", {}))
    assert draft(api, chain, ("2025-01-15T00:00:00Z", "2025-02-15T00:00:00Z"))["invoiceNumber"] == "INV-000002"


def test_an_overlap_with_a_final_invoice_says_what_can_be_done(api, book):
    """Issued: void it, or pick another period. Paid: it stays as it is (a paid invoice is never voided), so another
    period; the sentence read "a paid invoice is never voided or pick a period"."""
    from decimal import Decimal

    from billing.services.payments import payment_record_received
    from core import clock
    chain = billing_chain(api, book, [recurring("10")])
    january = draft(api, chain)
    ok(api.post(f"/v1/invoices/{january['id']}/send", {}))
    overlapping = ("2025-01-15T00:00:00Z", "2025-02-15T00:00:00Z")
    assert error(generate(api, chain, overlapping), 409).endswith(
        "overlaps this period; void it first, or pick a period that does not overlap.")
    payment_record_received(book=book, invoice_id=january["id"], amount=Decimal(10), reference="wire-1",
                            now=clock.now())
    assert error(generate(api, chain, overlapping), 409).endswith(
        "overlaps this period; a paid invoice stays as it is: pick a period that does not overlap.")


def test_pricing_changes_never_reprice_an_issued_invoice(api, book):
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 4, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    strategy = chain.strategies[0]
    ok(api.patch(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{strategy['id']}", {"rate": "9"}))
    after = ok(api.get(f"/v1/invoices/{invoice['id']}"))
    assert after["total"] == 4
    assert after["lines"][0]["terms"]["rate"] == "1"  # the terms it was priced with, as exact decimal text


def test_a_new_agent_bills_the_periods_not_yet_invoiced_and_a_draft_keeps_the_agent_it_was_priced_for(api, book):
    """PATCH agentId applies to every period not yet invoiced; a draft keeps its captured terms, which name
    the agent whose usage they price (docs/decisions/invoices.md: Invoices keep what was reviewed)."""
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 4, "2025-01-10T12:00:00Z")
    january = draft(api, chain)
    other = AgentFactory(book=book)
    other_signal = SignalFactory(book=book, agent=other)
    ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents", {"agentId": str(other.id)}), 201)
    create_strategies(api, chain.plan["id"], [{"name": "other usage", "agentId": str(other.id),
                                               "signalId": str(other_signal.id), **usage("2")}])
    ok(api.patch(f"/v1/subscriptions/{chain.subscription['id']}", {"agentId": str(other.id)}))
    event(chain, 3, "2025-01-20T12:00:00Z")
    event(chain, 7, "2025-02-10T12:00:00Z")  # the first agent's usage after the change: no longer billed
    event(chain, 5, "2025-02-11T12:00:00Z", signal=other_signal)
    refreshed = ok(generate(api, chain), 200)
    assert (refreshed["id"], refreshed["total"]) == (january["id"], 7)
    assert [line["quantity"] for line in refreshed["lines"]] == [7]
    february = draft(api, chain, FEB)
    assert (amounts(february), february["lines"][0]["signalId"]) == ([("usage", 10)], str(other_signal.id))


def backdated_premium(api, chain) -> SimpleNamespace:
    """The chain as billed by a second subscription of its customer and agent, on a Premium plan (2.00 a unit of the
    same signal), created now and started December 15, 2024: earlier than the chain's."""
    other_plan = create_plan(api, chain.agent.id, name="Premium")
    create_strategies(api, other_plan["id"], [{"name": "premium usage", "agentId": str(chain.agent.id),
                                                "signalId": str(chain.signal.id), **usage("2")}])
    backdated = ok(api.post("/v1/subscriptions", {
        "name": "Premium", "planId": other_plan["id"], "agentId": str(chain.agent.id),
        "customerId": str(chain.customer.id), "startDate": "2024-12-15T00:00:00Z", "status": "active"}), 201)
    return SimpleNamespace(**{**vars(chain), "subscription": backdated})


def test_a_backdated_subscription_leaves_the_events_an_issued_invoice_billed_where_they_are(api, book):
    """An event is billed at most once: a subscription created after January was invoiced, starting before it,
    bills none of the events January's issued invoice billed (it would bill them a second time), while a draft
    gives way to it as the earliest-started subscription."""
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 10, "2025-01-10T12:00:00Z")
    event(chain, 3, "2025-02-10T12:00:00Z")
    january = draft(api, chain)
    ok(api.post(f"/v1/invoices/{january['id']}/send", {}))
    february = draft(api, chain, FEB)
    assert (january["total"], february["total"]) == (10, 3)
    later = backdated_premium(api, chain)
    assert [line["quantity"] for line in draft(api, later)["lines"]] == [0]  # January's 10 stay on its invoice
    assert [line["quantity"] for line in draft(api, later, FEB)["lines"]] == [3]  # February had only a draft
    refreshed = ok(generate(api, chain, FEB), 200)
    assert (refreshed["id"], [line["quantity"] for line in refreshed["lines"]]) == (february["id"], [0])


def test_an_invoice_made_final_before_invoices_kept_their_claims_stores_them_at_migrate(api, book):
    """A January invoice issued before invoices stored their claims (billed_claims null), and a subscription
    created afterwards with an earlier start, before the upgrade: the next migrate stores the claims January's lines
    counted, among the subscriptions that existed when they read the ledger, so the backdated one bills none of its
    10 units. By the earliest-started rule alone it would have billed them a second time."""
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 10, "2025-01-10T12:00:00Z")
    january = draft(api, chain)
    ok(api.post(f"/v1/invoices/{january['id']}/send", {}))
    Invoice.objects.filter(pk=january["id"]).update(billed_claims=None)  # as stored before the field
    later = backdated_premium(api, chain)
    assert [line["quantity"] for line in draft(api, later)["lines"]] == [10]  # the earliest-started rule alone
    call_command("migrate", verbosity=0)
    kept = Invoice.objects.get(pk=january["id"]).billed_claims
    assert [(claim["agentId"], claim["signalId"]) for claim in kept] == [(str(chain.agent.id), str(chain.signal.id))]
    assert [line["quantity"] for line in ok(generate(api, later), 200)["lines"]] == [0]  # refreshed: they stay put
    assert final_invoices_keep_claims() == 0  # nothing left to store


def test_a_draft_priced_before_invoices_kept_their_claims_stores_them_when_sent(api, book):
    """A draft whose lines read the ledger before invoices stored their claims, sent after the upgrade without a
    refresh: sending stores the claims its lines counted, so a later backdated subscription bills none of them."""
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 10, "2025-01-10T12:00:00Z")
    january = draft(api, chain)
    Invoice.objects.filter(pk=january["id"]).update(billed_claims=None)  # as stored before the field
    ok(api.post(f"/v1/invoices/{january['id']}/send", {}))
    assert Invoice.objects.get(pk=january["id"]).billed_claims[0]["signalId"] == str(chain.signal.id)
    later = backdated_premium(api, chain)
    assert [line["quantity"] for line in draft(api, later)["lines"]] == [0]


def test_a_strategy_added_later_does_not_take_the_events_another_subscriptions_issued_invoice_billed(api, book):
    """The earlier subscription bills no calls in January, so the later one's issued January invoice billed them;
    a calls strategy added to the earlier one's plan afterwards takes the calls of periods no final invoice
    billed, never those."""
    chain = billing_chain(api, book, [usage("1")])  # tickets only, from January 1
    calls = SignalFactory(book=book, agent=chain.agent, name="calls")
    event(chain, 6, "2025-01-20T12:00:00Z", signal=calls)
    event(chain, 2, "2025-02-20T12:00:00Z", signal=calls)
    other_plan = create_plan(api, chain.agent.id, name="Calls")
    create_strategies(api, other_plan["id"], [{"name": "calls", "agentId": str(chain.agent.id),
                                                "signalId": str(calls.id), **usage("3")}])
    later = SimpleNamespace(**{**vars(chain), "subscription": ok(api.post("/v1/subscriptions", {
        "name": "Calls", "planId": other_plan["id"], "agentId": str(chain.agent.id),
        "customerId": str(chain.customer.id), "startDate": "2025-01-10T00:00:00Z", "status": "active"}), 201)})
    january = draft(api, later)
    ok(api.post(f"/v1/invoices/{january['id']}/send", {}))
    assert january["total"] == 18
    create_strategies(api, chain.plan["id"], [{"name": "calls too", "agentId": str(chain.agent.id),
                                               "signalId": str(calls.id), **usage("5")}])
    assert [(line["signalId"], line["quantity"]) for line in draft(api, chain)["lines"]] == [
        (str(chain.signal.id), 0), (str(calls.id), 0)]  # January's calls stay on the issued invoice
    assert [line["quantity"] for line in draft(api, chain, FEB)["lines"]] == [0, 2]  # February's: the earlier one's


# --------------------------------------------------------------------------- errors and access

def test_internal_coding_agent_customers_are_never_invoiced(api, book):
    # A subscription made before its customer became internal (a subscription for an internal customer is refused,
    # as is coding-agent usage turning a subscribed customer internal; this is the last line of defence).
    developer = CustomerFactory(book=book, email="dev@acme.example.com")
    chain = billing_chain(api, book, [recurring("10")], customer=developer)
    Customer.objects.filter(pk=developer.pk).update(is_internal=True)
    assert "customerId" in error(generate(api, chain), 400)
    assert not Invoice.objects.exists()


@pytest.mark.parametrize("body, field", [({}, "customerId"), ({"customerId": "nope"}, "customerId"),
                                         ({"customerId": NO_SUCH_ID}, "subscriptionId"),
                                         ({"customerId": NO_SUCH_ID, "subscriptionId": 7}, "subscriptionId")])
def test_missing_or_malformed_ids_are_400(api, body, field):
    assert field in error(api.post("/v1/invoices/generate", body), 400)


def test_unknown_customer_or_subscription_is_404(api, book):
    chain = billing_chain(api, book, [recurring("10")])
    error(api.post("/v1/invoices/generate", {"customerId": NO_SUCH_ID, "subscriptionId": chain.subscription["id"]}),
          404)
    error(api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id), "subscriptionId": NO_SUCH_ID}),
          404)


def test_a_subscription_of_another_customer_is_404(api, book):
    chain = billing_chain(api, book, [recurring("10")])
    stranger = CustomerFactory(book=book)
    error(api.post("/v1/invoices/generate", {"customerId": str(stranger.id),
                                             "subscriptionId": chain.subscription["id"]}), 404)


def test_a_subscription_of_another_organization_is_404(api, other_api, other_book):
    foreign = billing_chain(other_api, other_book, [recurring("10")])
    error(generate(api, foreign), 404)


@pytest.mark.parametrize("period, status", [
    (("2025-02-01T00:00:00Z", "2025-01-01T00:00:00Z"), 422),  # end before start
    (("2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z"), 422),  # before the subscription starts
    (("2025-01-01T00:00:00Z", "yesterday"), 400),
])
def test_bad_periods(api, book, period, status):
    chain = billing_chain(api, book, [recurring("10")])
    error(generate(api, chain, period), status)


def test_one_period_bound_without_the_other_is_400(api, book):
    chain = billing_chain(api, book, [recurring("10")])
    assert "billingPeriodEnd" in error(generate(api, chain, None, billingPeriodStart="2025-01-01T00:00:00Z"), 400)


@pytest.mark.parametrize("kind", [dict(key_type="publishable"), dict(scope="ingest"), dict(scope="legal")])
def test_publishable_ingest_and_legal_keys_are_refused(client_for, api, book, kind):
    chain = billing_chain(api, book, [recurring("10")])
    client = client_for(**kind)
    error(generate(client, chain), 403)
    error(client.get("/v1/invoices"), 403)


def test_a_live_key_does_not_see_the_test_books_invoices(api, book, client_for, org):
    chain = billing_chain(api, book, [recurring("10")])
    invoice = draft(api, chain)
    live = client_for(environment="live")
    error(live.get(f"/v1/invoices/{invoice['id']}"), 404)
    assert book_of(org, "live") != book
