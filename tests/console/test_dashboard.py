"""The dashboard on the console's index, against figures computed by hand for a small book (June 2025, now
2025-06-10T12:00Z, so "this month" is June 1-10, ten whole days):

- Acme's main customer has 30/month plus 0.50 per unit since April 1. Its April invoice (30.00, issued April 30,
  due May 30) is overdue with 10.00 paid; its May invoice (30.00) was issued May 31. In June it used 10 units
  (cost 1.00) on June 2 and 20 units (cost 2.50) on June 5.
- A second customer buys a pool of 100 units for 50 since June 1 and used 85 of them on June 9 (cost 0.40).
- An internal developer's usage cost 0.75 on June 3; an unknown model's event on June 4 has no cost yet.

Revenue = 30 x 10/30 (the fee's ten June days) + 30 x 0.50 + 50 (the pool) = 75.00; cost of customers' usage
= 1.00 + 2.50 + 0.40 = 3.90, margin 71.10 (94.8%); all usage costs 4.65. MRR run rate = 30 + 15 + 50 = 95.00,
committed = 30 + the pool's 50.00 (billed every period, used or not) = 80.00, canonical = the May invoice, 30.00.
"""
import json
import re
from datetime import date, datetime, timezone
from decimal import Decimal

import pytest

from analytics.dashboard import DashboardMonth, book_figures, dashboard_month, dashboard_months
from billing.services.invoices import invoices_mark_overdue
from customers.usage_sums import Window
from tests.analytics.support import record
from tests.billing.invoice_support import WEBHOOK_SECRET, billing_chain, credit_pool, generate, pay, recurring, usage
from tests.billing.support import ok
from tests.console.conftest import NOW
from tests.factories import CustomerFactory, ServiceEntryFactory, book_of

pytestmark = pytest.mark.django_db

D = Decimal


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def tokens_record(customer, agent, signal, when, cost_cents, quantity=1, model="dash-llm", provider="testai"):
    """A usage record whose cost is `cost_cents` (dash-llm: 0.0001 per input token)."""
    return {"customerExternalId": customer, "agentCode": agent, "signalName": signal, "usageDate": when,
            "model": model, "modelProvider": provider, "inputTokens": cost_cents * 100, "outputTokens": 0,
            "quantity": quantity}


@pytest.fixture
def june(api, book, client, settings, frozen_now):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    ServiceEntryFactory(canonical_name="dash-llm", provider="testai", input_cost=D("0.0001"), output_cost=D("0"))
    main = billing_chain(api, book, [recurring("30"), usage("0.50")], start="2025-04-01T00:00:00Z")
    invoices = {}
    for month, period, sent_at in (("april", ("2025-04-01T00:00:00Z", "2025-05-01T00:00:00Z"), "2025-04-30T12:00"),
                                   ("may", ("2025-05-01T00:00:00Z", "2025-06-01T00:00:00Z"), "2025-05-31T12:00")):
        frozen_now(at(sent_at))
        invoices[month] = ok(generate(api, main, period), 201)
        ok(api.post(f"/v1/invoices/{invoices[month]['id']}/send", {}))
    frozen_now(NOW)
    invoices_mark_overdue(now=NOW)
    assert pay(client, invoices["april"], amount_cents=1000).status_code == 200
    pool = billing_chain(api, book, [credit_pool(100, 50, "0.75")], start="2025-06-01T00:00:00Z", name="Pool")
    developer = CustomerFactory(book=book, external_id="dev@acme.example.com", is_internal=True)
    main_ids = (main.customer.external_id, main.agent.agent_code, main.signal.name)
    record(api,
           tokens_record(*main_ids, "2025-06-02T10:00:00Z", 100, quantity=10),
           tokens_record(*main_ids, "2025-06-05T10:00:00Z", 250, quantity=20),
           tokens_record(pool.customer.external_id, pool.agent.agent_code, pool.signal.name, "2025-06-09T10:00:00Z",
                         40, quantity=85),
           tokens_record(developer.external_id, "coding-agent", "tool calls", "2025-06-03T10:00:00Z", 75))
    resp = api.post("/v1/usage/record", {"records": [tokens_record("walk-in", "helper", "answers",
                                                                   "2025-06-04T10:00:00Z", 1, model="mystery-llm",
                                                                   provider="acme")]})
    assert resp.status_code == 200
    return main, pool


