"""The hosted portal through Django's test client: the one-time link, the browser session it starts, what the
page shows, the profile form, PDFs and pay-now, and the bad-token limit (contract.md: Hosted pages)."""
import re
from datetime import datetime, timedelta
from html import unescape
from io import StringIO
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.contrib.sessions.models import Session
from django.core.management import call_command
from django.test import Client

from billing.models import Invoice
from customers.models import Customer
from portal.models import PortalSession
from tests.billing.invoice_support import FEB, billing_chain, draft, event, recurring, usage
from tests.billing.pools import pool_strategy, topup
from tests.billing.support import create_plan, create_strategies, create_subscription, ok
from tests.factories import AgentFactory, CustomerFactory, SignalFactory, UsageEventFactory
from tests.portal.conftest import html, instant, link_path

pytestmark = pytest.mark.django_db


def browser() -> Client:
    """A browser that enforces CSRF like a real one."""
    return Client(enforce_csrf_checks=True)


def opened(session: dict) -> Client:
    """A browser that opened the link (and so holds the portal session)."""
    client = browser()
    resp = client.get(link_path(session))
    assert resp.status_code == 200, resp.content[:300]
    return client


def iso(moment: datetime) -> str:
    return moment.isoformat()


def csrf_token(page_html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page_html).group(1)


