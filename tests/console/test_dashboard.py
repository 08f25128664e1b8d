"""The dashboard on the console's index, against figures computed by hand for a small book (June 2025, now
2025-06-10T12:00Z, so "this month" is June 1-10, ten whole days):

- Acme's main customer has 30/month plus 0.50 per unit since April 1. Its April invoice (30.00, issued April 30,
  due May 30) is overdue with 10.00 paid; its May invoice (30.00) was issued May 31. In June it used 10 units
  (cost 1.00) on June 2 and 20 units (cost 2.50) on June 5.
- A second customer buys a pool of 100 units for 50 since June 1 and used 85 of them on June 9 (cost 0.40).
- An internal developer's usage cost 0.75 on June 3; an unknown model's event on June 4 has no cost yet.

Revenue = 30 x 10/30 (the fee's ten June days) + 30 x 0.50 + 50 (the pool) = 75.00; cost of customers' usage
= 1.00 + 2.50 + 0.40 = 3.90, margin 71.10 (94.8%); all usage costs 4.65. MRR run rate = 30 + 15 + 50 = 95.00,
committed = 30.00, canonical = the May invoice, 30.00.
"""
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from analytics.dashboard import BookFigures, book_figures
from billing.services.invoices import invoices_mark_overdue
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
    assert (figures.mrr.run_rate.mrr, figures.mrr.committed.mrr, figures.mrr.canonical.mrr) == (D(95), D(30), D(30))
    assert (figures.overdue.count, figures.overdue.total, figures.overdue.amount_due) == (1, D("30"), D("20"))
    assert [balance.subscription.name for balance in figures.pools_near_empty] == ["Pool"]
    assert figures.pools_near_empty[0].remaining_percent == D("15.00")
    assert figures.unpriced_events == 1
    assert figures.average_daily_revenue == D("7.5")
    assert [(cost.day.day, cost.cost) for cost in figures.daily_costs if cost.cost] == [
        (2, D("1")), (3, D("0.75")), (5, D("2.5")), (9, D("0.4"))]
    assert len(figures.daily_costs) == 10


def test_the_margin_shown_is_the_difference_of_the_revenue_and_cost_shown():
    """Revenue 10.004 shows $10.00 and cost 0.005 shows $0.01: the margin shows $9.99, not the exact 9.999
    rounded on its own ($10.00), which would not add up on the page."""
    from types import SimpleNamespace

    figures = BookFigures(book=None, window=None, revenue=SimpleNamespace(revenue=D("10.004"), cost=D("0.005")),
                          cost=None, mrr=None, overdue=None, pools_near_empty=[], unpriced_events=0)
    assert figures.margin_shown == D("9.99")
    assert round(figures.margin_percent_shown, 2) == D("99.90")  # of the revenue shown, $10.00


def test_the_index_page_shows_the_figures_and_links_to_the_filtered_lists(june, book, console):
    page = console.get("/admin/", {"environment": "test"}).content.decode()
    for figure in ("$75.00", "$3.90", "$71.10", "94.80% of revenue", "all usage $4.65", "$95.00", "committed $30.00",
                   "$30.00", "$20.00 due of $30.00", "15% left", "average ($7.50)"):
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
    # rollup-backlog check each ledger read starts with (customers/rollup.py: one index probe when nothing is
    # pending), which of the billed signals still exist (analytics/selectors/coverage.py), the session, the
    # permission checks of the app list and the pickers.
    with django_assert_max_num_queries(81):
        assert console.get("/admin/", {"environment": "test"}).status_code == 200
