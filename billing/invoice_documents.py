"""What a customer reads: the invoice as a PDF and as an email (HTML and text). Rendering only; the invoice
services decide when and to whom."""
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.core.mail.utils import DNS_NAME
from django.template.loader import render_to_string
from email.utils import formataddr, make_msgid
from fpdf import FPDF
from fpdf.enums import XPos, YPos

from billing import stripe_gateway
from billing.services.payments import local_checkout_enabled
from billing.models import Invoice, InvoiceLine, InvoiceStatus
from billing.pay_links import live_pay_token, pay_url
from billing.pricing.periods import local_date, local_midnight
from billing.pricing.terms import PricedStrategy, period_timezone
from core import display
from core.money import ZERO
from core.display import money


def period_days(invoice: Invoice) -> tuple[str, str]:
    """The period as inclusive local days of the subscription (its end is exclusive). A bound that is not a local
    midnight (a plan change at 21:43) is written with its local time, `2026-11-28 21:43 PST`: the two invoices of
    a change then read as the parts of that day each holds, not both as the whole day."""
    return bounds_days(invoice.subscription, invoice.period_start, invoice.period_end)


def bounds_days(subscription, start: datetime, end: datetime) -> tuple[str, str]:
    """`[start, end)` of the subscription as `period_days` writes an invoice's period."""
    timezone = period_timezone(subscription, start)
    first, last = display.period_days(start, end, timezone)
    return _with_time(start, timezone) or first, _with_time(end, timezone) or last


def _with_time(bound: datetime, timezone: str) -> str | None:
    """The bound as local day and time when it is not the start of its local day; None when it is (where a clock
    change skips midnight, the day starts at 01:00: that is still a day's start, as periods turn there)."""
    if bound == local_midnight(local_date(bound, timezone), timezone):
        return None
    local = bound.astimezone(ZoneInfo(timezone))
    return f"{local:%Y-%m-%d %H:%M} {local:%Z}"


def period_label(invoice: Invoice) -> str:
    """The period as people read it everywhere: `2026-10-01 to 2026-10-31`."""
    return display.days(*period_days(invoice))


def unit_price(line: InvoiceLine) -> str:
    """What one unit costs on the line: the fee of a fee line, the rate that prices every unit of a flat or
    volume line (a seat line prorated by days too: its note says the days); graduated tiers and a credit pool
    have no single unit price (their tiers are in the line's note)."""
    terms = line.terms or {}
    currency = line.invoice.currency
    if line.charge_type in ("recurring", "onetime", "prorated") or (line.quantity == 1 and not terms.get("tiers")):
        return money(line.amount, currency)
    try:
        strategy = PricedStrategy.from_document(terms).terms  # the strategy as the invoice kept it
    except (KeyError, TypeError, ValueError, ArithmeticError):  # terms written by hand or before the engine's
        return "tiered" if terms.get("tiers") else ""
    rate = strategy.unit_rate(line.quantity)
    if rate is None:
        return "tiered" if terms.get("tiers") else ""
    price = display.price(rate, currency)
    # A seat's rate is stated per its billingFrequency and converted to the cycle: "5 x $120.00" beside $50.00 on
    # a monthly cycle read as a mistake; the rate says what it is a rate of.
    if line.charge_type == "seat_based" and strategy.billing_frequency != line.invoice.subscription.billing_cycle:
        price += f" a {'year' if strategy.billing_frequency == 'yearly' else 'month'}"
    return price


def line_note(line: InvoiceLine, currency: str) -> str:
    """How the line was priced, in words: the pricing model and its tiers, a minimum, the usage counted when the
    minimum lifted it, and the days of a prorated charge."""
    terms = line.terms or {}
    parts = []
    model = terms.get("pricingModel")
    if terms.get("tiers"):
        # As the plan's strategies are written (docs/console.md): a credit pool as its pool and overage rate.
        pool = model == "credit_pool"
        written = display.tiers(terms["tiers"], pool=pool, currency=currency)
        parts.append(written if pool else f"{str(model or 'tiered').replace('_', ' ')}: {written}")
    minimum = Decimal(str(terms.get("minimumCommitment") or 0))
    if minimum > 0:
        parts.append(f"minimum {display.quantity(minimum)}")
    if line.used_quantity is not None and line.used_quantity != line.quantity:
        parts.append(f"used {display.quantity(line.used_quantity)}")
    if line.prorated_days is not None and line.period_days:
        parts.append(f"prorated {line.prorated_days} of {line.period_days} days")
    return " · ".join(parts)