def issued_invoice(api, book, customer, strategies, *, units=None) -> dict:
    """A chain for the customer with one January invoice (`units` of usage on January 10), sent (issued)."""
    chain = billing_chain(api, book, strategies, customer=customer)
    if units is not None:
        event(chain, units, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    return SimpleNamespace(chain=chain, **ok(api.get(f"/v1/invoices/{invoice['id']}")))


@pytest.fixture
def billed(api, book, customer):
    """The customer's issued January invoice (24.00) and a February draft, plus another customer's issued
    invoice in the same book."""
    mine = issued_invoice(api, book, customer, [recurring("20"), usage("1")], units=4)
    ok(api.post("/v1/invoices/generate", {"customerId": str(customer.id), "subscriptionId": mine.chain.subscription[
        "id"], "billingPeriodStart": FEB[0], "billingPeriodEnd": FEB[1]}), 201)
    other = CustomerFactory(book=book, name="Initech", external_id="initech", email="ap@initech.example.com")
    theirs = issued_invoice(api, book, other, [recurring("30")])
    return SimpleNamespace(mine=mine, theirs=theirs, other=other,
                           draft=Invoice.objects.get(customer=customer, status="draft"))


# --------------------------------------------------------------------------- the link

def test_the_first_open_shows_the_portal_and_consumes_the_link(api, customer, create_session):
    session = create_session(customer)
    client = browser()
    resp = client.get(link_path(session))
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/html")
    assert "Globex Corp" in html(resp) and "Invoices" in html(resp)
    assert "no-cache" in resp["Cache-Control"] or "no-store" in resp["Cache-Control"]
    assert PortalSession.objects.get(pk=session["id"]).used_at is not None
    assert client.cookies.get("sessionid")


def test_a_second_open_is_a_410_page_saying_the_link_was_already_used(customer, create_session):
    session = create_session(customer)
    first = opened(session)
    again = first.get(link_path(session))
    assert again.status_code == 410 and "already used" in html(again)
    assert 'href="/portal/s/"' in html(again)  # the same browser may continue in its session
    elsewhere = browser().get(link_path(session))
    assert elsewhere.status_code == 410 and "already used" in html(elsewhere)
    assert 'href="/portal/s/"' not in html(elsewhere)


def test_an_expired_link_is_a_410_page_saying_so(customer, create_session, clock_at):
    session = create_session(customer)
    clock_at(instant(session["expiresAt"]))
    resp = browser().get(link_path(session))
    assert resp.status_code == 410 and "expired" in html(resp) and "already used" not in html(resp)
    assert PortalSession.objects.get(pk=session["id"]).used_at is None


def test_a_link_opened_after_it_expired_says_expired_even_if_it_was_used(customer, create_session, clock_at):
    session = create_session(customer)
    opened(session)
    clock_at(instant(session["expiresAt"]) + timedelta(minutes=5))
    resp = browser().get(link_path(session))
    assert resp.status_code == 410 and "has expired" in html(resp)


def test_a_revoked_link_is_a_410_page_saying_so(api, customer, create_session):
    session = create_session(customer)
    api.delete(f"/v1/portal-sessions/{session['id']}")
    resp = browser().get(link_path(session))
    assert resp.status_code == 410 and "revoked" in html(resp) and "already used" not in html(resp)
    assert PortalSession.objects.get(pk=session["id"]).used_at is None


def test_the_link_of_a_customer_deleted_since_does_not_open(api, customer, create_session):
    session = create_session(customer)
    assert api.delete(f"/v1/customers/{customer.id}").status_code == 204
    assert browser().get(link_path(session)).status_code == 410


def test_an_unknown_link_is_a_404_page(customer):
    resp = browser().get("/portal/not-a-real-token")
    assert resp.status_code == 404 and "not valid" in html(resp)


def test_the_portal_without_a_link_is_a_page_that_says_how_to_open_it(customer):
    resp = browser().get("/portal/")
    assert resp.status_code == 404 and resp["Content-Type"].startswith("text/html")
    assert "Open the billing portal with the link you were given" in html(resp)
    resp = browser().get("/pay/")
    assert resp.status_code == 404 and resp["Content-Type"].startswith("text/html")
    assert "This payment link is not valid" in html(resp)
    assert browser().post("/portal/").status_code == browser().post("/pay/").status_code == 405


def test_the_portal_without_a_link_takes_a_browser_holding_a_session_to_it(customer, create_session):
    client = browser()
    session = create_session(customer)
    assert client.get(link_path(session)).status_code == 200
    resp = client.get("/portal/")
    assert resp.status_code == 302 and resp["Location"] == "/portal/s/"


def test_a_link_opens_only_with_get(customer, create_session):
    # A real browser's POST carries no CSRF token: it must meet the 405 the docs promise, not the CSRF 403 page.
    session = create_session(customer)
    assert browser().head(link_path(session)).status_code == 405
    for method in (browser().post, browser().put, browser().delete):
        resp = method(link_path(session))
        assert resp.status_code == 405 and resp["Allow"] == "GET"
    assert PortalSession.objects.get(pk=session["id"]).used_at is None
    assert browser().get(link_path(session)).status_code == 200  # still unused: it opens


# --------------------------------------------------------------------------- the browser session

def test_the_browser_session_serves_the_portal_until_one_hour_after_creation(customer, create_session, clock_at):
    session = create_session(customer)
    client = opened(session)
    assert client.get("/portal/s/").status_code == 200
    clock_at(instant(session["expiresAt"]) - timedelta(seconds=1))
    assert client.get("/portal/s/").status_code == 200
    clock_at(instant(session["expiresAt"]))
    ended = client.get("/portal/s/")
    assert ended.status_code == 410 and "has ended" in html(ended)
    assert client.get("/portal/s/").status_code == 403  # the binding is gone


def test_the_browser_session_cookie_expires_with_the_portal_session(customer, create_session):
    session = create_session(customer)
    client = opened(session)
    cookie = client.cookies["sessionid"]
    assert cookie["expires"] or cookie["max-age"]
    assert 3500 <= int(cookie["max-age"]) <= 3600


def test_revoking_the_session_ends_the_browser_session_at_once(api, customer, create_session):
    session = create_session(customer)
    client = opened(session)
    assert api.delete(f"/v1/portal-sessions/{session['id']}").status_code == 204
    resp = client.get("/portal/s/")
    assert resp.status_code == 410 and "Globex" not in html(resp)


def test_without_a_portal_session_the_pages_are_refused(customer):
    client = browser()
    home = client.get("/portal/s/")
    assert home.status_code == 403 and "No billing portal session" in html(home)
    assert client.get(f"/portal/s/invoices/{customer.id}/pdf").status_code == 403


def test_opening_a_link_starts_a_new_django_session(book, customer, create_session):
    """Session fixation: a cookie someone planted before the link was opened never gains the portal."""
    planter = opened(create_session(CustomerFactory(book=book, name="Initech", external_id="initech")))
    victim = browser()
    victim.cookies["sessionid"] = planter.cookies["sessionid"].value
    victim.get(link_path(create_session(customer)))
    assert victim.cookies["sessionid"].value != planter.cookies["sessionid"].value
    assert "Globex Corp" in html(victim.get("/portal/s/"))
    assert "Globex Corp" not in html(planter.get("/portal/s/"))


def test_sign_out_ends_the_browser_session(customer, create_session):
    client = opened(create_session(customer))
    page = client.get("/portal/s/")
    resp = client.post("/portal/s/sign-out", {"csrfmiddlewaretoken": csrf_token(html(page))})
    assert resp.status_code == 200 and "signed out" in html(resp)
    assert client.get("/portal/s/").status_code == 403


def test_a_second_link_replaces_the_browsers_portal_session(book, customer, create_session):
    other = CustomerFactory(book=book, name="Initech", external_id="initech")
    client = opened(create_session(customer))
    client.get(link_path(create_session(other)))
    page = html(client.get("/portal/s/"))
    assert "Initech" in page and "Globex Corp" not in page


# --------------------------------------------------------------------------- what the page shows

def test_the_page_lists_the_customers_finalized_invoices_only(billed, customer, create_session):
    page = html(opened(create_session(customer)).get("/portal/s/"))
    mine = billed.mine
    assert mine.invoiceNumber in page and "$24.00" in page and "issued" in page
    assert "2025-01-01 to 2025-01-31" in page and mine.dueDate in page
    assert f"/portal/s/invoices/{mine.id}/pdf" in page and f"/portal/s/invoices/{mine.id}/pay" in page
    assert ">How to pay $24.00<" in page  # no online payment here: the button leads to the seller's instructions
    assert billed.draft.invoice_number not in page  # drafts still change
    assert billed.theirs.invoiceNumber not in page and "Initech" not in page


def test_a_paid_invoice_has_no_pay_button(api, billed, customer, create_session, settings):
    settings.PAYMENTS_LOCAL_CHECKOUT = True
    client = opened(create_session(customer))
    pay_page = client.get(f"/portal/s/invoices/{billed.mine.id}/pay")
    client.post(f"/portal/s/invoices/{billed.mine.id}/pay", {"csrfmiddlewaretoken": csrf_token(html(pay_page)),
                                                              "attempt": "7b0e5bb8-7c61-4d4a-a7cf-1d4a5b46a001"})
    page = html(client.get("/portal/s/"))
    assert "paid" in page and f"/portal/s/invoices/{billed.mine.id}/pay" not in page


def test_a_partial_refund_shows_under_the_invoices_total(api, billed, customer, create_session):
    """A partial refund leaves the invoice paid with less collected: the portal says what was given back."""
    from datetime import timezone

    from billing.services.payments import payment_record_received, refund_create

    book = Invoice.objects.get(pk=billed.mine.id).book
    payment, _ = payment_record_received(book=book, invoice_id=billed.mine.id, amount=Decimal("24"), reference="wire-1",
                                         now=datetime(2025, 2, 3, tzinfo=timezone.utc))
    refund_create(book=book, invoice_id=billed.mine.id, payment_id=payment.pk, amount=Decimal("5"),
                  now=datetime(2025, 2, 4, tzinfo=timezone.utc))
    page = html(opened(create_session(customer)).get("/portal/s/"))
    row = next(row for row in page.split("<tr") if billed.mine.invoiceNumber in row)
    assert "paid" in row and "$24.00" in row and "Refunded $5.00" in row


def test_a_partly_paid_invoice_says_what_was_received_beside_its_total(api, billed, customer, create_session):
    """The row showed $24.00 beside a "How to pay $14.00" button and nothing of the $10.00 received, which the pay
    page lists as "Amount paid"."""
    from datetime import timezone

    from billing.services.payments import payment_record_received

    book = Invoice.objects.get(pk=billed.mine.id).book
    payment_record_received(book=book, invoice_id=billed.mine.id, amount=Decimal("10"), reference="wire-1",
                            now=datetime(2025, 2, 3, tzinfo=timezone.utc))
    page = html(opened(create_session(customer)).get("/portal/s/"))
    row = next(row for row in page.split("<tr") if billed.mine.invoiceNumber in row)
    assert "issued" in row and "$24.00" in row and "Paid $10.00" in row and ">How to pay $14.00<" in row


def test_a_paid_invoice_row_does_not_repeat_what_was_paid(api, billed, customer, create_session):
    from datetime import timezone

    from billing.services.payments import payment_record_received

    book = Invoice.objects.get(pk=billed.mine.id).book
    payment_record_received(book=book, invoice_id=billed.mine.id, amount=Decimal("24"), reference="wire-1",
                            now=datetime(2025, 2, 3, tzinfo=timezone.utc))
    page = html(opened(create_session(customer)).get("/portal/s/"))
    row = next(row for row in page.split("<tr") if billed.mine.invoiceNumber in row)
    assert "paid" in row and "Paid $" not in row


def test_the_page_shows_subscriptions_with_plan_and_current_period(api, book, customer, create_session):
    chain = billing_chain(api, book, [recurring("20")], customer=customer, start="2025-06-01T00:00:00Z")
    client = opened(create_session(customer))
    page = html(client.get("/portal/s/"))
    subscription = ok(api.get(f"/v1/subscriptions/{chain.subscription['id']}"))
    assert chain.plan["name"] in page and "active" in page
    assert subscription["currentPeriodStart"][:10] in page


def test_the_page_charts_the_current_periods_usage_of_this_customer_only(book, customer, create_session, clock_at):
    agent = AgentFactory(book=book)
    signal = SignalFactory(book=book, agent=agent, name="pages translated", short_name="pages translated")
    other = CustomerFactory(book=book)
    for day, quantity in ((2, 3), (2, 4), (5, 10)):
        UsageEventFactory(book=book, customer=customer, signal=signal, quantity=Decimal(quantity),
                          usage_date=instant(f"2025-06-0{day}T10:00:00Z"))
    UsageEventFactory(book=book, customer=other, signal=signal, quantity=Decimal(99),
                      usage_date=instant("2025-06-03T10:00:00Z"))
    UsageEventFactory(book=book, customer=customer, signal=signal, quantity=Decimal(50),
                      usage_date=instant("2025-05-31T23:59:59Z"))  # the month before
    client = opened(create_session(customer))
    clock_at(instant("2025-06-10T12:00:00Z"))
    page = html(client.get("/portal/s/"))
    usage_section = page.split('id="usage"')[1].split("</section>")[0]
    assert "2025-06-01 to 2025-06-30" in usage_section and "3 events" in usage_section
    svg = re.search(r"<svg class=\"chart\".*?</svg>", usage_section, re.S).group(0)
    assert svg.count("<rect") == 10  # June 1 to 10
    assert "Jun 2: 2 events" in svg and "Jun 5: 1 event<" in svg and "Jun 3: 0 events" in svg
    assert "Events per day (UTC days)</figcaption>" in usage_section  # the y axis's unit, in words
    assert "pages translated" in usage_section and ">17<" in usage_section  # the period's quantity
    assert "<script" not in page and "https://" not in page.split("</head>")[0]
    clock_at(instant("2025-07-10T12:00:00Z"))  # July: nothing yet, said in words rather than an empty chart
    july = html(client.get("/portal/s/")).split('id="usage"')[1].split("</section>")[0]
    assert "No usage recorded in this period yet." in july and "<svg" not in july


def test_the_usage_of_a_local_period_is_written_and_charted_in_its_local_days(api, book, customer, create_session,
                                                                               clock_at):
    """A Los Angeles period [Nov 1 07:00Z, Dec 1 08:00Z): the heading said "2026-11-01 to 2026-12-01 (UTC)" and the
    bars were UTC days, while the subscription row says 2026-11-01 to 2026-11-30. The counts were right."""
    client = opened(create_session(customer))
    clock_at(instant("2026-11-20T12:00:00Z"))  # Nov 20, 04:00 in Los Angeles
    chain = billing_chain(api, book, [recurring("20")], customer=customer, start="2026-11-01T07:00:00Z",
                          timezone="America/Los_Angeles")
    subscription = ok(api.get(f"/v1/subscriptions/{chain.subscription['id']}"))
    assert (subscription["currentPeriodStart"], subscription["currentPeriodEnd"]) == (
        "2026-11-01T07:00:00Z", "2026-12-01T08:00:00Z")
    for at in ("2026-11-01T03:00:00Z",  # Oct 31 in Los Angeles: before the period, not counted
               "2026-11-01T08:00:00Z",  # Nov 1, 01:00
               "2026-11-20T05:00:00Z"):  # Nov 19, 21:00
        UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal(1),
                          usage_date=instant(at))
    page = html(client.get("/portal/s/"))
    subscriptions = page.split('id="subscriptions"')[1].split("</section>")[0]
    assert '<span class="date">2026-11-01</span> to <span class="date">2026-11-30</span>' in subscriptions
    usage_section = page.split('id="usage"')[1].split("</section>")[0]
    assert "2026-11-01 to 2026-11-30 (America/Los_Angeles) &middot; 2 events" in usage_section
    assert "(UTC)" not in usage_section and "2026-12-01" not in usage_section
    svg = re.search(r"<svg class=\"chart\".*?</svg>", usage_section, re.S).group(0)
    assert "Events per day: 2 events from Nov 1 to Nov 30 (America/Los_Angeles)</title>" in svg
    assert svg.count("<rect") == 20  # Nov 1 to Nov 20, local days
    assert "Nov 1: 1 event<" in svg and "Nov 19: 1 event<" in svg and "Nov 20: 0 events<" in svg
    assert "Events per day (days in America/Los_Angeles)</figcaption>" in usage_section


