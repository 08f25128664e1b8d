"""End to end in headless Chromium (driven by Playwright for Python) against a live server:
a fresh link shows the invoices and the usage chart, the customer edits the profile, downloads a PDF, pays an
invoice, and a second open of the link is the "already used" page.

tests/browser.py finds Chromium (scripts/services.sh brings it, or says why these tests are skipped); Playwright
never downloads a browser.
Set PORTAL_SCREENSHOT=docs/images/portal.png to refresh the README's screenshot from the first test.
"""
import os
import shutil
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest
from playwright.sync_api import expect

from customers.models import Customer
from portal.models import PortalSession
from tests.billing.invoice_support import WEBHOOK_SECRET, billing_chain, pay, recurring
from tests.billing.pools import pool_strategy
from tests.billing.support import create_strategies, ok
from tests.browser import chromium, csp_violations  # noqa: F401 (the fixture)
from tests.factories import CustomerFactory, UsageEventFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

@pytest.fixture
def page(account, chromium):
    context = chromium.new_context(viewport={"width": 1200, "height": 900}, accept_downloads=True)
    page = context.new_page()
    refused = csp_violations(page)
    yield page
    context.close()
    assert not refused, refused  # every page works under its Content-Security-Policy


def month_start(moment: datetime, months_back: int = 0) -> datetime:
    year, month = moment.year, moment.month - months_back
    while month < 1:
        year, month = year - 1, month + 12
    return datetime(year, month, 1, tzinfo=timezone.utc)


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def account(api, book, client, settings, live_server):
    """Globex: a translation plan (monthly fee and a pool of 1,000 pages) since three months ago, an invoice for
    each full month (the older two paid), and usage on every day of the current month so far."""
    settings.PUBLIC_BASE_URL = live_server.url
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.PAYMENTS_LOCAL_CHECKOUT = True  # the customer pays through the development checkout
    now = datetime.now(timezone.utc)
    customer = CustomerFactory(book=book, name="Globex Corp", external_id="globex", email="billing@globex.example.com",
                               address_line1="1 Main Street", city="Springfield", zip_code="12345", country="US")
    chain = billing_chain(api, book, [recurring("49")], customer=customer, start=iso(month_start(now, 3)))
    ok(api.patch(f"/v1/pricing-plans/{chain.plan['id']}", {"name": "Translation Pro"}))
    ok(api.patch(f"/v1/signals/{chain.signal.id}", {"name": "pages translated", "shortName": "pages translated"}))
    chain.signal.refresh_from_db()
    create_strategies(api, chain.plan["id"], [pool_strategy(chain, size=1000, price=250, overage="0.30")])
    invoices = []
    for months_back in (3, 2, 1):
        start, end = month_start(now, months_back), month_start(now, months_back - 1)
        for day in range(0, 28, 3):
            UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal(20 + day),
                              usage_date=start + timedelta(days=day, hours=10))
        invoice = ok(api.post("/v1/invoices/generate", {"customerId": str(customer.id), "subscriptionId": chain.
                                                        subscription["id"], "billingPeriodStart": iso(start),
                                                        "billingPeriodEnd": iso(end)}), 201)
        ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
        invoices.append(ok(api.get(f"/v1/invoices/{invoice['id']}")))
    for invoice in invoices[:2]:
        assert pay(client, invoice).status_code == 200
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    for day in range((today - month_start(now)).days + 1):
        for event in range(1 + (day * 7) % 5):
            UsageEventFactory(book=book, customer=customer, signal=chain.signal, quantity=Decimal(3 + event),
                              usage_date=month_start(now) + timedelta(days=day, minutes=event))
    session = ok(api.post("/v1/portal-sessions", {"customerExternalId": "globex",
                                                  "returnUrl": "https://app.example.com/account"}), 201)
    return customer, invoices, session


def test_a_fresh_link_shows_the_invoices_and_the_usage_chart(page, account, tmp_path):
    customer, invoices, session = account
    response = page.goto(session["url"])
    assert response.status == 200
    expect(page.get_by_role("heading", name="Globex Corp")).to_be_visible()
    invoice_rows = page.locator("#invoices tbody tr")
    expect(invoice_rows).to_have_count(3)
    for invoice in invoices:
        expect(page.locator("#invoices")).to_contain_text(invoice["invoiceNumber"])
    expect(invoice_rows.filter(has_text="paid")).to_have_count(2)
    expect(page.get_by_role("link", name="Pay $")).to_have_count(1)
    chart = page.locator("#usage svg.chart")
    expect(chart).to_be_visible()
    assert chart.locator("rect.bar").count() == datetime.now(timezone.utc).day
    assert chart.bounding_box()["width"] > 300
    expect(page.locator("#credits")).to_contain_text("of 1,000 units used")
    expect(page.get_by_role("link", name="Return to")).to_have_attribute("href", "https://app.example.com/account")
    assert PortalSession.objects.get(pk=session["id"]).used_at is not None
    screenshot = tmp_path / "portal.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    if os.environ.get("PORTAL_SCREENSHOT"):
        shutil.copyfile(screenshot, Path(os.environ["PORTAL_SCREENSHOT"]))