def test_the_figures_match_the_hand_computed_book(june, book):
    main, pool = june
    figures = book_figures(book=book, now=NOW)
    assert (figures.window.start, figures.window.end) == (at("2025-06-01T00:00"), at("2025-06-11T00:00"))
    assert (figures.revenue.revenue, figures.revenue.cost, figures.revenue.margin) == (D("75"), D("3.9"), D("71.1"))
    assert round(figures.revenue.margin_percent, 1) == D("94.8")
    assert figures.cost.cost == D("4.65")
    assert (figures.mrr.run_rate.mrr, figures.mrr.committed.mrr, figures.mrr.canonical.mrr) == (D(95), D(80), D(30))
    assert (figures.overdue.count, figures.overdue.total, figures.overdue.amount_due) == (1, D("30"), D("20"))
    assert [balance.subscription.name for balance in figures.pools_near_empty] == ["Pool"]
    assert figures.pools_near_empty[0].remaining_percent == D("15.00")
    assert figures.unpriced_events == 1
    assert figures.average_daily_revenue == D("7.5")
    assert [(cost.day.day, cost.cost) for cost in figures.daily_costs if cost.cost] == [
        (2, D("1")), (3, D("0.75")), (5, D("2.5")), (9, D("0.4"))]
    assert len(figures.daily_costs) == 10


def test_the_index_page_shows_the_figures_and_links_to_the_filtered_lists(june, book, console):
    page = console.get("/admin/", {"environment": "test"}).content.decode()
    for figure in ("$75.00", "$3.90", "$71.10", "94.80% of revenue", "all usage $4.65", "$95.00", "committed $80.00",
                   "$30.00", "$20.00 still to collect of $30.00 billed", "15% left", "average ($7.50)"):
        assert figure in page, figure
    assert f'href="/admin/billing/invoice/?book={book.pk}&amp;status__exact=overdue">1</a>' in page
    assert f'href="/admin/billing/subscription/?book={book.pk}&amp;pool_left=20">1</a>' in page
    assert (f'href="/admin/customers/usageevent/?book={book.pk}&amp;event_status__exact=NEEDS_COST_BACKFILL">1</a>'
            in page)
    assert page.count('class="bar"') == 10 and 'class="reference"' in page
    assert "<script" not in page.split('class="console-dashboard"')[1].split("</section>")[0]


def test_the_linked_lists_show_what_the_dashboard_counted(june, book, console):
    overdue = console.get("/admin/billing/invoice/", {"book": str(book.pk), "status__exact": "overdue"})
    assert [invoice.invoice_number for invoice in overdue.context["cl"].result_list] == ["INV-000001"]
    pools = console.get("/admin/billing/subscription/", {"book": str(book.pk), "pool_left": "20"})
    assert [subscription.name for subscription in pools.context["cl"].result_list] == ["Pool"]
    unpriced = console.get("/admin/customers/usageevent/", {"book": str(book.pk),
                                                           "event_status__exact": "NEEDS_COST_BACKFILL"})
    assert [event.model for event in unpriced.context["cl"].result_list] == ["mystery-llm"]


def test_the_dashboard_shows_the_chosen_book(june, console):
    live = console.get("/admin/", {"environment": "live"}).content.decode()  # nothing recorded there
    assert "Acme Agents · live books" in live and "$75.00" not in live
    assert "nothing past its due date" in live and "$0.00 due of $0.00" not in live  # no overdue invoice
    assert "Acme Agents · test books" in console.get("/admin/", {"environment": "test"}).content.decode()