def test_a_period_that_ends_inside_a_utc_day_charts_that_days_events_too(book, customer):
    """A Berlin period [Jun 30 22:00Z, Jul 31 22:00Z) read on its last day: July 31's events are drawn and in
    the headline as they are in the totals per signal (the partial last day was left out)."""
    from portal.selectors import customer_usage

    signal = SignalFactory(book=book, agent=AgentFactory(book=book), name="calls", short_name="calls")
    for hour in (8, 14):
        UsageEventFactory(book=book, customer=customer, signal=signal, quantity=Decimal(2),
                          usage_date=instant(f"2025-07-31T{hour:02d}:00:00Z"))
    usage = customer_usage(book=book, customer=customer, start=instant("2025-06-30T22:00:00Z"),
                           end=instant("2025-07-31T22:00:00Z"), now=instant("2025-07-31T15:00:00Z"))
    assert (usage.days[0].day.isoformat(), usage.days[-1].day.isoformat()) == ("2025-06-30", "2025-07-31")
    assert usage.events == sum(total.events for total in usage.by_signal) == 2


def test_events_dated_later_in_the_period_count_in_its_totals_though_their_days_are_not_drawn(book, customer):
    """decisions/portal.md: the period's events and quantity per signal; only days after today are not drawn. A
    credit-pool row beside it counts those events, so the usage heading must too."""
    from portal.selectors import customer_usage

    signal = SignalFactory(book=book, agent=AgentFactory(book=book), name="credits", short_name="credits")
    for day, quantity in ((10, 150), (30, 10)):  # the 30th is after today
        UsageEventFactory(book=book, customer=customer, signal=signal, quantity=Decimal(quantity),
                          usage_date=instant(f"2025-06-{day}T10:00:00Z"))
    usage = customer_usage(book=book, customer=customer, start=instant("2025-06-01T00:00:00Z"),
                           end=instant("2025-07-01T00:00:00Z"), now=instant("2025-06-15T12:00:00Z"))
    assert usage.days[-1].day.isoformat() == "2025-06-15"  # drawn through today
    assert usage.events == 2
    assert [(total.events, total.quantity) for total in usage.by_signal] == [(2, Decimal(160))]


