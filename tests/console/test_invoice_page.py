"""The console's invoice page: the document (seller, customer, period, lines, totals, payments) with values written
as the portal writes them, nothing secret on it, and its actions (PDF, send, void, record a payment received,
refund) through the same services as the API, reported as messages on the page."""
import html
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry

from billing.models import Invoice, Payment, Refund
from customers.models import UsageEvent
from tests.billing.invoice_support import (JAN, WEBHOOK_SECRET, billing_chain, draft, event, pay, pdf_text, recurring,
                                           usage)
from tests.billing.support import ok
from tests.console.conftest import NOW, messages_of
from tests.console.world import populate

pytestmark = pytest.mark.django_db

FEB = ("2025-02-01T00:00:00Z", "2025-02-28T23:59:59Z")


@pytest.fixture(autouse=True)
def _console_settings(settings, frozen_now):
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET


@pytest.fixture
def chain(api, book):
    """A customer on a 20/month plan with 0.25 per unit of usage, active since January 2025."""
    return billing_chain(api, book, [recurring("20"), usage("0.25")])


def issued(api, chain, period=JAN) -> Invoice:
    invoice = draft(api, chain, period)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    return Invoice.objects.get(pk=invoice["id"])


def page_of(invoice) -> str:
    return f"/admin/billing/invoice/{invoice.pk}/change/"


def act(client, invoice, what: str, *, confirm="yes", **data):
    """An action of the page; a void or a refund as confirmed on the page that asks first (`confirm=None`: not)."""
    if confirm is not None:
        data["confirm"] = confirm
    return client.post(f"/admin/billing/invoice/{invoice.pk}/act/{what}/", data, follow=True)


def test_the_page_reads_like_the_document_without_secrets_or_raw_values(console, api, chain):
    invoice = issued(api, chain)
    assert invoice.pay_token_nonce and invoice.pricing_terms
    page = console.get(page_of(invoice)).content.decode()
    assert "Bill to" in page and chain.customer.name in page and "billing@client.example.com" in page
    assert "2025-01-01 to 2025-01-31" in page  # the half-open period [Jan 1, Feb 1) as the portal writes it
    assert '<td class="console-number">1</td>' in page and '<td class="console-number">$20.00</td>' in page
    assert 'data-total="Total">$20.00<' in page and 'data-total="Amount due">$20.00<' in page
    assert invoice.pay_token_nonce not in page and invoice.pay_token_digest not in page
    for raw in ('{&quot;', '{"', "object (", "000000000000", "None"):
        assert raw not in page, raw
    assert "Record payment" in page and "Void invoice" in page and "Send again" in page
    pdf = console.get(f"/admin/billing/invoice/{invoice.pk}/pdf/")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf" and pdf.content.startswith(b"%PDF")


def test_usage_recorded_for_the_period_after_issue_is_named_on_the_page(console, api, chain):
    event(chain, 8, "2025-01-10T12:00:00Z")
    invoice = issued(api, chain)
    assert "recorded for this period after the invoice was issued" not in console.get(page_of(invoice)).content.decode()
    event(chain, 4, "2025-01-20T12:00:00Z")  # a late batch, after the invoice went out
    event(chain, 5, "2025-02-02T12:00:00Z")  # February's: nothing to do with January's invoice
    page = console.get(page_of(invoice)).content.decode()
    assert "Usage recorded for this period after the invoice was issued is not on it" in page
    assert f"<li>{chain.signal.name}: 4 not on it (billed 8, recorded for the period now 12)</li>" in page
    assert Invoice.objects.get(pk=invoice.pk).total == Decimal("22.00")  # 20 + 8 x 0.25: the invoice is unchanged
    assert "void the invoice and generate the period again" in page
    Invoice.objects.filter(pk=invoice.pk).update(status="paid", amount_paid=Decimal("22.00"))
    assert "A paid invoice is not voided, so this usage stays unbilled" in console.get(page_of(invoice)).content.decode()
    Invoice.objects.filter(pk=invoice.pk).update(status="issued", amount_paid=Decimal("0"))
    ok(api.post(f"/v1/invoices/{invoice.pk}/void", {}))
    assert "after the invoice was issued" not in console.get(page_of(invoice)).content.decode()