def test_the_dashboard_opens_on_the_books_that_have_data(june, org, console):
    """Only the test book has customers (a test-key quickstart): the dashboard opens on it, figures shown."""
    page = console.get("/admin/").content.decode()
    assert "Acme Agents · test books" in page and "$75.00" in page
    CustomerFactory(book=book_of(org, "live"))
    assert "Acme Agents · live books" in console.get("/admin/").content.decode()  # live wins once it has data


def test_the_dashboard_reads_each_figure_once(june, console, django_assert_max_num_queries):
    # A fixed number of statements, whatever the book holds: the figures' selectors (one call each; revenue
    # and credit balances read the terms in force and the subscriptions' claims once, billing.pricing), the
    # rollup-backlog checks each ledger read makes (customers/rollup.py before its snapshot, and
    # customers/usage_sums.py `_rollup_sums` inside it: one index probe each when nothing is pending), which of the billed signals still exist (analytics/selectors/coverage.py), the session, the
    # permission checks of the app list and the pickers; and revenue's second read of the same kind, of the whole
    # billing periods the month to date cuts, for the signals priced through tiers (analytics/selectors/revenue.py).
    # The cost read checks the backlog once more here: inside the test's transaction its reads open no snapshot of
    # their own, so each of them checks too (customers/usage_sums.py `ledger_reads`).
    with django_assert_max_num_queries(96):
        assert console.get("/admin/", {"environment": "test"}).status_code == 200


# The month choice. On top of June's book, Acme's main customer used 40 units (cost 2.00) on May 5 and 6 units
# (cost 0.60) at 23:30 on May 31, the month's last half hour; 4 units (cost 0.20) at 23:30 on April 30 fall just
# before May. The internal developer's usage cost 0.30 on May 7. May read whole: revenue = the fee's whole month
# 30 + 46 x 0.50 = 53.00; cost of customers' usage 2.00 + 0.60 = 2.60, margin 50.40 (95.09%); all usage costs 2.90;
# 53.00 over May's 31 days is 1.71 a day. The pool's subscription starts June 1: nothing of it in May.

def revenue_api(api, start: str, end: str | None = None) -> dict:
    """GET /v1/analytics/revenue for [start, end], its numbers read as Decimal (not float)."""
    resp = api.get("/v1/analytics/revenue", {"startDate": start, **({"endDate": end} if end else {})})
    assert resp.status_code == 200, resp.content[:600]
    return json.loads(resp.content, parse_float=Decimal)


def picker(page: str) -> str:
    return page.split('<form class="console-picker"')[1].split("</form>")[0]


@pytest.fixture
def may(june, api):
    main, pool = june
    main_ids = (main.customer.external_id, main.agent.agent_code, main.signal.name)
    record(api,
           tokens_record(*main_ids, "2025-04-30T23:30:00Z", 20, quantity=4),
           tokens_record(*main_ids, "2025-05-05T10:00:00Z", 200, quantity=40),
           tokens_record(*main_ids, "2025-05-31T23:30:00Z", 60, quantity=6),
           tokens_record("dev@acme.example.com", "coding-agent", "tool calls", "2025-05-07T10:00:00Z", 30))
    return main, pool


def test_a_past_month_is_read_whole_and_equals_the_revenue_api_for_its_days(may, api, book):
    month = dashboard_month("2025-05", now=NOW)
    figures = book_figures(book=book, now=NOW, month=month)
    assert (figures.window.start, figures.window.end) == (at("2025-05-01T00:00"), at("2025-06-01T00:00"))
    assert (figures.revenue.revenue, figures.revenue.cost, figures.revenue.margin) == (D("53"), D("2.6"), D("50.4"))
    assert round(figures.revenue.margin_percent, 2) == D("95.09")
    assert figures.cost.cost == D("2.9")
    assert round(figures.average_daily_revenue, 2) == D("1.71") and figures.days == 31
    assert [(cost.day.day, cost.cost) for cost in figures.daily_costs if cost.cost] == [
        (5, D("2")), (7, D("0.3")), (31, D("0.6"))]
    assert len(figures.daily_costs) == 31
    answer = revenue_api(api, "2025-05-01", "2025-05-31")
    assert (answer["revenue"], answer["cost"], answer["margin"]) == (
        figures.revenue.revenue, figures.revenue.cost, figures.revenue.margin)
    assert (figures.revenue.billed, figures.revenue.collected) == (D("30"), D("0")) == (answer["billed"],
                                                                                      answer["collected"])
    cost = api.get("/v1/analytics/cost", {"startDate": "2025-05-01", "endDate": "2025-05-31"})
    assert json.loads(cost.content, parse_float=Decimal)["cost"] == figures.cost.cost
    # The figures that describe now do not follow the month.
    current = book_figures(book=book, now=NOW)
    assert (figures.mrr, figures.overdue, figures.unpriced_events) == (current.mrr, current.overdue,
                                                                         current.unpriced_events)
    assert [b.subscription.pk for b in figures.pools_near_empty] == [b.subscription.pk for b in
                                                                      current.pools_near_empty]