def test_the_usage_table_names_each_signal_as_the_customer_reads_it(book, customer, create_session, clock_at):
    agent = AgentFactory(book=book)
    minutes = SignalFactory(book=book, agent=agent, name="Call minutes", short_name="call_minutes")
    gone = SignalFactory(book=book, agent=agent, name="Pages", short_name="pages")
    for quantity in (3, 4):
        UsageEventFactory(book=book, customer=customer, signal=minutes, signal_name="call_minutes",
                          quantity=Decimal(quantity), usage_date=instant("2025-06-02T10:00:00Z"))
    UsageEventFactory(book=book, customer=customer, signal=gone, signal_name="pages", quantity=Decimal(5),
                      usage_date=instant("2025-06-03T10:00:00Z"))
    gone.delete()  # its event keeps the name it recorded
    client = opened(create_session(customer))
    clock_at(instant("2025-06-10T12:00:00Z"))
    usage_section = html(client.get("/portal/s/")).split('id="usage"')[1].split("</section>")[0]
    assert "Call minutes" in usage_section and "call_minutes" not in usage_section
    assert ">7<" in usage_section and "pages" in usage_section and ">5<" in usage_section
    assert usage_section.index("Call minutes") < usage_section.index("pages")  # most events first


def test_credit_balances_show_only_where_the_plan_sells_a_pool(api, book, customer, create_session, clock_at):
    client = opened(create_session(customer))
    assert 'id="credits"' not in html(client.get("/portal/s/"))
    clock_at(instant("2025-06-10T12:00:00Z"))  # the subscription's current period is June 2025
    agent = AgentFactory(book=book)
    chain = SimpleNamespace(agent=agent, signal=SignalFactory(book=book, agent=agent), customer=customer,
                            plan=create_plan(api, agent.id, name="Translation pool"))
    create_strategies(api, chain.plan["id"], [pool_strategy(chain, size=100)])
    create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal(30),
                      usage_date=instant("2025-06-05T10:00:00Z"))
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert "Translation pool" in credits and "30 of 100 units used" in credits and ">70<" in credits
    assert 'title="70% left"' in credits and ">70%</span>" in credits  # as the console writes a percent


def test_a_balance_with_top_ups_left_says_how_much_of_it_they_are(api, book, customer, create_session, clock_at):
    # 30 of 100 used and 50 topped up: 120 remain, 120% of the pool (spec), which "30 of 100 units used" alone
    # did not explain.
    client = opened(create_session(customer))
    clock_at(instant("2025-06-10T12:00:00Z"))
    agent = AgentFactory(book=book)
    chain = SimpleNamespace(agent=agent, signal=SignalFactory(book=book, agent=agent), customer=customer,
                            plan=create_plan(api, agent.id, name="Translation pool"))
    create_strategies(api, chain.plan["id"], [pool_strategy(chain, size=100)])
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    ok(topup(api, subscription, 50), 201)
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal(30),
                      usage_date=instant("2025-06-05T10:00:00Z"))
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert "30 of 100 units used" in credits and ">120<" in credits and "70 this period + 50 top-ups" in credits
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal(90),
                      usage_date=instant("2025-06-06T10:00:00Z"))  # 120 of 100: 20 drawn from the top-ups
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert "120 of 100 units used" in credits and ">30<" in credits and "0 this period + 30 top-ups" in credits


def pool_chain(api, book, customer, **strategy):
    agent = AgentFactory(book=book)
    chain = SimpleNamespace(agent=agent, signal=SignalFactory(book=book, agent=agent), customer=customer,
                            plan=create_plan(api, agent.id, name="Translation pool"))
    create_strategies(api, chain.plan["id"], [pool_strategy(chain, **strategy)])
    return chain