@dataclass(frozen=True)
class Seller:
    """The organization's billing profile, as invoices print it."""

    name: str
    address: str
    tax_id: str
    logo_path: str | None
    payment_instructions: str
    sender: str  # the email's From: header

    @classmethod
    def of(cls, organization) -> "Seller":
        logo = organization.logo.path if organization.logo else None
        sender = settings.DEFAULT_FROM_EMAIL
        if organization.sender_email:
            sender = formataddr((organization.sender_name or organization.display_name, organization.sender_email))
        return cls(organization.display_name, organization.address, organization.tax_id, logo,
                   organization.payment_instructions, sender)


# Countries whose addresses end "City, ST 12345" (their postal services' own form); elsewhere the postal code comes
# first ("1100-048 Lisboa"), as most of Europe writes it.
_CITY_STATE_POSTCODE = frozenset({"US", "USA", "UNITED STATES", "UNITED STATES OF AMERICA", "CA", "CANADA", "AU",
                                  "AUSTRALIA"})


def _city_line(customer) -> str:
    if (customer.country or "").strip().upper().replace(".", "") in _CITY_STATE_POSTCODE:
        region = " ".join(part for part in (customer.state, customer.zip_code) if part)
        return ", ".join(part for part in (customer.city, region) if part)
    return " ".join(part for part in (customer.zip_code, customer.city, customer.state) if part)


def customer_contact_lines(customer) -> list[str]:
    """The customer's email and postal address, one line each, empty parts left out."""
    return [part for part in (customer.email, customer.address_line1, customer.address_line2, _city_line(customer),
                              customer.country) if part]


def bill_to_lines(customer) -> list[str]:
    """The customer as an invoice addresses it: the name, then `customer_contact_lines`."""
    return [line for line in (customer.name, *customer_contact_lines(customer)) if line]


def parties_document(invoice: Invoice) -> dict:
    """Who the invoice is from and to, as an issued invoice keeps them (`Invoice.parties`)."""
    seller = Seller.of(invoice.book.organization)
    return {"seller": {"name": seller.name, "address": seller.address, "taxId": seller.tax_id,
                      "paymentInstructions": seller.payment_instructions},
            "billTo": bill_to_lines(invoice.customer)}


def received_and_refunded(payments) -> tuple[Decimal, Decimal]:
    """What the invoice's payments brought in and what their refunds gave back (the Refund rows the API lists
    under each payment; pass payments with their refunds prefetched). Received minus refunded is the invoice's net
    collected, `Invoice.amount_paid`: the totals show all three so that they visibly add up."""
    received = sum((payment.amount for payment in payments), ZERO)
    refunded = sum((refund.amount for payment in payments for refund in payment.refunds.all()), ZERO)
    return received, refunded


