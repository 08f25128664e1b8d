"""The console's lists and record pages at 1,366 px, in headless Chromium over the demo book (`manage.py seed_demo`,
written as of 2025-06-24T15:00Z): invoices in every state, usage events priced and unpriced, subscriptions with a
credit pool near empty, grants and customers. No page scrolls sideways, none shows raw JSON, an object's repr or
a decimal with its stored trailing zeros; the invoice page reads like the document and records a payment.

Each page is saved as a PNG under the test's tmp dir; set CONSOLE_SCREENSHOTS to a directory to keep copies.
"""
import os
import re
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from playwright.sync_api import expect

from billing.models import Invoice, Payment
from console.demo.book import OWNER_EMAIL
from tests.browser import chromium  # noqa: F401 (the fixture)
from tests.test_demo_screens import PASSWORD, demo, dollars, units  # noqa: F401 (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

WIDTH = 1366
# What a page must never show: raw JSON, Django's "<Model> object (<id>)", a decimal printed with all its
# stored places (3149.000000000000), an empty value printed as None.
NEVER_SHOWN = [re.compile(r'\{"'), re.compile(r"object \("), re.compile(r"\d\.\d*0{6,}\b"), re.compile(r"\bNone\b")]
SIDEWAYS = """() => ({
    page: document.documentElement.scrollWidth - window.innerWidth,
    boxes: Array.from(document.querySelectorAll('*'))
        .filter(element => ['auto', 'scroll'].includes(getComputedStyle(element).overflowX)
                           && element.scrollWidth > element.clientWidth + 1)
        .map(element => `${element.tagName.toLowerCase()}.${element.className}: `
                        + `${element.scrollWidth} > ${element.clientWidth}`),
})"""


@pytest.fixture
def console_page(demo, chromium, live_server, tmp_path):  # noqa: F811
    context = chromium.new_context(viewport={"width": WIDTH, "height": 900}, base_url=live_server.url)
    page = context.new_page()
    sign_in(page, OWNER_EMAIL)
    yield page
    context.close()
    if os.environ.get("CONSOLE_SCREENSHOTS"):
        keep = Path(os.environ["CONSOLE_SCREENSHOTS"])
        keep.mkdir(parents=True, exist_ok=True)
        for path in tmp_path.glob("*.png"):
            shutil.copyfile(path, keep / path.name)


def sign_in(page, email: str) -> None:
    page.goto("/admin/login/?next=/admin/")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("section.console-book")).to_be_visible()


def check_page(page, url: str, name: str, directory: Path) -> str:
    """Open `url`, check it fits the window and shows nothing raw; returns the page's text."""
    response = page.goto(url)
    assert response.status == 200, url
    page.wait_for_load_state()
    sideways = page.evaluate(SIDEWAYS)
    assert sideways["page"] <= 0 and sideways["boxes"] == [], (url, sideways)
    text = page.locator("body").inner_text()
    shown = [pattern.pattern for pattern in NEVER_SHOWN if pattern.search(text)]
    assert shown == [], (url, shown, [match.group(0) for pattern in NEVER_SHOWN for match in [pattern.search(text)]
                                      if match])
    page.screenshot(path=str(directory / f"{name}.png"), full_page=True)
    return text


def change_url(model: str, pk) -> str:
    return f"/admin/{model}/{pk}/change/"


def test_every_page_fits_1366_px_and_shows_no_raw_values(console_page, demo, tmp_path):
    page = console_page
    lists = {
        "invoices": "/admin/billing/invoice/",
        "usage-events": "/admin/customers/usageevent/",
        "unpriced-events": "/admin/customers/usageevent/?event_status__exact=NEEDS_COST_BACKFILL",
        "subscriptions": "/admin/billing/subscription/",
        "pools-near-empty": "/admin/billing/subscription/?pool_left=20",
        "credit-grants": "/admin/billing/creditgrant/",
        "pool-alerts": "/admin/billing/creditpoolalert/",
        "customers": "/admin/customers/customer/",
        "payments": "/admin/billing/payment/",
    }
    for name, url in lists.items():
        check_page(page, url, name, tmp_path)
        expect(page.locator("#result_list tbody tr").first).to_be_visible()

    invoices = demo.invoices()
    for status in ("draft", "issued", "paid", "overdue", "void"):
        invoice = next(row for row in invoices if row["status"] == status)
        check_page(page, change_url("billing/invoice", invoice["id"]), f"invoice-{status}", tmp_path)
    pool = demo.get("/v1/credit-balances", {"belowPercent": 20})["balances"][0]
    records = {
        "usage-event": demo.get("/v1/events", {"limit": 1})[0]["id"],
        "unpriced-event": demo.get("/v1/events", {"eventStatus": "NEEDS_COST_BACKFILL", "limit": 1})[0]["id"],
    }
    check_page(page, change_url("customers/usageevent", records["usage-event"]), "usage-event", tmp_path)
    check_page(page, change_url("customers/usageevent", records["unpriced-event"]), "unpriced-event", tmp_path)
    text = check_page(page, change_url("billing/subscription", pool["subscriptionId"]), "subscription", tmp_path)
    assert (f"{units(pool['remainingUnits'])} units left, top-ups included ({units(pool['remainingPercent'])}% of "
            f"the {units(pool['poolSizeUnits'])}-unit pool of a period)") in text
    page.goto(f"/admin/billing/creditgrant/?q={pool['subscriptionName']}")
    with page.expect_navigation():
        page.locator("#result_list tbody tr th a").first.click()
    check_page(page, page.url, "credit-grant", tmp_path)
    check_page(page, change_url("customers/customer", invoices[0]["customerId"]), "customer", tmp_path)
    # A related row's link sits on its row's line: Django's put it on a line of its own above the row's cells,
    # where it read as the link of the row above.
    rows = page.locator(".inline-group tr.has_original").all()
    assert rows
    for row in rows:
        link, first_value = row.locator("td.original a").bounding_box(), row.locator("td").nth(1).locator("p")
        value = first_value.bounding_box()
        assert abs(link["y"] + link["height"] / 2 - (value["y"] + value["height"] / 2)) < value["height"] / 2, (
            link, value)