def test_the_customer_edits_the_profile(page, account):
    customer, _, session = account
    page.goto(session["url"])
    page.get_by_label("Billing email").fill("not-an-email")
    page.get_by_role("button", name="Save profile").click()
    expect(page.locator("#profile-email-error")).to_contain_text("valid email")
    page.get_by_label("Name").fill("Globex Corporation")
    page.get_by_label("Billing email").fill("ap@globex.example.com")
    page.get_by_label("Phone").fill("+1 555 0100")
    page.get_by_role("button", name="Save profile").click()
    expect(page.locator("#profile .notice")).to_contain_text("profile was saved")
    expect(page.get_by_role("heading", name="Globex Corporation")).to_be_visible()
    customer.refresh_from_db()
    assert (customer.name, customer.email, customer.phone) == ("Globex Corporation", "ap@globex.example.com",
                                                               "+1 555 0100")


def test_the_customer_downloads_a_pdf_and_pays_the_open_invoice(page, account, api):
    _, invoices, session = account
    page.goto(session["url"])
    with page.expect_download() as download:
        page.locator("#invoices tbody tr").first.get_by_role("link", name="PDF").click()
    assert download.value.suggested_filename == f"invoice-{invoices[2]['invoiceNumber']}.pdf"
    page.get_by_role("link", name="Pay $").click()
    page.get_by_role("button", name="Pay $").click()
    expect(page.locator(".notice")).to_contain_text("is paid")
    page.get_by_role("link", name="Back to your billing portal").click()
    expect(page.locator("#invoices tbody tr").filter(has_text="paid")).to_have_count(3)
    assert ok(api.get(f"/v1/invoices/{invoices[2]['id']}"))["status"] == "paid"


def test_a_second_open_of_the_link_is_the_already_used_page(account, page, chromium):
    _, _, session = account
    assert page.goto(session["url"]).status == 200
    again = page.goto(session["url"])
    assert again.status == 410
    expect(page.get_by_role("heading")).to_have_text("This link was already used")
    page.get_by_role("link", name="continue to your billing portal").click()
    expect(page.get_by_role("heading", name="Globex Corp")).to_be_visible()
    other_browser = chromium.new_context()
    try:
        elsewhere = other_browser.new_page()
        assert elsewhere.goto(session["url"]).status == 410
        expect(elsewhere.get_by_role("heading")).to_have_text("This link was already used")
        assert elsewhere.goto(f"{session['url'].rsplit('/portal/', 1)[0]}/portal/s/").status == 403
    finally:
        other_browser.close()
    assert Customer.objects.get(external_id="globex").name == "Globex Corp"


def test_on_a_phone_every_table_fits_the_screen(account, chromium, api):
    """At 390px the credit-balances table overflowed the page (its gauge and "... this period + ... top-ups" past the
    card's edge) while the other tables turn into one card per row: it does so too, and nothing scrolls sideways."""
    customer, _, session = account
    [subscription] = ok(api.get("/v1/subscriptions", {"customerId": str(customer.id)}))
    ok(api.post(f"/v1/subscriptions/{subscription['id']}/credit-topup", {"units": 500, "idempotencyKey": "phone"}), 201)
    context = chromium.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=1)
    try:
        phone = context.new_page()
        refused = csp_violations(phone)
        assert phone.goto(session["url"]).status == 200
        expect(phone.locator("#credits")).to_contain_text("top-ups")
        for table in ("#invoices", "#credits"):
            assert phone.locator(f"{table} tbody tr").first.evaluate("row => getComputedStyle(row).display") == "block"
        card = phone.locator("#credits").bounding_box()
        for cell in phone.locator("#credits td").all():
            box = cell.bounding_box()
            assert box["x"] + box["width"] <= card["x"] + card["width"] + 0.5, cell.inner_text()
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        assert not refused, refused
    finally:
        context.close()