@dataclass(frozen=True)
class InvoiceView:
    """Everything a rendering shows, read once from the invoice and its rows."""

    invoice: Invoice
    business_name: str
    lines: list
    payments: list
    seller: Seller | None = None
    pay_url: str | None = None  # the live pay-now link, when the invoice has been sent and is payable
    bill_to: tuple[str, ...] = ()  # the customer's name, email and address lines

    @classmethod
    def of(cls, invoice: Invoice) -> "InvoiceView":
        """The invoice as it reads: an issued one with the parties it was issued with, a draft with today's."""
        seller = Seller.of(invoice.book.organization)
        bill_to = bill_to_lines(invoice.customer)
        if invoice.parties:
            kept = invoice.parties["seller"]
            seller = replace(seller, name=kept["name"], address=kept["address"], tax_id=kept["taxId"],
                             payment_instructions=kept["paymentInstructions"])
            bill_to = invoice.parties["billTo"]
        token = live_pay_token(invoice) if invoice.status not in (InvoiceStatus.PAID, InvoiceStatus.VOID,
                                                                   InvoiceStatus.REFUNDED) else None
        payments = list(invoice.payments.prefetch_related("refunds"))  # the totals sum the refunds
        return cls(invoice, seller.name, list(invoice.lines.all()), payments, seller,
                   pay_url(token) if token else None, tuple(bill_to))

    @property
    def period(self) -> tuple[str, str]:
        return period_days(self.invoice)

    @property
    def line_amounts(self) -> list[tuple[str, str]]:
        """Each line's description and amount, written as the totals write money (the email and the pay page
        printed the bare number beside totals that carry the currency)."""
        return [(line.description, money(line.amount)) for line in self.lines]

    @property
    def totals(self) -> list[tuple[str, str]]:
        invoice = self.invoice
        rows = [("Subtotal", money(invoice.subtotal))]
        if invoice.discount:
            rows.append(("Discount", "-" + money(invoice.discount)))
        if invoice.tax:
            rows.append((f"Tax ({invoice.tax_percent.normalize():f}%)", money(invoice.tax)))
        rows.append(("Total", money(invoice.total)))
        received, refunded = received_and_refunded(self.payments)
        if refunded:
            # What came in, what was given back and what stays collected, so the three add up on the document;
            # nothing given back is due again (`Invoice.amount_due`).
            rows += [("Payments received", money(received)), ("Refunded", money(refunded)),
                     ("Amount paid (net of refunds)", money(invoice.amount_paid)),
                     ("Amount due", money(invoice.amount_due))]
        elif invoice.amount_paid:
            # Positive, as the console's invoice page shows it: a minus sign read as a refund.
            rows += [("Amount paid", money(invoice.amount_paid)), ("Amount due", money(invoice.amount_due))]
        if invoice.amount_overpaid > 0:
            rows.append(("Overpaid (to refund)", money(invoice.amount_overpaid)))
        return rows


# --------------------------------------------------------------------------- PDF

def _latin1(text: str) -> str:
    """The PDF's core fonts cover Latin-1; other characters print as '?' rather than failing."""
    return str(text).encode("latin-1", "replace").decode("latin-1")