def test_a_pool_billing_overage_says_so_though_top_ups_are_left(api, book, customer, create_session, clock_at):
    """Stark's card read "2,172.25 of 2,000 units used · 327.75 remaining · 0 this period + 327.75 top-ups" while
    the invoice billed 172.25 units of overage: a top-up raises remainingUnits but does not reduce
    overageInProgressUnits (spec). The figure is the credit balance's own."""
    client = opened(create_session(customer))
    clock_at(instant("2025-06-10T12:00:00Z"))
    chain = pool_chain(api, book, customer, size=2000, overage="0.20")
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    ok(topup(api, subscription, 500), 201)
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal("1900"),
                      usage_date=instant("2025-06-05T10:00:00Z"))
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert "beyond the pool" not in credits  # within the pool: nothing bills as overage
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal("272.25"),
                      usage_date=instant("2025-06-06T10:00:00Z"))
    api_row = ok(api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance"))
    assert (api_row["remainingUnits"], api_row["overageInProgressUnits"]) == (327.75, 172.25)
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert "2,172.25 of 2,000 units used" in credits and ">327.75<" in credits
    assert "0 this period + 327.75 top-ups" in credits
    assert ("172.25 units beyond the pool bill as overage on this period's invoice ($0.20 each); top-ups do not "
            "reduce it") in unescape(credits)


def test_an_overdrawn_pool_without_top_ups_says_what_bills_as_overage(api, book, customer, create_session,
                                                                      clock_at):
    client = opened(create_session(customer))
    clock_at(instant("2025-06-10T12:00:00Z"))
    chain = pool_chain(api, book, customer, size=2000, overage="0.20")
    create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal("2090.5"),
                      usage_date=instant("2025-06-05T10:00:00Z"))
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert ">-90.5<" in credits and "-4.53%" in credits
    assert "90.5 units beyond the pool bill as overage on this period's invoice ($0.20 each)<" in unescape(credits)


def test_overage_recorded_after_the_periods_invoice_was_issued_is_not_said_to_bill_on_it(api, book, customer,
                                                                                         create_session, clock_at):
    """An invoice sent before its period ended bills the usage of its last refresh; usage recorded for the period
    later is on no invoice (docs/decisions/invoices.md), so the page does not say it bills on this period's."""
    client = opened(create_session(customer))
    clock_at(instant("2025-06-10T12:00:00Z"))
    chain = pool_chain(api, book, customer, size=2000, overage="0.20")
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal("1900"),
                      usage_date=instant("2025-06-05T10:00:00Z"))
    invoice = ok(api.post("/v1/invoices/generate", {"customerId": str(customer.id),
                                                     "subscriptionId": subscription["id"]}), 201)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal("190.5"),
                      usage_date=instant("2025-06-06T10:00:00Z"))
    credits = unescape(html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0])
    assert "90.5 units beyond the pool, recorded after this period's invoice was issued<" in credits
    assert "bill as overage" not in credits


def test_a_subscription_row_names_its_last_day_as_its_periods_do(api, book, customer, create_session, clock_at):
    """A life that ends at midnight starting July 1 in Los Angeles runs through June 30 there, as its period's days
    and its pool row ("Ended 2025-06-30") say: "until 2025-07-01" was read as a day more."""
    client = opened(create_session(customer))
    clock_at(instant("2025-07-10T12:00:00Z"))
    chain = pool_chain(api, book, customer, size=100, overage="0.75")
    create_subscription(api, chain, startDate="2025-06-01T07:00:00Z", endDate="2025-07-01T07:00:00Z",
                        timezone="America/Los_Angeles")
    page = " ".join(unescape(html(client.get("/portal/s/"))).split())
    assert 'since <span class="date">2025-06-01</span>, through <span class="date">2025-06-30</span>' in page
    assert "Ended 2025-06-30" in page