def test_a_usage_line_links_to_the_events_it_counted(console, api, chain):
    event(chain, 8, "2025-01-10T12:00:00Z")
    event(chain, 3, "2025-01-31T23:59:00Z")
    event(chain, 5, "2025-02-02T12:00:00Z")  # February's
    UsageEvent.objects.update(created_at=NOW - timedelta(hours=1))  # recorded by the test's clock, as requests are
    invoice = issued(api, chain)
    late = event(chain, 4, "2025-01-20T12:00:00Z")  # recorded after the invoice read the ledger: the page's late usage
    UsageEvent.objects.filter(pk=late.pk).update(created_at=NOW + timedelta(hours=1))
    page = console.get(page_of(invoice)).content.decode()
    [link] = re.findall(r'<a class="console-quiet" href="([^"]+)">The usage events this line counted</a>', page)
    listed = console.get(html.unescape(link))
    assert listed.status_code == 200
    events = list(listed.context["cl"].result_list)
    assert sorted(event.quantity for event in events) == [3, 8]  # the line's 11, whatever came later
    assert Invoice.objects.get(pk=invoice.pk).lines.get(charge_type="usage").quantity == 11


def test_send_from_the_page_finalizes_and_emails_the_draft(console, api, chain):
    invoice = Invoice.objects.get(pk=draft(api, chain)["id"])
    resp = act(console, invoice, "send")
    invoice.refresh_from_db()
    assert (invoice.status, invoice.last_sent_at) == ("issued", NOW)
    assert resp.redirect_chain[-1][0] == page_of(invoice)
    assert messages_of(resp) == [f"{invoice} sent to billing@client.example.com (issued)."]


def test_a_draft_of_a_period_not_ended_says_so_beside_the_send_button(console, api, chain):
    """Sent now, it bills the usage recorded so far; what comes later is on no invoice."""
    ended = Invoice.objects.get(pk=draft(api, chain)["id"])
    assert "console-warning" not in console.get(page_of(ended)).content.decode()
    running = Invoice.objects.get(pk=draft(api, chain, ("2025-06-01T00:00:00Z", "2025-06-30T23:59:59Z"))["id"])
    page = console.get(page_of(running)).content.decode()
    assert ("The billing period runs until 2025-06-30: usage recorded after the invoice is sent will not be on it."
            in page)


def test_void_and_refund_from_the_page_ask_first_and_do_nothing_until_confirmed(console, api, chain):
    invoice = issued(api, chain)
    asked = act(console, invoice, "void", confirm=None, **{"void-reason": "billed twice"})
    page = asked.content.decode()
    assert asked.status_code == 200 and f"Void {invoice}?" in page and "Reason: billed twice" in page
    assert "This cannot be undone." in page and 'name="confirm" value="yes"' in page
    invoice.refresh_from_db()
    assert invoice.status == "issued"  # nothing happened yet
    carried = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)">', page))
    carried.pop("csrfmiddlewaretoken")
    assert carried == {"void-reason": "billed twice", "confirm": "yes"}
    console.post(f"/admin/billing/invoice/{invoice.pk}/act/void/", carried)  # the page's "Yes, void the invoice"
    invoice.refresh_from_db()
    assert (invoice.status, invoice.void_reason) == ("void", "billed twice")

    paid = issued(api, chain, FEB)
    act(console, paid, "payment", **{"payment-amount": "20.00", "payment-reference": "WIRE-9"})
    payment = Payment.objects.get(provider_payment_id="WIRE-9")
    asked = act(console, paid, "refund", confirm=None, payment=str(payment.pk),
                **{"refund-amount": ""}).content.decode()
    assert "Refund $20.00?" in asked and "Refund: $20.00 (all that is left of the payment)" in asked
    payment.refresh_from_db()
    assert payment.refunded_amount == 0


def test_void_from_the_page_keeps_the_reason(console, api, chain):
    invoice = issued(api, chain)
    resp = act(console, invoice, "void", **{"void-reason": "billed twice"})
    invoice.refresh_from_db()
    assert (invoice.status, invoice.void_reason) == ("void", "billed twice")
    assert messages_of(resp) == [f"{invoice} voided: billed twice."]
    assert "Void invoice" not in resp.content.decode() and "Record payment" not in resp.content.decode()


