"""The demo book in a browser: `manage.py seed_demo` into the test database, then one headless Chromium session
against a live server walks the console (dashboard, invoice list, an invoice, the pools near empty and one
pool) and a customer's portal. Every page shows the seeded figures, each equal to what the API answers for the
same book, and no page logs an error on the browser console.

Each page is saved as a PNG under the test's tmp dir; set DEMO_SCREENSHOTS to a directory (for example
`$PWD/var/screenshots`) to keep copies there.
"""
import json
import os
import shutil
from datetime import datetime, timezone
from decimal import ROUND_HALF_UP, Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from accounts.models import User
from core import clock
from console.demo.book import OWNER_EMAIL
from tests.browser import chromium  # noqa: F401 (the fixture)
from tests.conftest import KeyClient

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

PASSWORD = "demo-console-pass-1"
# The demo is written as of this instant, and the live server's clock is held there: the month so far has 24
# days of usage whatever day the suite runs on.
NOW = datetime(2025, 6, 24, 15, 0, tzinfo=timezone.utc)
POOL_CUSTOMER = "stark-industries"  # the demo's pool near empty (console/demo/book.py)


def dollars(amount: Decimal) -> str:
    """A dollar amount as the console and the portal print it: grouped, two places, half up."""
    return f"${amount.quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):,.2f}"


def units(amount: Decimal) -> str:
    return f"{amount.normalize():,f}" if amount != amount.to_integral_value() else f"{int(amount):,}"


class DemoApi:
    """The seeded book's API through the key `seed_demo` printed; numbers read as Decimal, as they are sent."""

    def __init__(self, raw_key: str):
        self.client = KeyClient(raw_key)

    def get(self, path: str, params: dict | None = None):
        response = self.client.get(path, params or {})
        assert response.status_code == 200, (path, response.content[:300])
        return json.loads(response.content, parse_float=Decimal, parse_int=Decimal)

    def invoices(self, **params) -> list[dict]:
        rows, offset = [], 0
        while True:
            page = self.get("/v1/invoices", {**params, "limit": 100, "offset": offset})
            rows += page["data"]
            if not page["hasMore"]:
                return rows
            offset += len(page["data"])


@pytest.fixture
def demo(settings, live_server, monkeypatch) -> DemoApi:
    """The demo book as of NOW, with the clock held there for the live server's pages and the test's API reads;
    its owner is a staff user with a password."""
    monkeypatch.setattr(clock, "now", lambda: NOW)
    settings.PUBLIC_BASE_URL = live_server.url
    out = StringIO()
    call_command("seed_demo", stdout=out)
    owner = User.objects.get(email=OWNER_EMAIL)
    owner.is_staff = True
    owner.set_password(PASSWORD)
    owner.save()
    return DemoApi(out.getvalue().strip().splitlines()[-1])


class Screens:
    """One browser page for the whole walk: its console errors and its screenshots."""

    def __init__(self, page, directory: Path):
        self.page, self.directory, self.errors, self.saved = page, directory, [], []
        page.on("console", lambda message: self.errors.append(
            f"{page.url}: {message.text} ({message.location.get('url')})") if message.type == "error" else None)
        page.on("pageerror", lambda error: self.errors.append(f"{page.url}: {error}"))

    def shot(self, name: str) -> Path:
        path = self.directory / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        assert path.read_bytes().startswith(b"\x89PNG") and path.stat().st_size > 20_000, path
        self.saved.append(path)
        return path


@pytest.fixture
def screens(demo, chromium, live_server, tmp_path):  # noqa: F811
    context = chromium.new_context(viewport={"width": 1280, "height": 1000}, base_url=live_server.url)
    screens = Screens(context.new_page(), tmp_path)
    yield screens
    context.close()
    if os.environ.get("DEMO_SCREENSHOTS"):
        keep = Path(os.environ["DEMO_SCREENSHOTS"])
        keep.mkdir(parents=True, exist_ok=True)
        for path in screens.saved:
            shutil.copyfile(path, keep / path.name)


def figure(page, name: str):
    return page.locator(f"section.console-book [data-figure={name}] .value")


def bar_heights(chart) -> list[float]:
    return [float(height) for height in chart.locator("rect.bar").evaluate_all(
        "bars => bars.map(bar => bar.getAttribute('height'))")]


