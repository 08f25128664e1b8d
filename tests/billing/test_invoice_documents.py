"""The invoice a finance team sends: the organization's billing profile on the PDF and the email, quantity,
unit price and amount columns, the signals' display names, payment instructions and the pay link."""
import re

import pytest
from django.test import Client
from PIL import Image

from billing.invoice_documents import InvoiceView, invoice_pdf
from billing.models import Invoice
from tests.billing.invoice_support import billing_chain, draft, event, pdf_text, raw_messages, recurring, usage
from tests.billing.support import ok
from tests.mail import sent_mail

pytestmark = pytest.mark.django_db


@pytest.fixture
def profiled(org, tmp_path, settings):
    settings.MEDIA_ROOT = tmp_path
    logo = tmp_path / "logos" / "acme.png"
    logo.parent.mkdir()
    Image.new("RGB", (40, 20), (63, 104, 216)).save(logo)
    org.business_name, org.address, org.tax_id = "Acme Agents Ltd", "1 Market Street\nSpringfield 12345", "GB123456789"
    org.sender_email, org.sender_name = "invoices@acme.example.com", "Acme Billing"
    org.payment_instructions = "Bank transfer: IBAN GB00 ACME 0000 0000 0000 00, reference the invoice number."
    org.logo = "logos/acme.png"
    org.save()
    return org