def test_the_invoice_page_reads_like_the_document_and_records_a_payment(console_page, demo, tmp_path):
    page = console_page
    overdue = demo.get(f"/v1/invoices/{demo.invoices(status='overdue')[0]['id']}")
    invoice = Invoice.objects.get(pk=overdue["id"])
    assert invoice.pay_token_nonce  # a sent invoice has a pay link, whose secret the page never shows
    page.goto(change_url("billing/invoice", overdue["id"]))
    document = page.locator("article.console-document")
    expect(document.locator(".console-seller")).to_contain_text("Demo Agents Inc.")
    expect(document.locator(".console-customer")).to_contain_text(invoice.customer.name)
    expect(document.locator(".console-facts")).to_contain_text(overdue["periodStart"][:10] + " to ")
    lines = document.locator("table.console-lines tbody tr")
    expect(lines).to_have_count(len(overdue["lines"]))
    for row, line in zip(lines.all(), overdue["lines"]):
        cells = row.locator("td")
        quantity = Decimal(line["quantity"])
        expect(cells.nth(1)).to_have_text(f"{int(quantity):,}" if quantity == quantity.to_integral_value()
                                          else f"{quantity.normalize():,f}")
        expect(cells.nth(3)).to_have_text(dollars(Decimal(line["amount"])))
    expect(document.locator("[data-total=Total]")).to_have_text(dollars(Decimal(overdue["total"])))
    expect(document.locator("[data-total='Amount due']")).to_have_text(dollars(Decimal(overdue["amountDue"])))
    assert invoice.pay_token_nonce not in page.content()
    pdf = page.request.get(page.get_by_role("link", name="Download PDF").get_attribute("href"))
    assert pdf.status == 200 and pdf.headers["content-type"] == "application/pdf" and pdf.body().startswith(b"%PDF")
    page.screenshot(path=str(tmp_path / "invoice-before-payment.png"), full_page=True)

    actions = page.locator("aside.console-actions")
    actions.get_by_label("Amount").fill(str(overdue["amountDue"]))
    actions.get_by_label("Reference").fill("WIRE-2025-06-0042")
    actions.get_by_role("button", name="Record payment").click()
    due = dollars(Decimal(overdue["amountDue"]))
    expect(page.locator(".messagelist")).to_contain_text(
        f"{overdue['invoiceNumber']}: payment of {due} (WIRE-2025-06-0042) recorded.")
    expect(page.locator(".console-facts .console-status")).to_have_text("Paid")
    expect(page.locator(".console-payments")).to_contain_text("WIRE-2025-06-0042")
    expect(page.locator("[data-total='Amount due']")).to_have_text("$0.00")
    assert demo.get(f"/v1/invoices/{overdue['id']}")["status"] == "paid"
    payment = Payment.objects.get(provider_payment_id="WIRE-2025-06-0042")
    assert (payment.provider, payment.amount) == ("manual", Decimal(str(overdue["amountDue"])))
    page.screenshot(path=str(tmp_path / "invoice-paid.png"), full_page=True)


@pytest.mark.parametrize("operator", ["owner", "superuser"])
def test_every_list_of_the_console_fits_1366_px(console_page, demo, operator):
    """docs/console.md: "Lists fit a 1,366 px wide window with their filters beside them", every one of them; also
    for a superuser (the quickstart's console user), whose lists have one more column, the rows' book."""
    from django.contrib import admin
    from django.urls import reverse

    from accounts.models import User

    page, too_wide = console_page, {}
    if operator == "superuser":
        User.objects.create_superuser(email="root@example.com", password=PASSWORD)
        page.context.clear_cookies()
        sign_in(page, "root@example.com")
    for model in admin.site._registry:
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        response = page.goto(url)
        if response.status != 200:  # a list the owner may not open (superusers only)
            continue
        page.wait_for_load_state()
        sideways = page.evaluate(SIDEWAYS)
        if sideways["page"] > 0 or sideways["boxes"]:
            too_wide[url] = sideways
    assert too_wide == {}, "\n".join(f"{url}: {found}" for url, found in too_wide.items())


def test_the_pages_that_create_strategies_and_subscriptions_fit_1366_px(console_page, demo, tmp_path):
    """The plan page's "Add pricing strategy" page and the subscription list's "Add subscription" page, over the demo
    book: each fits the window and shows nothing raw, and each form offers what it creates from."""
    page = console_page
    plan = demo.get("/v1/pricing-plans")["results"][0]
    text = check_page(page, f"/admin/billing/pricingplan/{plan['id']}/add-strategy/", "add-strategy", tmp_path)
    assert "Tiers" in text and "Charge type" in text
    text = check_page(page, "/admin/billing/subscription/add/", "add-subscription", tmp_path)
    assert "Book" in text and "Demo Organization (test)" in text  # the book first, then its records