def test_a_payment_received_is_recorded_once_per_reference(console, api, chain):
    invoice = issued(api, chain)
    resp = act(console, invoice, "payment", **{"payment-amount": "12.50", "payment-reference": "WIRE-1"})
    assert messages_of(resp) == [f"{invoice}: payment of $12.50 (WIRE-1) recorded."]
    invoice.refresh_from_db()
    assert (invoice.status, invoice.amount_paid, invoice.amount_due) == ("issued", Decimal("12.50"), Decimal("7.50"))
    page = resp.content.decode()  # what was paid is a positive amount, what is due the difference
    assert 'data-total="Amount paid (net of refunds)">$12.50<' in page and 'data-total="Amount due">$7.50<' in page
    assert "-$12.50" not in page
    pdf = pdf_text(console.get(f"/admin/billing/invoice/{invoice.pk}/pdf/").content)
    cells = pdf.splitlines()
    assert cells[cells.index("Amount paid") + 1] == "$12.50" and cells[cells.index("Amount due") + 1] == "$7.50"
    assert "-$12.50" not in cells
    again = act(console, invoice, "payment", **{"payment-amount": "10.00", "payment-reference": "WIRE-1"})
    recorded_on = Payment.objects.get(provider_payment_id="WIRE-1").created_at.date().isoformat()
    assert messages_of(again) == [f"{invoice}: the payment WIRE-1 was recorded already, for $12.50 on {recorded_on}; "
                                  "nothing new was recorded."]
    rest = act(console, invoice, "payment", **{"payment-amount": "7.50", "payment-reference": "WIRE-2"})
    invoice.refresh_from_db()
    assert (invoice.status, invoice.amount_paid, invoice.paid_at) == ("paid", Decimal("20.00"), NOW)
    assert list(Payment.objects.filter(invoice=invoice).values_list("provider", "provider_payment_id", "amount")) == [
        ("manual", "WIRE-1", Decimal("12.50")), ("manual", "WIRE-2", Decimal("7.50"))]
    assert 'data-total="Amount due">$0.00<' in rest.content.decode()
    assert api.get(f"/v1/invoices/{invoice.pk}").json()["status"] == "paid"  # the API sees the same payments


def test_a_payment_is_refused_on_a_draft_and_a_reference_of_another_invoice(console, api, chain):
    first = issued(api, chain)
    act(console, first, "payment", **{"payment-amount": "5.00", "payment-reference": "WIRE-7"})
    second = issued(api, chain, FEB)
    resp = act(console, second, "payment", **{"payment-amount": "5.00", "payment-reference": "WIRE-7"})
    assert messages_of(resp) == [f"{second}: The reference WIRE-7 is already recorded as a payment of invoice "
                                 f"{first.invoice_number}."]
    open_draft = Invoice.objects.get(pk=draft(api, chain, ("2025-03-01T00:00:00Z", "2025-03-31T23:59:59Z"))["id"])
    refused = act(console, open_draft, "payment", **{"payment-amount": "5.00", "payment-reference": "WIRE-8"})
    assert messages_of(refused) == [f"{open_draft}: Invoice {open_draft} is draft: payments are recorded against "
                                    "sent invoices that are not paid."]
    bad = act(console, first, "payment", **{"payment-amount": "-1", "payment-reference": "WIRE-9"})
    assert messages_of(bad) == [f"{first}: amount: Ensure this value is greater than or equal to 0.01."]
    assert Payment.objects.count() == 1


def test_refund_from_the_page_refunds_the_chosen_payment(console, api, chain, client):
    invoice = issued(api, chain)
    assert pay(client, {"id": str(invoice.pk), "total": str(invoice.total)}).status_code == 200
    payment = Payment.objects.get(invoice=invoice)
    resp = act(console, invoice, "refund", payment=str(payment.pk), **{"refund-amount": "5.00",
                                                                        "refund-reason": "goodwill"})
    assert messages_of(resp) == [f"Refunded $5.00 of payment {payment.provider_payment_id} ({invoice})."]
    refund = Refund.objects.get(payment=payment)
    assert (refund.amount, refund.reason) == (Decimal("5.00"), "goodwill")
    page = resp.content.decode()
    # The $5.00 given back is not owed again: it is shown as refunded, and nothing is due.
    assert "Refund: goodwill" in page
    assert f'data-total="Amount paid (net of refunds)">${invoice.total - 5:.2f}<' in page
    assert 'data-total="Amount due">$0.00<' in page


