"""End to end in headless Chromium against a live server: a staff member signs in to the console, reads the
dashboard and follows its links, sends an invoice and tops up a credit pool through the list actions.

The clock is frozen at 2025-06-24T15:00Z (the live server runs in this process). Set
CONSOLE_SCREENSHOT=$PWD/docs/images/console.png to refresh the screenshot in the README and docs/console.md.
"""
import os
import shutil
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from billing.models import CreditGrant, Invoice
from accounts.models import User
from accounts.services import member_ensure
from core import clock
from tests.analytics.support import record
from tests.billing.invoice_support import WEBHOOK_SECRET, billing_chain, credit_pool, generate, pay, recurring, usage
from tests.billing.support import ok
from tests.browser import chromium, csp_violations  # noqa: F401 (the fixture)
from tests.factories import CustomerFactory, ServiceEntryFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True, serialized_rollback=True)]

NOW = datetime(2025, 6, 24, 15, 0, tzinfo=timezone.utc)
EMAIL, PASSWORD = "ops@acme-agents.example.com", "console-pass-1"


def llm_record(customer, agent, signal, when: datetime, *, quantity, cost_cents, model="support-llm"):
    return {"customerExternalId": customer, "agentCode": agent, "signalName": signal, "quantity": quantity,
            "usageDate": when.strftime("%Y-%m-%dT%H:%M:%SZ"), "model": model, "modelProvider": "testai",
            "inputTokens": cost_cents * 100, "outputTokens": 0}


@pytest.fixture
def business(api, book, org, client, settings, monkeypatch):
    """Acme Agents' test books in June 2025: Globex on a support plan since March (April's invoice overdue, May's
    issued, June's a draft), Initech's translation pool nearly used up, daily usage, and a few events of a model
    the catalog does not know."""
    current = {"now": datetime(2025, 4, 30, 12, 0, tzinfo=timezone.utc)}
    monkeypatch.setattr(clock, "now", lambda: current["now"])
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    ServiceEntryFactory(canonical_name="support-llm", provider="testai", input_cost=Decimal("0.0001"),
                        output_cost=Decimal("0"))
    globex = billing_chain(api, book, [recurring("490"), usage("0.40")], start="2025-03-01T00:00:00Z",
                           name="Support Pro",
                           customer=CustomerFactory(book=book, name="Globex Corp", external_id="globex",
                                                    email="ap@globex.example.com"))
    april = ok(generate(api, globex, ("2025-04-01T00:00:00Z", "2025-05-01T00:00:00Z")), 201)
    ok(api.post(f"/v1/invoices/{april['id']}/send", {}))
    current["now"] = datetime(2025, 5, 31, 12, 0, tzinfo=timezone.utc)
    may = ok(generate(api, globex, ("2025-05-01T00:00:00Z", "2025-06-01T00:00:00Z")), 201)
    ok(api.post(f"/v1/invoices/{may['id']}/send", {}))
    current["now"] = NOW
    call_command("run_scheduled_jobs", "--now", NOW.isoformat(), stdout=StringIO())  # periods roll, April is overdue
    assert pay(client, april, amount_cents=20000).status_code == 200
    initech = billing_chain(api, book, [credit_pool(1000, 250, "0.30")], start="2025-06-01T00:00:00Z",
                            name="Translation pool",
                            customer=CustomerFactory(book=book, name="Initech", external_id="initech",
                                                     email="billing@initech.example.com"))
    month = datetime(2025, 6, 1, 9, 0, tzinfo=timezone.utc)
    records = [llm_record("globex", globex.agent.agent_code, globex.signal.name, month + timedelta(days=day),
                          quantity=40 + (day * 13) % 35, cost_cents=350 + (day * 37) % 400) for day in range(24)]
    records += [llm_record("initech", initech.agent.agent_code, initech.signal.name,
                           month + timedelta(days=day, hours=2), quantity=87, cost_cents=120 + (day * 53) % 260)
                for day in range(0, 20, 2)]
    records += [llm_record("globex", globex.agent.agent_code, globex.signal.name, month + timedelta(days=day, hours=5),
                           quantity=1, cost_cents=1, model="acme-ft-v2") for day in (20, 22, 23)]
    record(api, *records)
    june = ok(generate(api, globex, None), 201)  # the current period
    member_ensure(organization=org, email=EMAIL, role="owner")
    operator = User.objects.get(email=EMAIL)
    operator.is_staff = True
    operator.set_password(PASSWORD)
    operator.save()
    return june


@pytest.fixture
def page(business, chromium, live_server):  # noqa: F811
    context = chromium.new_context(viewport={"width": 1280, "height": 1000}, base_url=live_server.url)
    page = context.new_page()
    refused = csp_violations(page)
    page.goto("/admin/login/?next=/admin/%3Fenvironment%3Dtest")
    page.get_by_label("Email").fill(EMAIL)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    yield page
    context.close()
    assert not refused, refused  # every page works under its Content-Security-Policy


def run_action(page, row_text: str, action_label: str) -> None:
    page.locator("#result_list tbody tr").filter(has_text=row_text).locator("input.action-select").check()
    page.locator("select[name=action]").select_option(label=action_label)
    page.get_by_role("button", name="Go").click()


def test_the_dashboard_shows_the_months_figures_and_links_to_the_lists(page, tmp_path):
    book = page.locator("section.console-book")
    expect(book.get_by_role("heading")).to_contain_text("Acme Agents · test books · June 2025 to date")
    expect(book.locator("[data-figure=overdue] .value")).to_have_text("1")
    expect(book.locator("[data-figure=pools] .value")).to_have_text("1")
    expect(book.locator("[data-figure=unpriced] .value")).to_have_text("3")
    expect(book.locator(".console-pools")).to_contain_text("Translation pool (Initech): 13% left")
    expect(book.locator("svg rect.bar")).to_have_count(24)
    screenshot = tmp_path / "console.png"
    page.screenshot(path=str(screenshot), full_page=True)
    assert screenshot.read_bytes().startswith(b"\x89PNG")
    if os.environ.get("CONSOLE_SCREENSHOT"):
        shutil.copyfile(screenshot, Path(os.environ["CONSOLE_SCREENSHOT"]))
    book.locator("[data-figure=unpriced] .value").click()
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    expect(page.locator("#result_list")).to_contain_text("acme-ft-v2")


def test_an_operator_sends_an_invoice_and_tops_up_a_pool_from_the_lists(page, business):
    page.goto("/admin/billing/invoice/")
    run_action(page, business["invoiceNumber"], "Send the selected invoices (finalizing drafts) to their customers")
    # June runs until the 30th: asked first, as the invoice's page warns.
    expect(page.locator("#content")).to_contain_text("bill a period that has not ended")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".messagelist")).to_contain_text(
        f"{business['invoiceNumber']} sent to ap@globex.example.com (issued).")
    assert Invoice.objects.get(pk=business["id"]).status == "issued"
    page.goto("/admin/billing/subscription/")
    run_action(page, "Translation pool", "Top up credits…")
    page.get_by_label("Units").fill("500")
    page.get_by_label("Note").fill("Goodwill for the June launch")
    page.get_by_role("button", name="Top up").click()
    expect(page.locator(".messagelist")).to_contain_text("Translation pool: 500 units added; 630 units left.")
    grant = CreditGrant.objects.get(kind="topup")
    assert (grant.units, grant.note) == (Decimal(500), "Goodwill for the June launch")
