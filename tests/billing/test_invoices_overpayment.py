"""An invoice paid twice (two browser tabs, two Checkout sessions: two signed webhooks with different payment ids)
is overpaid: it stays `paid`, `amountDue` is 0 (never negative), `amountOverpaid` shows the surplus on every
reading (API list and detail, PDF, console, portal), and refunding the surplus payment brings it back to 0
(docs/decisions/invoices.md: Overpayment)."""
import csv
import io
import re
from types import SimpleNamespace

import pytest
from django.test import Client

from billing.models import Invoice, Payment
from accounts.models import User
from accounts.services import member_ensure
from tests.billing.invoice_support import WEBHOOK_SECRET, billing_chain, draft, pay, pdf_text, recurring
from tests.billing.support import ok

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def stripe_settings(settings):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.STRIPE_SECRET_KEY = ""
    settings.PUBLIC_BASE_URL = "http://testserver"


@pytest.fixture
def issued(api, book):
    """An issued invoice of 10.00 (a 10.00 monthly fee, January)."""
    chain = billing_chain(api, book, [recurring("10")])
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    return SimpleNamespace(chain=chain, id=invoice["id"], invoice=ok(api.get(f"/v1/invoices/{invoice['id']}")))


@pytest.fixture
def overpaid(api, issued, client):
    """The 10.00 invoice paid in full twice: pi_tab_1, then pi_tab_2 (the second tab's Checkout)."""
    assert issued.invoice["total"] == 10
    first = pay(client, issued.invoice, 1000, payment_intent="pi_tab_1")
    second = pay(client, issued.invoice, 1000, payment_intent="pi_tab_2")
    assert first.status_code == second.status_code == 200
    issued.second_webhook = second.json()
    return issued


def full(api, invoice) -> dict:
    return ok(api.get(f"/v1/invoices/{invoice.id}"))


def payment_of(body: dict, provider_payment_id: str) -> dict:
    [payment] = [p for p in body["payments"] if p["providerPaymentId"] == provider_payment_id]
    return payment


# --------------------------------------------------------------------------- API

def test_a_second_full_payment_leaves_the_invoice_paid_with_the_surplus_overpaid(api, overpaid):
    body = full(api, overpaid)
    assert (body["status"], body["total"], body["amountPaid"], body["amountDue"], body["amountOverpaid"]) == (
        "paid", 10, 20, 0, 10)
    assert [(p["providerPaymentId"], p["amount"], p["status"]) for p in body["payments"]] == [
        ("pi_tab_1", 10, "succeeded"), ("pi_tab_2", 10, "succeeded")]
    assert overpaid.second_webhook["handled"] is True
    assert "overpaid by 10.00" in overpaid.second_webhook["detail"]


def test_the_invoice_list_answers_with_an_overpaid_invoice_among_its_rows(api, overpaid, book):
    other = billing_chain(api, book, [recurring("7.50")])
    unpaid = draft(api, other)
    resp = api.get("/v1/invoices")
    assert resp.status_code == 200, resp.content[:500]
    rows = {row["id"]: row for row in resp.json()["data"]}
    assert (rows[overpaid.id]["status"], rows[overpaid.id]["amountDue"]) == ("paid", 0)
    assert rows[unpaid["id"]]["amountDue"] == 7.5
    assert ok(api.get("/v1/invoices?status=paid"))["data"][0]["id"] == overpaid.id


def test_amount_due_is_an_exact_zero_never_negative_on_the_model(overpaid):
    invoice = Invoice.objects.get(pk=overpaid.id)
    assert (type(invoice.amount_due), invoice.amount_due, invoice.amount_overpaid) == (
        type(invoice.total), 0, invoice.total)


def test_a_payment_short_of_the_total_is_not_overpaid(api, issued, client):
    pay(client, issued.invoice, 400)
    body = full(api, issued)
    assert (body["status"], body["amountPaid"], body["amountDue"], body["amountOverpaid"]) == ("issued", 4, 6, 0)