def test_the_invoices_history_says_who_recorded_refunded_and_voided_what(console_for, console, api, chain, client):
    invoice = issued(api, chain)
    act(console, invoice, "payment", **{"payment-amount": "12.50", "payment-reference": "WIRE-1"})
    payment = Payment.objects.get(invoice=invoice)
    act(console, invoice, "refund", payment=str(payment.pk), **{"refund-amount": "2.50", "refund-reason": "goodwill"})
    member = console_for(role="member", email="member@acme.example.com")
    act(member, invoice, "void", **{"void-reason": "typo"})  # refused: not in the history
    second = issued(api, chain, FEB)
    act(console, second, "void", **{"void-reason": "sent twice"})
    owner = console.get("/admin/").wsgi_request.user
    assert [(entry.user, entry.change_message) for entry in LogEntry.objects.filter(object_id=str(invoice.pk))
            .order_by("action_time", "id")] == [(owner, f"{invoice}: payment of $12.50 (WIRE-1) recorded."),
                                                (owner, f"Refunded $2.50 of payment WIRE-1 ({invoice}).")]
    history = console.get(f"/admin/billing/invoice/{invoice.pk}/history/").content.decode()
    assert "payment of $12.50 (WIRE-1) recorded." in history and "Refunded $2.50 of payment WIRE-1" in history
    assert owner.email in history or owner.get_username() in history
    # When, as the console writes instants (not Django's "Nov. 29, 2026, 5:12 p.m.").
    assert re.search(r"<th scope=\"row\">\d{4}-\d\d-\d\d \d\d:\d\d UTC</th>", history), history
    voided = LogEntry.objects.get(object_id=str(second.pk))
    assert (voided.user, voided.change_message) == (owner, f"{second} voided: sent twice.")


def test_money_actions_on_the_page_need_the_apis_roles(console_for, api, chain):
    invoice = issued(api, chain)
    member = console_for(role="member", email="member@acme.example.com")
    assert "Record payment" not in member.get(page_of(invoice)).content.decode()
    resp = act(member, invoice, "payment", **{"payment-amount": "5.00", "payment-reference": "WIRE-3"})
    assert messages_of(resp) == [f"{invoice}: This needs the owner, admin or finance role in its organization."]
    resp = act(member, invoice, "void", **{"void-reason": ""})
    assert messages_of(resp) == [f"{invoice}: This needs the owner, admin or finance role in its organization."]
    assert not Payment.objects.exists() and Invoice.objects.get(pk=invoice.pk).status == "issued"
    assert messages_of(act(member, invoice, "send")) == [f"{invoice} sent to billing@client.example.com (issued)."]


def test_another_organizations_invoice_is_neither_shown_nor_acted_on(console, other_book):
    foreign = populate(other_book, "foreign")[Invoice]
    for resp in (console.get(f"/admin/billing/invoice/{foreign.pk}/pdf/", follow=True),
                 act(console, foreign, "void", **{"void-reason": "x"})):
        assert resp.redirect_chain[-1][0] == "/admin/"
        assert any("doesn’t exist" in message or "does not exist" in message for message in messages_of(resp))
    assert Invoice.objects.get(pk=foreign.pk).status == "issued"
    assert console.get(f"/admin/billing/invoice/{foreign.pk}/act/send/").status_code == 405


def test_a_lines_note_writes_its_tiers_as_the_plan_does_and_a_credit_pool_as_its_pool():
    """docs/console.md: tiers as `0 to 1,000: $2.00 each; 1,000 and up: $0.015 each`, a pool as `a pool of 1,000
    units for $50.00; $0.06 each beyond` (a pool's first tier is a price for the whole pool, never per unit)."""
    from billing.admin_invoice_page import line_note
    from billing.models import InvoiceLine

    pool = InvoiceLine(terms={"pricingModel": "credit_pool", "tiers": [
        {"lower": 0, "upper": 2000, "rate": "300"}, {"lower": 2000, "upper": None, "rate": "0.2"}]})
    assert line_note(pool, "usd") == "a pool of 2,000 units for $300.00; $0.20 each beyond"
    graduated = InvoiceLine(terms={"pricingModel": "graduated", "tiers": [
        {"lower": 0, "upper": 1000, "rate": "2"}, {"lower": 1000, "upper": None, "rate": "0.015"}]})
    assert line_note(graduated, "usd") == "graduated: 0 to 1,000: $2.00 each; 1,000 and up: $0.015 each"


def test_the_customers_page_says_what_it_owes_in_all(console, api, chain):
    customer_page = f"/admin/customers/customer/{chain.customer.pk}/change/"
    draft(api, chain)  # a draft is not owed yet
    assert "Nothing: no sent invoice is waiting for payment." in console.get(customer_page).content.decode()
    february = issued(api, chain, FEB)
    act(console, february, "payment", **{"payment-amount": "12.50", "payment-reference": "WIRE-1"})
    march = issued(api, chain, ("2025-03-01T00:00:00Z", "2025-03-31T23:59:59Z"))
    Invoice.objects.filter(pk=march.pk).update(status="overdue")
    paid = issued(api, chain, ("2025-04-01T00:00:00Z", "2025-04-30T23:59:59Z"))
    act(console, paid, "payment", **{"payment-amount": "20.00", "payment-reference": "WIRE-2"})
    page = console.get(customer_page).content.decode()
    assert "$27.50 on 2 invoices, 1 overdue" in page  # 7.50 left of February, all of March; April is paid