class _InvoicePdf(FPDF):
    def row(self, cells: list[tuple[str, float, str]], *, bold: bool = False, height: float = 7) -> None:
        self.set_font("Helvetica", "B" if bold else "", 10)
        for text, width, align in cells:
            self.cell(width, height, _latin1(text), align=align)
        self.ln(height)

    def line_text(self, text: str, *, size: int = 10, bold: bool = False) -> None:
        self.set_font("Helvetica", "B" if bold else "", size)
        self.multi_cell(0, size * 0.55, _latin1(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT)


def invoice_pdf(view: InvoiceView) -> bytes:
    invoice = view.invoice
    pdf = _InvoicePdf(format="A4")
    pdf.set_title(_latin1(f"Invoice {invoice.invoice_number}"))
    pdf.set_author(_latin1(view.business_name))
    pdf.add_page()
    seller = view.seller
    if seller and seller.logo_path:
        try:
            pdf.image(seller.logo_path, x=150, y=10, h=16)
        except Exception:  # an unreadable logo file never stops an invoice from rendering
            pass
    pdf.line_text(view.business_name, size=18, bold=True)
    if seller:
        for part in [*seller.address.splitlines(), f"Tax id: {seller.tax_id}" if seller.tax_id else ""]:
            if part.strip():
                pdf.line_text(part.strip(), size=9)
    heading = f"Invoice {invoice.invoice_number}"
    if invoice.status in (InvoiceStatus.DRAFT, InvoiceStatus.VOID):
        heading += f" ({invoice.status.upper()})"
    pdf.line_text(heading, size=14, bold=True)
    pdf.ln(2)
    first, last = view.period
    # Pending is an issued invoice whose email is on its way: the PDF that email attaches says issued, as every
    # later copy of it does (the customer never sees a status "pending").
    status = InvoiceStatus.ISSUED if invoice.status == InvoiceStatus.PENDING else invoice.status
    facts = [f"Status: {InvoiceStatus(status).label}", f"Billing period: {first} to {last}"]  # as the console writes it
    if invoice.issued_at:
        facts.append(f"Issued: {local_date(invoice.issued_at, invoice.subscription.timezone).isoformat()}")
    if invoice.due_date:
        facts.append(f"Due: {invoice.due_date.isoformat()}")
    for fact in facts:
        pdf.line_text(fact)
    pdf.ln(3)
    pdf.line_text("Bill to", bold=True)
    for part in view.bill_to:
        pdf.line_text(part)
    if invoice.memo:
        pdf.ln(3)
        pdf.line_text(invoice.memo)
    pdf.ln(4)
    pdf.row([("Description", 95, "L"), ("Quantity", 30, "R"), ("Unit price", 30, "R"), ("Amount", 35, "R")],
            bold=True)
    for line in view.lines:
        pdf.row([(line.description[:56], 95, "L"), (display.quantity(line.quantity), 30, "R"),
                 (unit_price(line), 30, "R"), (money(line.amount, invoice.currency), 35, "R")])
        note = line_note(line, invoice.currency)  # tiers, a minimum, the usage it lifted, proration: as the console
        if note:
            pdf.line_text(f"  {note}"[:110], size=8)
    pdf.ln(2)
    for label, value in view.totals:
        pdf.row([("", 90, "L"), (label, 60, "R"), (value, 40, "R")], bold=label in ("Total", "Amount due"))
    if view.payments:
        pdf.ln(4)
        pdf.line_text("Payments", bold=True)
        for payment in view.payments:
            refunded = f", refunded {money(payment.refunded_amount)}" if payment.refunded_amount else ""
            pdf.line_text(f"{payment.created_at.date().isoformat()}: {money(payment.amount)}{refunded}")
    if invoice.amount_due > 0 and (view.pay_url or (seller and seller.payment_instructions)):
        pdf.ln(4)
        pdf.line_text("How to pay", bold=True)
        if view.pay_url:
            # Without a payment provider (nor the development checkout) the link shows the invoice and how to pay
            # it, not a checkout: the PDF does not promise one.
            # Nor for an amount Stripe does not take (the link shows how to pay it otherwise).
            online = (stripe_gateway.pays_online(invoice.amount_due, invoice.currency, livemode=invoice.book.livemode)
                      or local_checkout_enabled())
            pdf.line_text(f"{'Pay online' if online else 'View online'}: {view.pay_url}")
        if seller and seller.payment_instructions:
            pdf.line_text(seller.payment_instructions)
    return bytes(pdf.output())


# --------------------------------------------------------------------------- email

@dataclass(frozen=True)
class InvoiceEmail:
    to: str
    cc: list[str]
    subject: str
    message: str  # the sender's callout above the details; may be empty
    pay_url: str | None


def _owed(invoice) -> str:
    """The email's first figure: the total, and what is still due when part of it was paid (an invoice sent again
    after a partial payment must not read as asking for the whole total)."""
    total = money(invoice.total, invoice.currency)
    if invoice.amount_paid > 0 and invoice.amount_due > 0:
        return f"{total}, of which {money(invoice.amount_due, invoice.currency)} is still due"
    return total


def send_invoice_email(view: InvoiceView, email: InvoiceEmail) -> str:
    """Send the invoice email with its PDF attached; returns its Message-ID. The backend's errors propagate."""
    invoice = view.invoice
    first, last = view.period
    issued_day = local_date(invoice.issued_at, invoice.subscription.timezone) if invoice.issued_at else None
    context = {"view": view, "invoice": invoice, "business_name": view.business_name, "message": email.message,
               "customer_name": invoice.customer.name, "seller": view.seller,
               "pay_url": email.pay_url, "period_first": first, "period_last": last,
               "total": money(invoice.total, invoice.currency), "amount_due": money(invoice.amount_due),
               "issued_day": issued_day, "owed": _owed(invoice), "overdue": invoice.status == InvoiceStatus.OVERDUE}
    message_id = make_msgid(domain=str(DNS_NAME))
    message = EmailMultiAlternatives(
        subject=email.subject, body=render_to_string("billing/email/invoice.txt", context),
        from_email=view.seller.sender if view.seller else settings.DEFAULT_FROM_EMAIL, to=[email.to], cc=email.cc,
        headers={"Message-ID": message_id})
    message.attach_alternative(render_to_string("billing/email/invoice.html", context), "text/html")
    message.attach(f"invoice-{invoice.invoice_number}.pdf", invoice_pdf(replace(view, pay_url=email.pay_url)),
                   "application/pdf")
    message.send()
    return message_id