def test_the_pdf_and_email_carry_the_billing_profile_columns_and_how_to_pay(api, book, profiled, settings):
    settings.PUBLIC_BASE_URL = "https://billing.example.com"
    chain = billing_chain(api, book, [usage("0.25"), recurring("20")])
    chain.signal.name, chain.signal.short_name = "Resolved tickets", "tickets_resolved"
    chain.signal.save()
    event(chain, 40, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    [mail] = sent_mail()
    assert mail.from_email == "Acme Billing <invoices@acme.example.com>"
    assert mail.text.startswith(f"Hello {chain.customer.name},")
    assert "IBAN GB00 ACME" in mail.text and "Tax id: GB123456789" in mail.text
    # Lines carry the currency as the totals do, in the text and in the HTML part.
    assert "- strategy 0: 40 Resolved tickets: $10.00" in mail.text and "- strategy 1 (monthly fee): $20.00" in mail.text
    assert ">$10.00</td>" in mail.html and ">$20.00</td>" in mail.html
    link = re.search(r"https://billing\.example\.com/pay/\S+", mail.text).group(0)
    # Without online payment the pay page gives the seller's instructions, as the PDF does (whose link says "View
    # online", not "Pay online": no checkout behind it).
    pay_page = Client().get(link.replace("https://billing.example.com", "")).content.decode()
    assert "Online payment is not configured" in pay_page and "How to pay" in pay_page
    assert "IBAN GB00 ACME 0000 0000 0000 00, reference the invoice number." in pay_page
    assert '<td class="amount">$10.00</td>' in pay_page and '<td class="amount">$20.00</td>' in pay_page
    [attachment] = list(raw_messages()[0].iter_attachments())
    text = pdf_text(attachment.get_content())
    for expected in ("Acme Agents Ltd", "1 Market Street", "Springfield 12345", "Tax id: GB123456789",
                     "Description", "Quantity", "Unit price", "Amount",
                     "strategy 0: 40 Resolved tickets", "$0.25", "$10.00", "strategy 1 (monthly fee)", "$20.00",
                     "Total", "$30.00", "How to pay", f"View online: {link}", "IBAN GB00 ACME"):
        assert expected in text, (expected, text)
    assert "tickets_resolved" not in text  # the signal's display name, not its raw name
    assert "Status: Issued" in text  # made while the invoice is pending (its email on the way), read as issued


def test_the_downloaded_pdf_shows_the_live_pay_link_and_a_paid_one_none(api, book, profiled, settings):
    settings.PUBLIC_BASE_URL = "https://billing.example.com"
    settings.PAYMENTS_LOCAL_CHECKOUT = True  # a checkout, the development one
    chain = billing_chain(api, book, [recurring("20")])
    invoice = draft(api, chain)
    assert "Pay online" not in pdf_text(ok_pdf(api, invoice))  # a draft has no link yet
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    link = re.search(r"https://billing\.example\.com/pay/\S+", sent_mail()[0].text).group(0)
    assert f"Pay online: {link}" in pdf_text(ok_pdf(api, invoice))
    Invoice.objects.filter(pk=invoice["id"]).update(status="paid", amount_paid=20)
    assert "Pay online" not in pdf_text(invoice_pdf(InvoiceView.of(Invoice.objects.get(pk=invoice["id"]))))


def test_a_pdf_promises_online_payment_only_for_an_amount_stripe_takes(api, book, profiled, settings):
    """Stripe charges at least USD 0.50 (billing/stripe_gateway.py): a 0.30 invoice's link shows how to pay it
    otherwise, so its PDF says 'View online'; a 24.00 one says 'Pay online'."""
    settings.PUBLIC_BASE_URL = "https://billing.example.com"
    settings.STRIPE_SECRET_KEY = "sk_test_123"
    for rate, label in (("0.30", "View online"), ("24", "Pay online")):
        invoice = draft(api, billing_chain(api, book, [recurring(rate)]))
        ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
        text = pdf_text(ok_pdf(api, invoice))
        assert f"{label}: https://billing.example.com/pay/" in text, text


def ok_pdf(api, invoice) -> bytes:
    resp = api.get(f"/v1/invoices/{invoice['id']}/pdf")
    assert resp.status_code == 200 and resp["Content-Type"] == "application/pdf"
    return resp.content


def test_a_period_cut_inside_a_day_is_written_with_the_time_of_the_cut():
    """A plan change at 21:43 in Los Angeles: the old side's invoice ends and the new side's starts at that time,
    each written with it (both read "2026-11-28" before, as if each held the whole day)."""
    from datetime import datetime, timezone
    from types import SimpleNamespace

    from billing.invoice_documents import period_label

    def invoice(start, end):
        return SimpleNamespace(period_start=start, period_end=end,
                               subscription=SimpleNamespace(timezone="America/Los_Angeles", earlier_period_rules=[],
                                                            period_rules_since=None, billing_day=None))
    change = datetime(2026, 11, 29, 5, 43, tzinfo=timezone.utc)  # 21:43 on the 28th in Los Angeles
    november, december = (datetime(2026, 11, 1, 7, tzinfo=timezone.utc), datetime(2026, 12, 1, 8, tzinfo=timezone.utc))
    assert period_label(invoice(november, change)) == "2026-11-01 to 2026-11-28 21:43 PST"
    assert period_label(invoice(change, december)) == "2026-11-28 21:43 PST to 2026-11-30"
    assert period_label(invoice(november, december)) == "2026-11-01 to 2026-11-30"
    # Santiago skips midnight on 2026-09-06 (clocks go from 00:00 to 01:00): its day, and a period, start at 01:00.
    santiago = SimpleNamespace(period_start=datetime(2026, 8, 6, 4, tzinfo=timezone.utc),
                               period_end=datetime(2026, 9, 6, 4, tzinfo=timezone.utc),
                               subscription=SimpleNamespace(timezone="America/Santiago", earlier_period_rules=[],
                                                            period_rules_since=None, billing_day=None))
    assert period_label(santiago) == "2026-08-06 to 2026-09-05"


def test_a_tiered_line_of_the_pdf_says_how_it_was_priced(api, book):
    """A credit pool or tiered line has no single unit price: the PDF writes its terms under it, a pool as its pool
    (1,000 units for $50.00) and overage rate, never as if the pool price were a price per unit."""
    from tests.billing.invoice_support import credit_pool

    chain = billing_chain(api, book, [credit_pool(1000, "50", "0.06")])
    event(chain, 1200, "2025-01-10T00:00:00Z")  # 200 beyond the pool: $50.00 + $12.00
    invoice = draft(api, chain)
    text = pdf_text(api.get(f"/v1/invoices/{invoice['id']}/pdf").content)
    assert "a pool of 1,000 units for $50.00; $0.06 each beyond" in text, text
    assert "$62.00" in text


def test_a_line_priced_at_one_rate_shows_it_as_its_unit_price(api, book):
    """Volume: 150 units fall in the second tier, every unit at $0.05 ($7.50); three seats from January 10 bill
    $29.00 each prorated (22 of 31 days): the rate is the unit price and the note says the days. Graduated tiers
    price units differently: no single unit price. Before, the volume line read "tiered" and the seat line none."""
    from billing.invoice_documents import unit_price
    from tests.billing.invoice_support import seats, tiered

    chain = billing_chain(api, book, [tiered("volume"), seats("29")], start="2025-01-10T00:00:00Z", seatsCount=3)
    event(chain, 150, "2025-01-12T00:00:00Z")
    invoice = Invoice.objects.get(pk=draft(api, chain)["id"])
    by_type = {line.charge_type: line for line in invoice.lines.all()}
    assert (unit_price(by_type["usage"]), by_type["usage"].amount) == ("$0.05", 7.5)
    assert unit_price(by_type["seat_based"]) == "$29.00" and by_type["seat_based"].prorated_days == 22
    other = billing_chain(api, book, [tiered("graduated")])
    event(other, 150, "2025-01-12T00:00:00Z")
    [line] = Invoice.objects.get(pk=draft(api, other)["id"]).lines.all()
    assert unit_price(line) == "tiered"  # 100 at $0.10 and 50 at $0.05


def test_a_seat_rate_of_another_frequency_than_the_cycle_says_what_it_is_a_rate_of(api, book):
    """5 seats at $120.00 a year on a monthly cycle bill $50.00 a month: the row read "5 x $120.00 = $50.00"."""
    from billing.invoice_documents import unit_price
    from tests.billing.invoice_support import seats

    chain = billing_chain(api, book, [{**seats("120"), "billingFrequency": "yearly"}], seatsCount=5)
    [line] = Invoice.objects.get(pk=draft(api, chain)["id"]).lines.all()
    assert (line.quantity, unit_price(line), line.amount) == (5, "$120.00 a year", 50)
    monthly = billing_chain(api, book, [seats("10")], seatsCount=5)
    [line] = Invoice.objects.get(pk=draft(api, monthly)["id"]).lines.all()
    assert (unit_price(line), line.amount) == ("$10.00", 50)


@pytest.mark.parametrize("country, state, zip_code, city_line", [
    ("US", "TX", "78701", "Austin, TX 78701"), ("U.S.A.", "", "78701", "Austin, 78701"),
    ("PT", "", "1100-048", "1100-048 Austin"), ("", "TX", "", "Austin TX")])
def test_the_city_line_follows_the_countrys_postal_form(country, state, zip_code, city_line):
    from types import SimpleNamespace

    from billing.invoice_documents import customer_contact_lines
    customer = SimpleNamespace(email="", address_line1="100 Congress Ave", address_line2="", city="Austin",
                               state=state, zip_code=zip_code, country=country)
    assert customer_contact_lines(customer) == ["100 Congress Ave", city_line, *([country] if country else [])]


def test_a_minimum_is_written_under_its_line_as_the_console_writes_it(api, book):
    chain = billing_chain(api, book, [usage("0.25", minimumCommitment=100)])
    event(chain, 40, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    text = pdf_text(api.get(f"/v1/invoices/{invoice['id']}/pdf").content)
    assert "minimum 100 · used 40" in text, text


def test_an_issued_invoice_keeps_the_parties_it_was_issued_with(api, book, profiled):
    """A document does not change once issued: the seller's and the customer's billing profiles edited later show
    on drafts, never on an invoice already sent."""
    chain = billing_chain(api, book, [recurring("20")])
    ok(api.patch(f"/v1/customers/{chain.customer.id}", {"addressLine1": "5 Old Road", "city": "Oldtown"}))
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    ok(api.patch(f"/v1/customers/{chain.customer.id}", {"addressLine1": "9 New Avenue", "city": "Newtown",
                                                        "email": "new-ap@client.example.com"}))
    profiled.address, profiled.tax_id = "2 Moved Street\nElsewhere 99999", "GB999999999"
    profiled.save()
    text = pdf_text(api.get(f"/v1/invoices/{invoice['id']}/pdf").content)
    for kept in ("5 Old Road", "Oldtown", "1 Market Street", "Tax id: GB123456789"):
        assert kept in text, (kept, text)
    for later in ("9 New Avenue", "Newtown", "new-ap@client.example.com", "2 Moved Street", "GB999999999"):
        assert later not in text, (later, text)
    # A draft reads the profiles as they are now.
    feb = ok(api.post("/v1/invoices/generate", {
        "customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
        "billingPeriodStart": "2025-02-01T00:00:00Z", "billingPeriodEnd": "2025-03-01T00:00:00Z"}), 201)
    text = pdf_text(api.get(f"/v1/invoices/{feb['id']}/pdf").content)
    assert "9 New Avenue" in text and "2 Moved Street" in text


def test_a_signal_named_by_a_usage_record_reads_as_words_on_the_invoice(api, book):
    chain = billing_chain(api, book, [usage("0.25")])
    chain.signal.name = "tickets_resolved"  # as a usage record creates it on first sight
    chain.signal.save()
    event(chain, 4, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    assert [line["description"] for line in invoice["lines"]] == ["strategy 0: 4 tickets resolved"]
    assert "tickets_resolved" not in pdf_text(api.get(f"/v1/invoices/{invoice['id']}/pdf").content)
