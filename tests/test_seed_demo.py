"""`manage.py seed_demo`: the demo book is written once, and every read the console, the portal and a client
start from answers with something in it, through the key the command printed."""
import re
from io import StringIO

import pytest
from django.apps import apps
from django.core.management import call_command
from django.db import transaction
from django.test import Client

from accounts.models import ApiKey, Book, User
from billing.models import Invoice, Payment
from core import clock
from console.demo.book import ORGANIZATION, OWNER_EMAIL
from tests.conftest import KeyClient

pytestmark = pytest.mark.django_db
INVOICE_STATES = ("draft", "issued", "paid", "overdue", "void")


def seed() -> tuple[str, dict[str, int]]:
    """Run the command; its output, and the counts it printed (`  name: count` lines)."""
    out = StringIO()
    call_command("seed_demo", stdout=out)
    text = out.getvalue()
    return text, {name: int(count) for name, count in re.findall(r"^  ([a-z ]+): (\d+)$", text, re.MULTILINE)}


def book_rows(book: Book) -> dict[str, int]:
    """Rows of every table of the book's records (API keys aside: each run mints one)."""
    return {model._meta.label: model.objects.filter(book=book).count() for model in apps.get_models()
            if any(field.name == "book" for field in model._meta.fields) and model is not ApiKey}


def demo_book() -> Book:
    return Book.objects.get(organization__name=ORGANIZATION, environment="test")


@pytest.fixture(scope="module")
def seeded_key(django_db_setup, django_db_blocker):
    """One demo book for the module's read tests (each test's own transaction nests inside this one, which is
    rolled back at the end): the key the command printed last."""
    with django_db_blocker.unblock(), transaction.atomic():
        text, _ = seed()
        yield text.strip().splitlines()[-1]
        transaction.set_rollback(True)


@pytest.fixture
def seeded(seeded_key) -> KeyClient:
    return KeyClient(seeded_key)


def test_seeding_twice_writes_the_book_once_and_prints_a_working_key_each_time():
    first_text, first_counts = seed()
    rows = book_rows(demo_book())
    second_text, second_counts = seed()

    assert "seeded the test book of Demo Organization" in first_text
    assert "already has customers: left as it is" in second_text
    assert second_counts == first_counts and book_rows(demo_book()) == rows
    assert all(first_counts[f"invoices {state}"] > 0 for state in INVOICE_STATES), first_counts
    assert first_counts["customers"] == 7 and first_counts["usage events"] > 1000
    for text in (first_text, second_text):
        key = text.strip().splitlines()[-1]
        assert key.startswith("svc_sk_test_")
        resp = KeyClient(key).get("/v1/verify")
        assert resp.status_code == 200, resp.json()


def test_the_analytics_reads_answer_with_the_seeded_usage(seeded):
    today = clock.now().date()
    usage = seeded.get("/v1/analytics/usage").json()
    assert usage["summary"]["totalEvents"] > 0 and usage["summary"]["totalCost"] > 0
    cost = seeded.get("/v1/analytics/cost", {"startDate": today.replace(day=1).isoformat(),
                                             "endDate": today.isoformat()}).json()
    assert cost["cost"] > 0, cost
    revenue = seeded.get("/v1/analytics/revenue").json()
    assert revenue["revenue"] > 0 and revenue["cost"] > 0 and revenue["billed"] > 0
    assert seeded.get("/v1/analytics/mrr").json()["mrr"] > 0
    assert seeded.get("/v1/analytics/mrr", {"variant": "runRate"}).json()["mrr"] > 0


def test_the_credit_balances_show_a_pool_near_empty(seeded):
    balances = seeded.get("/v1/credit-balances").json()["balances"]
    assert len(balances) == 2
    emptiest = balances[0]
    assert emptiest["customerExternalId"] == "stark-industries"
    assert 0 < emptiest["remainingPercent"] <= 20 and not emptiest["implicitFullPool"]
    # It starts on its billing day: no stub period billed at the pool's whole price.
    subscription = seeded.get(f"/v1/subscriptions/{emptiest['subscriptionId']}").json()
    start_day, billing_day = int(subscription["startDate"][8:10]), subscription["billingDay"]
    assert start_day == billing_day or billing_day > 28 and start_day >= 28  # a short month ends before it


def test_the_invoice_list_has_an_invoice_in_every_state(seeded):
    for state in INVOICE_STATES:
        invoices = seeded.get("/v1/invoices", {"status": state}).json()["data"]
        assert invoices and all(invoice["status"] == state for invoice in invoices), state
    paid = seeded.get("/v1/invoices", {"status": "paid"}).json()["data"][0]
    assert seeded.get(f"/v1/invoices/{paid['id']}").json()["payments"]


def test_the_history_is_dated_as_it_happened_payments_on_their_paid_day(seeded):
    """The console's lists date invoices and payments by when they were created: the backdated history is."""
    book, now = demo_book(), clock.now()
    paid = Invoice.objects.filter(book=book, status="paid")
    assert paid and all(invoice.created_at < invoice.paid_at < now for invoice in paid)
    for invoice in paid:
        assert list(Payment.objects.filter(invoice=invoice).values_list("created_at", flat=True)) == [invoice.paid_at]
    finished = Invoice.objects.filter(book=book).exclude(status="draft")
    assert all(invoice.period_end <= invoice.created_at <= invoice.issued_at for invoice in finished)
    assert len({invoice.created_at.date() for invoice in finished}) > 3  # not every one dated the day of seeding


def test_the_matter_and_the_spend_caps_have_usage(seeded):
    matters = seeded.get("/v1/matters").json()["results"]
    assert len(matters) == 2 and all(matter["eventCount"] > 0 and matter["actualCost"] > 0 for matter in matters)
    assert {cap["scope"] for cap in seeded.get("/v1/control/caps").json()} == {"org", "dev"}


def test_a_customers_portal_shows_invoices_a_pool_and_usage(seeded):
    session = seeded.post("/v1/portal-sessions", {"customerExternalId": "stark-industries"}).json()
    page = Client().get(f"/portal/{session['token']}").content.decode()
    assert "Stark Industries" in page and "Demo Agents Inc." in page  # the seller's billing profile
    assert page.count('data-label="Invoice"') >= 3 and "1,760 of 2,000 units used" in page
    assert re.search(r"\b[1-9]\d* events?\b", page)


def figure(page: str, name: str) -> str:
    return re.search(rf'data-figure="{name}">.*?class="value"[^>]*>([^<]+)<', page, re.DOTALL).group(1).strip()


def test_the_console_dashboard_opens_on_the_demo_book_with_figures(seeded):
    User.objects.filter(email=OWNER_EMAIL).update(is_staff=True)
    console = Client()
    console.force_login(User.objects.get(email=OWNER_EMAIL))
    page = console.get("/admin/").content.decode()
    assert "Demo Organization · test books" in page
    for name in ("revenue", "cost", "margin", "mrr-run-rate", "mrr-canonical"):
        assert figure(page, name) not in ("$0", "$0.00"), name
    for name in ("overdue", "pools", "unpriced"):
        assert int(figure(page, name)) > 0, name