def test_the_current_month_chosen_is_the_month_to_date(may, api, book):
    chosen = book_figures(book=book, now=NOW, month=dashboard_month("2025-06", now=NOW))
    default = book_figures(book=book, now=NOW)
    assert chosen.window == default.window == Window(at("2025-06-01T00:00"), at("2025-06-11T00:00"))
    assert (chosen.revenue.revenue, chosen.revenue.cost, chosen.revenue.margin) == (D("75"), D("3.9"), D("71.1"))
    assert (default.revenue.revenue, default.revenue.cost, default.revenue.margin) == (D("75"), D("3.9"), D("71.1"))
    answer = revenue_api(api, "2025-06-01")
    assert (answer["revenue"], answer["cost"], answer["margin"]) == (D("75"), D("3.9"), D("71.1"))


def test_the_dashboard_shows_the_chosen_months_figures_and_says_which_are_now(may, book, console):
    page = console.get("/admin/", {"environment": "test", "month": "2025-05"}).content.decode()
    assert "Acme Agents · test books · May 2025</h2>" in page
    for figure in ("Revenue in May 2025", "$53.00", "Cost in May 2025", "$2.60", "all usage $2.90",
                   "Margin in May 2025", "$50.40", "95.09% of revenue", "May 2025's average ($1.71)"):
        assert figure in page, figure
    assert "$75.00" not in page and "this month" not in page
    assert page.count('class="bar"') == 31
    # Billed and Collected as the revenue API counts them: May's invoice (30.00, issued May 31, not paid yet).
    billed = page.split('data-figure="billed"')[1].split("</div>")[0]
    assert "Billed in May 2025" in billed and "$30.00" in billed and "collected $0.00" in billed
    # MRR, overdue invoices, pools and unpriced events are marked "now", and the page says so in words.
    assert page.count('<span class="now"') == 5
    assert 'the figures marked "now"' in page and "2025-06-10 12:00 UTC" in page
    # Their links are the same as for the current month: none of those lists is filtered by the window.
    assert f'href="/admin/billing/invoice/?book={book.pk}&amp;status__exact=overdue">1</a>' in page
    assert f'href="/admin/billing/subscription/?book={book.pk}&amp;pool_left=20">1</a>' in page


def test_the_month_choice_sits_with_the_other_choices_and_offers_a_year_back(may, console):
    form = picker(console.get("/admin/", {"environment": "test", "month": "2025-05"}).content.decode())
    assert 'name="organization"' in form and 'name="environment"' in form
    options = re.findall(r'<option value="(\d{4}-\d{2})"( selected)?>([^<]+)</option>', form)
    assert options[0] == ("2025-06", "", "June 2025 (to date)")
    assert options[1] == ("2025-05", " selected", "May 2025")
    assert options[-1] == ("2024-06", "", "June 2024")
    assert len(options) == 13
    # An earlier month asked for by URL is read and kept in the choice, so "Show" does not drop it.
    older = console.get("/admin/", {"environment": "test", "month": "2020-02"}).content.decode()
    assert "Acme Agents · test books · February 2020</h2>" in older
    assert '<option value="2020-02" selected>February 2020</option>' in picker(older)