def test_the_seeded_console_and_portal_show_the_books_figures(demo, screens):
    page = screens.page
    today = NOW.date()

    # Sign in: the dashboard opens on the demo's test books.
    page.goto("/admin/login/?next=/admin/")
    page.get_by_label("Email").fill(OWNER_EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    book = page.locator("section.console-book")
    expect(book.get_by_role("heading")).to_have_text("Demo Organization · test books · June 2025 to date")
    month = {"startDate": today.replace(day=1).isoformat()}
    revenue = demo.get("/v1/analytics/revenue", month)
    expect(figure(page, "revenue")).to_have_text(dollars(revenue["revenue"]))
    # Cost and margin the API's, in cents (the demo's are not under a cent).
    expect(figure(page, "cost")).to_have_text(dollars(revenue["cost"]))
    expect(figure(page, "margin")).to_have_text(dollars(revenue["margin"]).replace("$-", "-$"))
    run_rate = demo.get("/v1/analytics/mrr", {"variant": "runRate"})["mrr"]
    canonical = demo.get("/v1/analytics/mrr")["mrr"]
    assert run_rate > 0 and canonical > 0
    expect(figure(page, "mrr-run-rate")).to_have_text(dollars(run_rate))
    expect(figure(page, "mrr-canonical")).to_have_text(dollars(canonical))
    overdue = demo.invoices(status="overdue")
    pools = demo.get("/v1/credit-balances", {"belowPercent": 20})["balances"]
    assert overdue and pools
    expect(figure(page, "overdue")).to_have_text(str(len(overdue)))
    expect(figure(page, "pools")).to_have_text(str(len(pools)))
    unpriced = demo.client.get("/v1/events", {"eventStatus": "NEEDS_COST_BACKFILL", "limit": 1})
    assert int(unpriced["X-Total-Count"]) > 0
    expect(figure(page, "unpriced")).to_have_text(unpriced["X-Total-Count"])
    emptiest = pools[0]
    assert emptiest["customerExternalId"] == POOL_CUSTOMER
    expect(book.locator(".console-pools")).to_contain_text(
        f"{emptiest['subscriptionName']} ({emptiest['customerName']}): {units(emptiest['remainingPercent'])}% left")
    chart = book.locator("figure.console-chart svg")
    expect(chart.locator("rect.bar")).to_have_count(today.day)  # every day of the month so far
    cost_by_day = demo.get("/v1/analytics/cost", {**month, "endDate": today.isoformat()})
    assert sum(1 for height in bar_heights(chart) if height > 0) == sum(1 for day in cost_by_day["byDay"]
                                                                          if day["cost"] > 0) > 0
    screens.shot("console-dashboard")

    # The invoice list: every invoice of the book, in every state, under the seeded customers' names.
    invoices = demo.invoices()
    page.goto("/admin/billing/invoice/")
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(len(invoices))
    shown = rows.evaluate_all("""rows => rows.map(row => ['invoice_number', 'customer', 'status', 'total']
        .map(field => row.querySelector('.field-' + field).innerText.trim()))""")
    customers = {row["id"]: row["name"] for row in demo.get("/v1/customers", {"limit": 100})}
    assert sorted(shown) == sorted([invoice["invoiceNumber"], customers[invoice["customerId"]],
                                    invoice["status"].capitalize(), dollars(invoice["total"])] for invoice in invoices)
    assert {status for _, _, status, _ in shown} == {"Draft", "Issued", "Paid", "Overdue", "Void"}
    screens.shot("console-invoices")

    # A paid invoice: its lines and its payment, at the API's amounts.
    paid = demo.get(f"/v1/invoices/{demo.invoices(status='paid')[0]['id']}")
    rows.get_by_role("link", name=paid["invoiceNumber"], exact=True).click()
    expect(page.locator("h2").filter(has_text=paid["invoiceNumber"])).to_be_visible()
    expect(page.locator("[data-total=Total]")).to_have_text(dollars(paid["total"]))
    lines = page.locator("table.console-lines tbody tr")
    expect(lines).to_have_count(len(paid["lines"]))
    for line in paid["lines"]:
        expect(lines.filter(has_text=line["description"])).to_contain_text(dollars(line["amount"]))
    expect(page.locator(".console-payments")).to_contain_text(dollars(paid["payments"][0]["amount"]))
    screens.shot("console-invoice")

    # Credit pools: the dashboard's link lists the pools near empty; the emptiest shows its balance.
    page.goto("/admin/")
    figure(page, "pools").click()
    rows = page.locator("#result_list tbody tr")
    expect(rows).to_have_count(len(pools))
    expect(rows.first).to_contain_text(emptiest["subscriptionName"])
    screens.shot("console-pools")
    rows.get_by_role("link", name=emptiest["subscriptionName"], exact=True).click()
    expect(page.locator(".field-credit_pool .readonly")).to_contain_text(
        f"{units(emptiest['remainingUnits'])} units left, top-ups included ({units(emptiest['remainingPercent'])}% "
        f"of the {units(emptiest['poolSizeUnits'])}-unit pool of a period), {units(emptiest['consumedUnits'])} used "
        "this period")
    expect(page.locator("#credit_grants-group tbody tr").first).to_be_visible()
    screens.shot("console-pool")

    # The portal of the customer whose pool is nearly used up.
    session = demo.client.post("/v1/portal-sessions", {"customerExternalId": POOL_CUSTOMER})
    assert session.status_code == 201, session.json()
    assert page.goto(session.json()["url"]).status == 200
    expect(page.get_by_role("heading", name=emptiest["customerName"])).to_be_visible()
    expect(page.locator(".topbar")).to_contain_text("Demo Agents Inc.")
    finalized = [invoice for invoice in demo.invoices(customerExternalId=POOL_CUSTOMER)
                 if invoice["status"] != "draft"]
    portal_rows = page.locator("#invoices tbody tr")
    expect(portal_rows).to_have_count(len(finalized))
    for invoice in finalized:
        expect(portal_rows.filter(has_text=invoice["invoiceNumber"])).to_contain_text(dollars(invoice["total"]))
    expect(page.locator("#credits")).to_contain_text(
        f"{units(emptiest['consumedUnits'])} of {units(emptiest['poolSizeUnits'])} units used")
    usage_chart = page.locator("#usage svg.chart")
    expect(usage_chart).to_be_visible()
    assert any(height > 0 for height in bar_heights(usage_chart))
    period_events = demo.client.get("/v1/events", {"customerExternalId": POOL_CUSTOMER, "limit": 1,
                                                   "startDate": emptiest["periodStart"]})["X-Total-Count"]
    assert int(period_events) > 0
    expect(page.locator("#usage > p")).to_contain_text(f"{int(period_events):,} events")
    expect(page.locator("#usage table tbody tr")).to_contain_text(units(emptiest["consumedUnits"]))
    screens.shot("portal")

    assert not screens.errors, screens.errors