def test_the_overage_note_is_the_invoices_own_figure_after_a_minimum_commitment(api, book, customer,
                                                                                create_session, clock_at):
    """A minimumCommitment of 150 units bills 150 of 120 used: 50 units of overage on a pool of 100, which no
    "used minus pool" in the page would find. The note takes the selector's overage_in_progress_units."""
    client = opened(create_session(customer))
    clock_at(instant("2025-06-10T12:00:00Z"))
    chain = pool_chain(api, book, customer, size=100, overage="0.75", minimumCommitment=150)
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal(120),
                      usage_date=instant("2025-06-05T10:00:00Z"))
    api_row = ok(api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance"))
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert api_row["overageInProgressUnits"] == 50
    assert "50 units beyond the pool bill as overage" in credits and "($0.75 each)" in credits
    assert "20 units beyond" not in credits


def test_the_credit_balances_table_becomes_one_card_per_row_on_narrow_screens(api, book, customer,
                                                                              create_session, clock_at):
    """At 390px the credit table overflowed while the others turn into cards (portal.css: table.stack); every
    cell says what it is in its data-label. The browser test measures the width."""
    client = opened(create_session(customer))
    clock_at(instant("2025-06-10T12:00:00Z"))
    create_subscription(api, pool_chain(api, book, customer, size=100), startDate="2025-06-01T00:00:00Z")
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert '<table class="stack">' in credits
    cells = re.findall(r"<td[^>]*>", credits)
    assert len(cells) == 3 and all("data-label=" in cell for cell in cells)


def test_a_pool_outside_its_subscriptions_periods_says_when_it_starts_or_ended(api, book, customer, create_session,
                                                                              clock_at):
    # A full gauge for an ended subscription read as 100 units still to use.
    agent = AgentFactory(book=book)
    chain = SimpleNamespace(agent=agent, signal=SignalFactory(book=book, agent=agent), customer=customer,
                            plan=create_plan(api, agent.id, name="Translation pool"))
    create_strategies(api, chain.plan["id"], [pool_strategy(chain, size=100)])
    create_subscription(api, chain, startDate="2025-06-01T00:00:00Z", endDate="2025-07-01T00:00:00Z")
    client = opened(create_session(customer))
    clock_at(instant("2025-05-20T12:00:00Z"))
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert "Starts 2025-06-01" in credits and "100 units a period" in credits and "gauge" not in credits
    clock_at(instant("2025-06-10T12:00:00Z"))
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert "0 of 100 units used" in credits and "gauge" in credits
    clock_at(instant("2025-07-03T12:00:00Z"))
    credits = html(client.get("/portal/s/")).split('id="credits"')[1].split("</section>")[0]
    assert "Ended 2025-06-30" in credits and "100 units a period" in credits and "gauge" not in credits
    assert ">100<" not in credits and "100%" not in credits


def test_the_page_links_back_to_the_return_url_when_set(customer, create_session):
    with_return = html(opened(create_session(customer, returnUrl="https://app.example.com/account")).get(
        "/portal/s/"))
    assert 'href="https://app.example.com/account"' in with_return
    without = html(opened(create_session(customer)).get("/portal/s/"))
    assert "Return to" not in without


def test_the_return_url_is_escaped_in_the_page(customer, create_session):
    page = html(opened(create_session(customer, returnUrl='https://app.example.com/"><b>x')).get("/portal/s/"))
    assert '"><b>x' not in page


# --------------------------------------------------------------------------- invoice PDFs and pay-now

def test_a_draft_voided_before_it_was_finalized_is_not_the_customers(api, billed, customer, create_session):
    """Voided as a draft, it was never issued to the customer: the portal neither lists it nor serves its PDF. A
    voided issued invoice stays listed (the customer holds it), due never: its old due date is not shown."""
    due = ok(api.get(f"/v1/invoices/{billed.mine.id}"))["dueDate"]
    assert html(opened(create_session(customer)).get("/portal/s/")).count(f'data-label="Due">{due[:10]}') == 1
    ok(api.post(f"/v1/invoices/{billed.draft.id}/void", {"reason": "made by mistake"}))
    ok(api.post(f"/v1/invoices/{billed.mine.id}/void", {"reason": "billed twice"}))
    client = opened(create_session(customer))
    page = html(client.get("/portal/s/"))
    assert billed.draft.invoice_number not in page
    assert billed.mine.invoiceNumber in page  # issued, then voided: listed as void
    assert f'data-label="Due">{due[:10]}' not in page
    assert client.get(f"/portal/s/invoices/{billed.draft.id}/pdf").status_code == 404


def emailed_pay_path(api, invoice_id) -> str:
    """The pay-now path of the invoice's latest email (sent again here: the email holds the only copy)."""
    from tests.billing.invoice_support import pay_token
    from tests.mail import sent_mail

    ok(api.post(f"/v1/invoices/{invoice_id}/send", {}))
    return f"/pay/{pay_token(sent_mail()[-1].text)}"


def test_the_emailed_link_of_a_voided_invoice_says_voided_and_pays_nothing(api, billed, customer, create_session,
                                                                           settings):
    """docs: void invoices show a "voided" page (410); voiding cleared the token, so the link read "not valid"
    (404). The token now stays, and nothing on the page or through it can pay."""
    settings.PAYMENTS_LOCAL_CHECKOUT = True  # even the development checkout pays nothing on a void invoice
    path = emailed_pay_path(api, billed.mine.id)
    client = browser()
    checkout = client.get(path)
    assert checkout.status_code == 200 and 'name="attempt"' in html(checkout)
    form = {"csrfmiddlewaretoken": csrf_token(html(checkout)),
            "attempt": re.search(r'name="attempt" value="([^"]+)"', html(checkout)).group(1)}
    ok(api.post(f"/v1/invoices/{billed.mine.id}/void", {"reason": "billed twice"}))
    resp = client.get(path)
    assert resp.status_code == 410 and "This invoice was voided" in html(resp)
    assert billed.mine.invoiceNumber in html(resp) and 'name="attempt"' not in html(resp)
    paid = client.post(path, form)  # the form of a tab opened before the void
    assert paid.status_code == 410 and "This invoice was voided" in html(paid)
    invoice = ok(api.get(f"/v1/invoices/{billed.mine.id}"))
    assert (invoice["status"], invoice["payments"]) == ("void", [])
    portal = html(opened(create_session(customer)).get("/portal/s/"))
    assert f"/portal/s/invoices/{billed.mine.id}/pay" not in portal  # no pay button for it in the portal either


def test_a_voided_invoice_shows_no_live_pay_link_in_its_documents(api, billed):
    from billing.invoice_documents import InvoiceView
    from billing.pay_links import live_pay_token

    emailed_pay_path(api, billed.mine.id)
    ok(api.post(f"/v1/invoices/{billed.mine.id}/void", {}))
    invoice = Invoice.objects.get(pk=billed.mine.id)
    assert invoice.pay_token_digest  # kept: the link finds the invoice and says it was voided
    assert live_pay_token(invoice) is None and InvoiceView.of(invoice).pay_url is None


def test_the_pay_page_of_an_overdue_invoice_says_it_is_overdue(api, billed, customer, create_session):
    path = emailed_pay_path(api, billed.mine.id)
    assert "is overdue" not in html(browser().get(path))
    Invoice.objects.filter(pk=billed.mine.id).update(status="overdue")
    notice = f"This invoice is overdue: it was due on {billed.mine.dueDate}."
    emailed = browser().get(path)
    assert emailed.status_code == 200 and notice in html(emailed) and "$24.00" in html(emailed)
    issued = Invoice.objects.get(pk=billed.mine.id).issued_at.date().isoformat()  # a UTC subscription
    assert f"Billed to {customer.name} &middot; issued {issued}" in html(emailed)  # whose invoice, from when
    portal = opened(create_session(customer)).get(f"/portal/s/invoices/{billed.mine.id}/pay")
    assert portal.status_code == 200 and notice in html(portal)


def test_the_customer_downloads_their_invoice_pdf(billed, customer, create_session):
    resp = opened(create_session(customer)).get(f"/portal/s/invoices/{billed.mine.id}/pdf")
    assert resp.status_code == 200 and resp["Content-Type"] == "application/pdf"
    assert resp.content.startswith(b"%PDF")
    assert billed.mine.invoiceNumber in resp["Content-Disposition"]


def test_another_customers_invoice_pdf_is_refused(billed, customer, create_session):
    client = opened(create_session(customer))
    for invoice_id in (billed.theirs.id, billed.draft.id, "00000000-0000-4000-8000-000000000000"):
        resp = client.get(f"/portal/s/invoices/{invoice_id}/pdf")
        assert resp.status_code == 404 and "Invoice not found" in html(resp)
        assert resp["Content-Type"].startswith("text/html")


def test_an_invoice_of_another_organization_is_refused(client_for, other_org, other_book, customer,
                                                       create_session):
    foreign_api = client_for(organization=other_org)
    foreign_customer = CustomerFactory(book=other_book, external_id="foreign", email="ap@foreign.example.com")
    foreign = issued_invoice(foreign_api, other_book, foreign_customer, [recurring("10")])
    client = opened(create_session(customer))
    assert client.get(f"/portal/s/invoices/{foreign.id}/pdf").status_code == 404
    assert client.get(f"/portal/s/invoices/{foreign.id}/pay").status_code == 404


def test_pay_now_from_the_portal_pays_with_the_csrf_protected_checkout(api, billed, customer, create_session,
                                                                       settings):
    settings.PAYMENTS_LOCAL_CHECKOUT = True
    client = opened(create_session(customer))
    path = f"/portal/s/invoices/{billed.mine.id}/pay"
    page = client.get(path)
    assert page.status_code == 200 and "$24.00" in html(page) and 'href="/portal/s/"' in html(page)
    assert client.post(path, {"attempt": "x"}).status_code == 403  # no CSRF token
    form = {"csrfmiddlewaretoken": csrf_token(html(page)), "attempt": re.search(
        r'name="attempt" value="([^"]+)"', html(page)).group(1)}
    assert client.post(path, form).status_code == 302
    assert client.post(path, form).status_code == 302  # a double submit pays once
    invoice = ok(api.get(f"/v1/invoices/{billed.mine.id}"))
    assert (invoice["status"], [p["amount"] for p in invoice["payments"]]) == ("paid", [24])


def test_without_a_stripe_key_pay_now_from_the_portal_says_not_configured_and_pays_nothing(api, billed, customer,
                                                                                             create_session):
    client = opened(create_session(customer))
    path = f"/portal/s/invoices/{billed.mine.id}/pay"
    page = client.get(path)
    assert page.status_code == 200 and "$24.00" in html(page) and "Online payment is not configured" in html(page)
    assert 'name="attempt"' not in html(page)
    home = client.get("/portal/s/")
    resp = client.post(path, {"csrfmiddlewaretoken": csrf_token(html(home)),
                              "attempt": "7b0e5bb8-7c61-4d4a-a7cf-1d4a5b46a005"})
    assert resp.status_code == 403 and "not configured" in html(resp)
    invoice = ok(api.get(f"/v1/invoices/{billed.mine.id}"))
    assert (invoice["status"], invoice["payments"]) == ("issued", [])


def test_pay_now_of_another_customers_invoice_is_refused_and_pays_nothing(api, billed, customer, create_session):
    client = opened(create_session(customer))
    home = client.get("/portal/s/")
    path = f"/portal/s/invoices/{billed.theirs.id}/pay"
    assert client.get(path).status_code == 404
    resp = client.post(path, {"csrfmiddlewaretoken": csrf_token(html(home)),
                              "attempt": "7b0e5bb8-7c61-4d4a-a7cf-1d4a5b46a002"})
    assert resp.status_code == 404
    assert ok(api.get(f"/v1/invoices/{billed.theirs.id}"))["status"] == "issued"


def test_pay_now_with_stripe_returns_to_the_portal(billed, customer, create_session, settings, monkeypatch):
    import stripe
    settings.STRIPE_SECRET_KEY = "sk_test_123"
    calls = []

    def create(**params):
        calls.append(params)
        return SimpleNamespace(url="https://checkout.stripe.com/c/pay/cs_test_portal")
    monkeypatch.setattr(stripe.checkout.Session, "create", create)
    resp = opened(create_session(customer)).get(f"/portal/s/invoices/{billed.mine.id}/pay")
    assert resp.status_code == 302 and resp["Location"] == "https://checkout.stripe.com/c/pay/cs_test_portal"
    [params] = calls
    assert params["metadata"] == {"invoiceId": billed.mine.id}
    assert params["success_url"] == (f"https://billing.example.com/portal/s/invoices/{billed.mine.id}/pay"
                                     "?checkout=success")


# --------------------------------------------------------------------------- profile

def profile_form(page_html: str, **changes) -> dict:
    fields = dict(re.findall(r'<input id="profile-\w+" name="(\w+)" type="\w+"\s+value="([^"]*)"', page_html))
    return {**fields, "csrfmiddlewaretoken": csrf_token(page_html), **changes}


def test_the_customer_edits_the_profile_with_a_csrf_protected_form(customer, create_session):
    client = opened(create_session(customer))
    page = html(client.get("/portal/s/"))
    form = profile_form(page, name="Globex Corporation", email="ap@globex.example.com", phone="+1 555 0100",
                        addressLine1="1 Main St", city="Springfield", zipCode="12345", country="US")
    assert client.post("/portal/s/profile", {k: v for k, v in form.items() if k != "csrfmiddlewaretoken"}
                       ).status_code == 403
    resp = client.post("/portal/s/profile", form)
    assert resp.status_code == 302 and resp["Location"] == "/portal/s/?saved=profile#profile"
    customer.refresh_from_db()
    assert (customer.name, customer.email, customer.phone, customer.address_line1, customer.city,
            customer.zip_code, customer.country) == ("Globex Corporation", "ap@globex.example.com", "+1 555 0100",
                                                     "1 Main St", "Springfield", "12345", "US")
    saved = html(client.get(resp["Location"]))
    assert "profile was saved" in saved and 'value="Globex Corporation"' in saved


@pytest.mark.parametrize("changes, field, text", [
    ({"email": "not-an-email"}, "email", "valid email"),
    ({"name": "  "}, "name", "may not be blank"),
    ({"phone": "1" * 65}, "phone", "no more than 64"),
    ({"zipCode": "9" * 33}, "zipCode", "no more than 32"),
])
def test_invalid_profile_values_are_shown_next_to_their_field_and_nothing_changes(customer, create_session,
                                                                                  changes, field, text):
    client = opened(create_session(customer))
    resp = client.post("/portal/s/profile", profile_form(html(client.get("/portal/s/")), **changes))
    assert resp.status_code == 400
    error = re.search(rf'<p class="field-error" id="profile-{field}-error">([^<]*)</p>', html(resp))
    assert error and text in error.group(1)
    assert f'id="profile-{field}" name="{field}"' in html(resp) and 'aria-invalid="true"' in html(resp)
    before = Customer.objects.get(pk=customer.pk)
    assert (before.name, before.email, before.phone) == ("Globex Corp", "billing@globex.example.com", "")


def test_optional_profile_fields_can_be_cleared(customer, create_session):
    Customer.objects.filter(pk=customer.pk).update(phone="+1 555 0199", city="Springfield")
    client = opened(create_session(customer))
    assert client.post("/portal/s/profile", profile_form(html(client.get("/portal/s/")), phone="", city="")
                       ).status_code == 302
    customer.refresh_from_db()
    assert (customer.phone, customer.city) == ("", "")


def test_the_profile_form_edits_only_the_sessions_customer(book, customer, create_session):
    other = CustomerFactory(book=book, name="Initech", external_id="initech")
    client = opened(create_session(customer))
    form = profile_form(html(client.get("/portal/s/")), name="Renamed", id=str(other.id),
                        externalId="initech", netTerms="0")
    assert client.post("/portal/s/profile", form).status_code == 302
    other.refresh_from_db()
    customer.refresh_from_db()
    assert (other.name, customer.name, customer.external_id, customer.net_terms) == (
        "Initech", "Renamed", "globex", 30)


def test_the_profile_cannot_be_posted_after_the_session_ended(api, customer, create_session):
    session = create_session(customer)
    client = opened(session)
    form = profile_form(html(client.get("/portal/s/")), name="Too late")
    api.delete(f"/v1/portal-sessions/{session['id']}")
    assert client.post("/portal/s/profile", form).status_code == 410
    customer.refresh_from_db()
    assert customer.name == "Globex Corp"


# --------------------------------------------------------------------------- bad tokens

def test_too_many_unknown_links_from_one_network_get_429_but_a_real_link_still_opens(customer, create_session,
                                                                                    settings):
    settings.LINK_TOKEN_FAILURE_LIMIT = 3
    settings.LINK_TOKEN_FAILURE_WINDOW_SECONDS = 120
    session = create_session(customer)
    guesser = Client(REMOTE_ADDR="203.0.113.9")
    assert [guesser.get(f"/portal/guess-{n}").status_code for n in range(3)] == [404, 404, 404]
    blocked = guesser.get("/portal/guess-3")
    assert blocked.status_code == 429 and blocked["Retry-After"] == "120"
    assert guesser.get(link_path(session)).status_code == 200  # the same network's customer is never locked out
    assert PortalSession.objects.get(pk=session["id"]).used_at is not None
    assert guesser.get("/portal/guess-4").status_code == 429  # a valid link does not clear the count


def test_used_and_expired_links_do_not_count_as_bad_tokens(customer, create_session, settings):
    settings.LINK_TOKEN_FAILURE_LIMIT = 2
    session = create_session(customer)
    client = opened(session)
    for _ in range(4):
        assert client.get(link_path(session)).status_code == 410


def test_a_very_long_token_is_not_looked_up_and_counts_as_bad(customer, settings):
    settings.LINK_TOKEN_FAILURE_LIMIT = 1
    client = Client()
    assert client.get("/portal/" + "x" * 5000).status_code == 404
    assert client.get("/portal/another").status_code == 429


def test_the_scheduled_job_deletes_expired_browser_sessions(customer, create_session):
    session = create_session(customer)
    opened(session)
    assert Session.objects.count() == 1
    call_command("run_scheduled_jobs", "--now", iso(instant(session["expiresAt"]) - timedelta(minutes=1)),
                 stdout=StringIO())
    assert Session.objects.count() == 1
    call_command("run_scheduled_jobs", "--now", iso(instant(session["expiresAt"]) + timedelta(minutes=1)),
                 stdout=StringIO())
    assert Session.objects.count() == 0


def test_the_page_shows_the_customers_plan_history_with_scheduled_changes(api, book, customer, create_session):
    chain = billing_chain(api, book, [recurring("20")], customer=customer, start="2025-01-01T00:00:00Z")
    pro = create_plan(api, chain.agent.id, name="Pro plan")
    scale = create_plan(api, chain.agent.id, name="Scale plan")
    upgraded = ok(api.post(f"/v1/subscriptions/{chain.subscription['id']}/change-plan",
                           {"planId": pro["id"], "effectiveAt": "2025-03-17T12:00:00Z"}), 201)
    ok(api.post(f"/v1/subscriptions/{upgraded['id']}/change-plan",
                {"planId": scale["id"], "effectiveAt": "2099-01-01"}), 201)
    page = html(opened(create_session(customer)).get("/portal/s/"))
    history = page.split('id="plan-history"')[1].split("</ul>")[0]
    entries = re.findall(r"<li>(.*?)</li>", history, re.S)
    assert [" ".join(entry.split()) for entry in entries] == [
        '2099-01-01: Pro plan &rarr; Scale plan <span class="badge upcoming">scheduled</span>',
        f"2025-03-17: {chain.plan['name']} &rarr; Pro plan"]


@pytest.mark.parametrize("cookie", ['"\\000AAAAAAAAAA"', "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "abc\\351defghij", "short"])
def test_a_session_cookie_this_server_never_set_is_no_session_and_the_link_opens(customer, create_session, cookie):
    # Django's cookie parser turns a quoted `\000` into a NUL, and a NUL in the session lookup's parameter was a
    # DataError: a 500 after the link was marked used, so the customer's link was spent on an error page.
    session = create_session(customer)
    client = browser()
    resp = client.get(link_path(session), HTTP_COOKIE=f"sessionid={cookie}")
    assert resp.status_code == 200, resp.content[:300]
    assert re.fullmatch(r"[a-z0-9]{32}", client.cookies["sessionid"].value)
    assert client.get("/portal/s/").status_code == 200
    assert browser().get("/portal/s/", HTTP_COOKIE=f"sessionid={cookie}").status_code == 403


def test_a_database_failing_while_the_link_opens_leaves_the_link_unused(customer, create_session, monkeypatch):
    # The link used to be marked used (and committed) before its page was read: a database that stopped answering
    # then was a 503 page, and every later open "already used". Now it is spent with its page or not at all.
    from django.db import OperationalError

    import portal.pages

    session = create_session(customer)
    real = portal.pages.home_context

    def failing(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(portal.pages, "home_context", failing)
    assert browser().get(link_path(session)).status_code == 503
    assert PortalSession.objects.get(pk=session["id"]).used_at is None
    assert not Session.objects.exists()
    monkeypatch.setattr(portal.pages, "home_context", real)
    opened(session)