@pytest.mark.parametrize("value", ["", "2025-07", "9000-01", "1899-12", "0000-01", "2025-13", "2025-00", "2025-5",
                                   "May 2025", "2025-05-01", "2025-05\x00", "２０２５-０５", "-2025-05"])
def test_a_month_the_dashboard_cannot_read_falls_back_to_the_current_month(may, console, value):
    resp = console.get("/admin/", {"environment": "test", "month": value})
    assert resp.status_code == 200
    page = resp.content.decode()
    assert "Acme Agents · test books · June 2025 to date</h2>" in page and "$75.00" in page
    assert '<option value="2025-06" selected>June 2025 (to date)</option>' in picker(page)
    assert 'the figures marked "now"' not in page


@pytest.mark.parametrize("value, first_day, to_date", [
    (None, "2025-06-01", True), ("2025-06", "2025-06-01", True), ("2025-05", "2025-05-01", False),
    ("2024-12", "2024-12-01", False), ("1900-01", "1900-01-01", False), ("1899-12", "2025-06-01", True),
    ("2025-07", "2025-06-01", True), ("2025-1", "2025-06-01", True)])
def test_the_month_parameter_names_a_month_from_1900_to_now(value, first_day, to_date):
    assert dashboard_month(value, now=NOW) == DashboardMonth(date.fromisoformat(first_day), to_date)


def test_the_months_offered_cross_the_year_and_a_past_month_is_whole():
    january = at("2025-01-10T08:00")
    months = dashboard_months(now=january)
    assert [month.label for month in months[:3]] == ["January 2025 (to date)", "December 2024", "November 2024"]
    assert months[-1].value == "2024-01" and len(months) == 13
    december = months[1].window(january)
    assert (december.start, december.end) == (at("2024-12-01T00:00"), at("2025-01-01T00:00"))
    assert months[0].window(january) == Window(at("2025-01-01T00:00"), at("2025-01-11T00:00"))
    february = DashboardMonth(date(2024, 2, 1), to_date=False).window(january)  # a leap year's February
    assert (february.start, february.end) == (at("2024-02-01T00:00"), at("2024-03-01T00:00"))


def test_a_past_month_reads_each_figure_once_too(may, console, django_assert_max_num_queries):
    # The month to date's budget without its whole-period read (test_the_dashboard_reads_each_figure_once):
    # choosing a month costs no statement (it is parsed from the query string), and the window figures are the
    # same selectors called once over another window. A whole past month cuts none of a calendar-monthly
    # subscription's periods, so it skips the whole-period read a month to date makes
    # (analytics/selectors/revenue.py).
    with django_assert_max_num_queries(89):
        assert console.get("/admin/", {"environment": "test", "month": "2025-05"}).status_code == 200



def test_a_cost_under_a_cent_shows_its_digits_and_the_margin_is_the_apis(june, api, console):
    """April: the fee's whole month, 30.00, and one unit (0.50) of usage that cost 0.0035 (35 input tokens). Written
    in cents the cost would read $0.00 beside a chart bar of $0.0035, and a margin percent of the figures in cents
    (100.00%) would not be the API's marginPercent (30.4965 / 30.50 = 99.99%)."""
    main, _ = june
    record(api, {"customerExternalId": main.customer.external_id, "agentCode": main.agent.agent_code,
                 "signalName": main.signal.name, "usageDate": "2025-04-10T10:00:00Z", "model": "dash-llm",
                 "modelProvider": "testai", "inputTokens": 35, "outputTokens": 0, "quantity": 1})
    revenue = revenue_api(api, "2025-04-01", "2025-04-30")
    assert (revenue["revenue"], revenue["cost"], revenue["margin"]) == (D("30.5"), D("0.0035"), D("30.4965"))
    assert round(revenue["marginPercent"], 2) == D("99.99")
    page = console.get("/admin/", {"environment": "test", "month": "2025-04"}).content.decode()
    for figure in ('<span class="value">$30.50</span>', '<span class="value">$0.0035</span>', "all usage $0.0035",
                   "99.99% of revenue"):
        assert figure in page, figure