def test_a_part_payment_then_a_full_one_overpays_by_the_part(api, issued, client):
    """Tab 1 paid 4.00 of 10.00, tab 2 still showed 10.00: 14.00 collected, 4.00 overpaid."""
    pay(client, issued.invoice, 400, payment_intent="pi_part")
    pay(client, issued.invoice, 1000, payment_intent="pi_whole")
    body = full(api, issued)
    assert (body["status"], body["amountPaid"], body["amountDue"], body["amountOverpaid"]) == ("paid", 14, 0, 4)


def test_the_pdf_of_an_overpaid_invoice_shows_the_surplus(api, overpaid):
    resp = api.get(f"/v1/invoices/{overpaid.id}/pdf")
    assert resp.status_code == 200 and resp.content.startswith(b"%PDF")
    text = pdf_text(resp.content)
    assert "Amount due" in text and "Overpaid" in text and "$10.00" in text


# --------------------------------------------------------------------------- refunding the surplus

def test_refunding_the_second_payment_clears_the_overpayment_and_keeps_the_invoice_paid(api, overpaid):
    second = payment_of(full(api, overpaid), "pi_tab_2")
    refund = ok(api.post(f"/v1/invoices/{overpaid.id}/payments/{second['id']}/refund",
                         {"reason": "paid twice"}), 201)
    assert (refund["amount"], refund["invoiceStatus"], refund["payment"]["status"]) == (10, "paid", "refunded")
    body = full(api, overpaid)
    assert (body["status"], body["amountPaid"], body["amountDue"], body["amountOverpaid"]) == ("paid", 10, 0, 0)
    assert payment_of(body, "pi_tab_1")["refundedAmount"] == 0


@pytest.mark.parametrize("blank", ["", "   "])
def test_a_blank_refund_amount_is_a_400_not_the_whole_payment(api, overpaid, blank):
    """Only a missing amount (or JSON null) means "all that is left": a blank string is no number, and it refunded
    the whole payment."""
    second = payment_of(full(api, overpaid), "pi_tab_2")
    resp = api.post(f"/v1/invoices/{overpaid.id}/payments/{second['id']}/refund", {"amount": blank})
    assert resp.status_code == 400 and resp.json()["message"] == ["amount: A valid number is required."], resp.json()
    assert payment_of(full(api, overpaid), "pi_tab_2")["refundedAmount"] == 0


def test_refunding_part_of_the_surplus_leaves_the_rest_overpaid(api, overpaid):
    second = payment_of(full(api, overpaid), "pi_tab_2")
    ok(api.post(f"/v1/invoices/{overpaid.id}/payments/{second['id']}/refund", {"amount": "2.50"}), 201)
    body = full(api, overpaid)
    assert (body["status"], body["amountPaid"], body["amountDue"], body["amountOverpaid"]) == ("paid", 17.5, 0, 7.5)


def test_refunding_both_payments_moves_the_invoice_to_refunded(api, overpaid):
    for payment in full(api, overpaid)["payments"]:
        ok(api.post(f"/v1/invoices/{overpaid.id}/payments/{payment['id']}/refund", {}), 201)
    body = full(api, overpaid)
    # refunded: neither billed nor collected (spec), so nothing is due either
    assert (body["status"], body["amountPaid"], body["amountDue"], body["amountOverpaid"]) == ("refunded", 0, 0, 0)


# --------------------------------------------------------------------------- local checkout: two tabs