def test_the_invoice_list_shows_every_invoice_waiting_for_payment_at_once(console, api, chain):
    """Pending, issued and overdue together: the status filter shows one status at a time."""
    waiting = issued(api, chain)
    overdue = issued(api, chain, FEB)
    Invoice.objects.filter(pk=overdue.pk).update(status="overdue")
    paid = issued(api, chain, ("2025-03-01T00:00:00Z", "2025-03-31T23:59:59Z"))
    act(console, paid, "payment", **{"payment-amount": "20.00", "payment-reference": "WIRE-3"})
    draft(api, chain, ("2025-04-01T00:00:00Z", "2025-04-30T23:59:59Z"))
    listed = console.get("/admin/billing/invoice/", {"payment": "waiting"}).context["cl"].result_list
    assert {invoice.pk for invoice in listed} == {waiting.pk, overdue.pk}


def test_the_invoice_list_adds_up_every_invoice_its_filters_select(console, api, chain, monkeypatch):
    """Month-end reads totals: what the selected invoices bill, collected and still owe, over every page of the
    list (two rows a page here), void ones left out as they bill nothing."""
    from billing.admin_invoices import InvoiceAdmin

    monkeypatch.setattr(InvoiceAdmin, "list_per_page", 2)
    issued(api, chain)  # 20.00 owed
    february = issued(api, chain, FEB)
    act(console, february, "payment", **{"payment-amount": "12.50", "payment-reference": "WIRE-1"})  # 7.50 owed
    march = issued(api, chain, ("2025-03-01T00:00:00Z", "2025-03-31T23:59:59Z"))
    Invoice.objects.filter(pk=march.pk).update(status="overdue")  # 20.00 owed
    april = issued(api, chain, ("2025-04-01T00:00:00Z", "2025-04-30T23:59:59Z"))
    act(console, april, "payment", **{"payment-amount": "20.00", "payment-reference": "WIRE-2"})
    draft(api, chain, ("2025-05-01T00:00:00Z", "2025-05-31T23:59:59Z"))  # 20.00, as its row says
    june = issued(api, chain, ("2025-06-01T00:00:00Z", "2025-06-30T23:59:59Z"))
    act(console, june, "void", **{"void-reason": "billed by mistake"})

    def totals(**filters):
        return re.findall(r"<p>([^<]*invoices?[^<]*)</p>", console.get("/admin/billing/invoice/", filters)
                          .content.decode().split('class="console-totals"')[1].split("</div>")[0])

    assert totals() == ["6 invoices: total $100.00, paid $32.50, due $67.50 (1 void left out of the total; 1 draft, "
                        "not sent yet)"]
    assert totals(status__exact="paid") == ["1 invoice: total $20.00, paid $20.00, due $0.00"]
    # Money that reached a void invoice (a checkout opened before the void) is money received: in the paid column's sum.
    Invoice.objects.filter(pk=june.pk).update(amount_paid=Decimal("5.00"))
    assert totals(status__exact="void") == ["1 invoice: total $0.00, paid $5.00, due $0.00 (1 void left out of the "
                                            "total)"]
    assert totals(payment="waiting") == ["3 invoices: total $60.00, paid $12.50, due $47.50"]


def test_a_payment_beyond_what_is_due_is_asked_about_first(console, api, chain):
    invoice = issued(api, chain)  # 20.00 due
    asked = act(console, invoice, "payment", confirm=None, **{"payment-amount": "35.00", "payment-reference": "W-9"})
    page = html.unescape(asked.content.decode())
    assert "Record $35.00, more than is due?" in page and "$15.00 more than is due will show as overpaid" in page
    assert not invoice.payments.exists()  # nothing recorded before the confirmation
    act(console, invoice, "payment", **{"payment-amount": "35.00", "payment-reference": "W-9"})
    invoice.refresh_from_db()
    assert (invoice.status, invoice.amount_paid, invoice.amount_overpaid) == ("paid", Decimal("35.00"),
                                                                             Decimal("15.00"))
    # What is due, or less, is recorded without a question.
    second = issued(api, chain, FEB)
    act(console, second, "payment", confirm=None, **{"payment-amount": "20.00", "payment-reference": "W-10"})
    assert second.payments.get().amount == Decimal("20.00")


def test_a_drafts_discount_tax_and_memo_are_set_from_its_page_as_the_api_sets_them(console, api, chain):
    from tests.billing.invoice_support import draft as draft_of

    invoice = Invoice.objects.get(pk=draft_of(api, chain)["id"])  # 20.00
    page = console.get(page_of(invoice)).content.decode()
    assert "Discount, tax and memo" in page and 'name="adjust-tax_percent"' in page
    resp = act(console, invoice, "adjust", confirm=None, **{
        "adjust-discount_percent": "12.5", "adjust-discount_fixed": "1.00", "adjust-tax_percent": "8.25",
        "adjust-memo": "Corrected: January's agreed discount"})
    invoice.refresh_from_db()
    # 20.00 - (2.50 + 1.00) = 16.50; tax 8.25% of 16.50 = 1.36125 -> 1.36; total 17.86
    assert (invoice.discount, invoice.tax, invoice.total) == (Decimal("3.50"), Decimal("1.36"), Decimal("17.86"))
    assert invoice.memo == "Corrected: January's agreed discount"
    assert messages_of(resp) == [f"{invoice}: discount, tax and memo saved; total $17.86."]
    assert api.get(f"/v1/invoices/{invoice.pk}").json()["total"] == 17.86
    # The API's rules: a refusal names the field, nothing changes.
    resp = act(console, invoice, "adjust", confirm=None, **{"adjust-tax_percent": "101", "adjust-memo": "x"})
    assert any(message.startswith(f"{invoice}: taxRate:") for message in messages_of(resp)), messages_of(resp)
    invoice.refresh_from_db()
    assert (invoice.tax_percent, invoice.memo) == (Decimal("8.25"), "Corrected: January's agreed discount")
    resp = act(console, invoice, "adjust", confirm=None, **{"adjust-memo": "nul \x00 byte"})
    assert messages_of(resp) == [f"{invoice}: memo: Null characters are not allowed."]
    # The form shows the draft's values: a number cleared is no discount, no tax.
    act(console, invoice, "adjust", confirm=None, **{"adjust-discount_percent": "", "adjust-discount_fixed": "",
                                                     "adjust-tax_percent": "8.25", "adjust-memo": ""})
    invoice.refresh_from_db()
    assert (invoice.discount, invoice.tax, invoice.total, invoice.memo) == (Decimal("0"), Decimal("1.65"),
                                                                           Decimal("21.65"), "")
    # A sent invoice no longer offers it.
    ok(api.post(f"/v1/invoices/{invoice.pk}/send", {}))
    assert "Discount, tax and memo" not in console.get(page_of(invoice)).content.decode()


def test_a_payment_received_keeps_the_day_the_money_arrived(console, api, chain):
    """A wire of the last day of a month, recorded days later, reconciles with that month's bank statement: the day
    is kept on the payment (the API's `receivedOn`) and shown in its row; it is never after today, and moves no
    figure (the invoice is paid when the payment is recorded)."""
    invoice = issued(api, chain)
    today = NOW.date()
    late = act(console, invoice, "payment", **{"payment-amount": "5.00", "payment-reference": "WIRE-7",
                                                "payment-received_on": (today + timedelta(days=1)).isoformat()})
    assert messages_of(late) == [f"{invoice}: receivedOn: Must not be after today ({today.isoformat()}, UTC): the day "
                                 "the money arrived."]
    assert not Payment.objects.filter(invoice=invoice).exists()
    earlier = (today - timedelta(days=3)).isoformat()
    resp = act(console, invoice, "payment", **{"payment-amount": "20.00", "payment-reference": "WIRE-7",
                                               "payment-received_on": earlier})
    payment = Payment.objects.get(invoice=invoice)
    assert payment.received_on.isoformat() == earlier
    assert f"<tr><td>{earlier}</td>" in resp.content.decode()
    invoice.refresh_from_db()
    assert (invoice.status, invoice.paid_at) == ("paid", NOW)
    [row] = api.get(f"/v1/invoices/{invoice.pk}").json()["payments"]
    assert row["receivedOn"] == earlier
    # Blank: today.
    second = issued(api, chain, FEB)
    act(console, second, "payment", **{"payment-amount": "1.00", "payment-reference": "WIRE-8"})
    assert Payment.objects.get(provider_payment_id="WIRE-8").received_on == today