def test_two_tabs_of_the_local_checkout_pay_once(api, issued, settings):
    """Each tab's form carries its own attempt; the second submit finds nothing due and records nothing."""
    settings.PAYMENTS_LOCAL_CHECKOUT = True
    path = f"/portal/s/invoices/{issued.id}/pay"
    session = ok(api.post("/v1/portal-sessions", {"customerExternalId": issued.chain.customer.external_id}), 201)
    browser = Client()
    assert browser.get(session["url"].replace("http://testserver", "")).status_code == 200
    tabs = [browser.get(path).content.decode() for _ in range(2)]
    for page in tabs:
        attempt = re.search(r'name="attempt" value="([^"]+)"', page).group(1)
        assert browser.post(path, {"attempt": attempt}).status_code == 302
    body = full(api, issued)
    assert (body["status"], [p["amount"] for p in body["payments"]], body["amountOverpaid"]) == ("paid", [10], 0)


# --------------------------------------------------------------------------- console and portal

@pytest.fixture
def operator(org):
    """An owner of `org`, staff, signed in to the console."""
    member_ensure(organization=org, email="ops@acme.example", role="owner")
    User.objects.filter(email="ops@acme.example").update(is_staff=True)
    client = Client()
    client.force_login(User.objects.get(email="ops@acme.example"))
    return client


def test_the_console_shows_the_overpaid_amount_on_the_invoice(operator, overpaid):
    change = operator.get(f"/admin/billing/invoice/{overpaid.id}/change/")
    assert change.status_code == 200
    page = change.content.decode()
    assert re.search(r"Overpaid \(to refund\).*?\$10\.00", page, re.S), "the change page shows the overpaid amount"
    listing = operator.get("/admin/billing/invoice/")
    assert listing.status_code == 200 and "$10.00" in listing.content.decode()
    only_overpaid = operator.get("/admin/billing/invoice/?overpaid=yes")
    assert only_overpaid.status_code == 200
    assert overpaid.invoice["invoiceNumber"] in only_overpaid.content.decode()
    not_overpaid = operator.get("/admin/billing/invoice/?overpaid=no")
    assert not_overpaid.status_code == 200
    assert overpaid.invoice["invoiceNumber"] not in not_overpaid.content.decode()
    subscription = operator.get(f"/admin/billing/subscription/{overpaid.chain.subscription['id']}/change/")
    assert subscription.status_code == 200 and "$10.00" in subscription.content.decode()  # its invoices inline


def test_the_console_exports_the_overpaid_column(operator, overpaid):
    resp = operator.post("/admin/billing/invoice/", {"action": "export_csv", "_selected_action": [overpaid.id],
                                                     "index": "0"})
    header, row = csv.reader(io.StringIO(b"".join(resp.streaming_content).decode()))
    assert row[header.index("overpaid")] == "10.00"


def test_the_console_refund_action_refunds_the_surplus_payment(operator, overpaid):
    second = Payment.objects.get(provider_payment_id="pi_tab_2")
    resp = operator.post("/admin/billing/payment/", {"action": "refund_payments", "_selected_action": [str(second.pk)],
                                                     "select_across": "0", "apply": "1", "amount": "",
                                                     "reason": "paid twice"}, follow=True)
    assert resp.status_code == 200
    invoice = Invoice.objects.get(pk=overpaid.id)
    assert (invoice.status, invoice.amount_paid, invoice.amount_overpaid) == ("paid", 10, 0)


def test_the_portal_lists_an_overpaid_invoice_as_paid_with_its_surplus(api, overpaid):
    session = ok(api.post("/v1/portal-sessions", {"customerExternalId": overpaid.chain.customer.external_id}), 201)
    browser = Client()
    resp = browser.get(session["url"].replace("http://testserver", ""))
    assert resp.status_code == 200
    page = resp.content.decode()
    assert overpaid.invoice["invoiceNumber"] in page and "paid" in page and "Overpaid $10.00" in page
    assert f"/portal/s/invoices/{overpaid.id}/pay" not in page  # nothing to pay
    settled = browser.get(f"/portal/s/invoices/{overpaid.id}/pay")
    assert settled.status_code == 200 and "This invoice is paid" in settled.content.decode()
    assert "You paid $10.00 more than this invoice" in settled.content.decode()
    assert browser.get(f"/portal/s/invoices/{overpaid.id}/pdf").status_code == 200
