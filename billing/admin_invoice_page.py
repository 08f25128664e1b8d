"""The console's invoice page as the document reads: who bills whom for which period, the lines with quantity, unit
price and amount, discount, tax and totals, the payments and refunds, and what is due or owed back; plus which of
the page's actions the invoice's state and the operator's role allow. Values are formatted by core/display.py,
as the portal and the PDF format them. Nothing secret is read: the pay link's token exists only in the email."""
from dataclasses import dataclass, field
from decimal import Decimal
from urllib.parse import urlencode

from django.urls import reverse
from django.utils.html import format_html

from billing.invoice_documents import (Seller, customer_contact_lines, line_note, period_days, period_label,
                                       received_and_refunded, unit_price)
from billing.models import PAYABLE, ChargeType, Invoice, InvoiceLine, InvoiceStatus, Payment
from billing.pricing.lines import claims_counted_by, claims_of_document
from billing.selectors.invoices import invoice_replacing, usage_recorded_since_issued
from accounts.admin_scoping import may_act
from accounts.api import MONEY_ROLES
from core import clock, display

SENDABLE = (InvoiceStatus.DRAFT, *PAYABLE)


@dataclass(frozen=True)
class PageLine:
    description: str
    note: str  # how the line was priced: tiers, minimum, usage counted, proration
    quantity: str
    unit_price: str
    amount: str
    events_url: str | None = None  # the usage events the line counted, in the console's list of events


def _counted_events_url(invoice: Invoice, line: InvoiceLine, claims: list) -> str | None:
    """The console's list of usage events filtered to those a usage line counted: its customer, agent and signal over
    the one span the invoice billed of that signal, as recorded by the time the line read the ledger (a later event
    is the page's late usage). None for a fee, and where the span is in pieces (another subscription billed part of
    the period), which one filter of the list cannot say."""
    if line.charge_type != ChargeType.USAGE or line.signal_id is None:
        return None
    spans = [claim for claim in claims if claim.signal_id == line.signal_id]
    if len(spans) != 1:
        return None
    [span] = spans
    read_at = invoice.usage_read_at or invoice.issued_at or invoice.updated_at
    return reverse("admin:customers_usageevent_changelist") + "?" + urlencode({
        "customer__id__exact": invoice.customer_id, "agent__id__exact": span.agent_id,
        "signal__id__exact": span.signal_id, "usage_date__gte": span.start.isoformat(),
        "usage_date__lt": span.end.isoformat(), "created_at__lte": read_at.isoformat()})


@dataclass(frozen=True)
class PageRefund:
    at: str
    amount: str
    reason: str


@dataclass(frozen=True)
class PagePayment:
    pk: str
    at: str
    amount: str
    refunded: str
    refundable: str  # empty when nothing is left to refund
    status: str
    provider: str
    reference: str
    refunds: list[PageRefund] = field(default_factory=list)


@dataclass(frozen=True)
class InvoicePage:
    invoice: Invoice
    seller: Seller
    customer_lines: list[str]
    period: str
    facts: list[tuple[str, str]]
    lines: list[PageLine]
    totals: list[tuple[str, str, bool]]  # label, amount, emphasized
    payments: list[PagePayment]
    may_send: bool
    may_void: bool
    may_record_payment: bool
    may_adjust: bool  # a draft's discount, tax and memo
    may_refund: bool
    money_role: bool  # the operator may void, record payments and refund here (owner, admin, finance)
    amount_due: str
    overpaid: str | None
    usage_since_issued: list[str] = field(default_factory=list)  # usage of the period the invoice does not bill
    # A void invoice's period billed again: the subscription's page that generates an invoice for a chosen period,
    # with this period chosen. Else empty.
    generate_again_url: str = ""
    # A draft whose billing period has not ended: sending it now bills the usage recorded so far, and what comes after
    # is on no invoice (contract: "Invoices keep what was reviewed"). The day the period ends, else empty.
    period_ends: str = ""


def _totals(invoice: Invoice, payments: list[Payment]) -> list[tuple[str, str, bool]]:
    money = lambda amount: display.money(amount, invoice.currency)  # noqa: E731
    rows = [("Subtotal", money(invoice.subtotal), False)]
    if invoice.discount:
        how = [display.percent(invoice.discount_percent)] if invoice.discount_percent else []
        how += [money(invoice.discount_fixed)] if invoice.discount_fixed else []
        rows.append((f"Discount ({' + '.join(how)})" if how else "Discount", "-" + money(invoice.discount), False))
    if invoice.tax:
        rows.append((f"Tax ({display.percent(invoice.tax_percent)})", money(invoice.tax), False))
    rows.append(("Total", money(invoice.total), True))
    received, refunded = received_and_refunded(payments)
    if refunded:
        # A refund leaves the net below what came in: show what came in and what went back, so that the net (and
        # an amount due of nothing on a paid invoice) reads as their difference, as the PDF shows it.
        rows += [("Payments received", money(received), False), ("Refunded", money(refunded), False)]
    # What was paid is a positive amount (as a payment provider's invoice shows it); "Amount due" below is the
    # difference. A minus sign here read as a refund.
    rows.append(("Amount paid (net of refunds)", money(invoice.amount_paid), False))
    if invoice.status != InvoiceStatus.VOID:  # a void invoice owes nothing
        rows.append(("Amount due", money(invoice.amount_due), True))
    if invoice.amount_overpaid > 0:
        rows.append(("Overpaid (to refund)", money(invoice.amount_overpaid), True))
    return rows


def _payments(payments: list[Payment], currency: str) -> list[PagePayment]:
    return [PagePayment(
        # The day an operator says the money arrived, else when the provider's payment was recorded.
        str(payment.pk),
        payment.received_on.isoformat() if payment.received_on else display.moment(payment.created_at),
        display.money(payment.amount, currency),
        display.money(payment.refunded_amount, currency) if payment.refunded_amount else display.EMPTY,
        display.money(payment.refundable, currency) if payment.refundable > 0 else "",
        payment.get_status_display(), payment.provider, payment.provider_payment_id,
        [PageRefund(display.moment(refund.created_at), display.money(refund.amount, currency),
                    refund.reason or display.EMPTY) for refund in payment.refunds.all()],
    ) for payment in payments]


def invoice_page(invoice: Invoice, user) -> InvoicePage:
    currency, subscription = invoice.currency, invoice.subscription
    timezone = subscription.timezone
    lines = list(invoice.lines.all())
    claims = ((claims_of_document(invoice) if invoice.billed_claims is not None else claims_counted_by(invoice))
              if any(line.charge_type == ChargeType.USAGE for line in lines) else [])
    lines = [PageLine(line.description, line_note(line, currency), display.quantity(line.quantity),
                      unit_price(line), display.money(line.amount, currency), _counted_events_url(invoice, line, claims))
             for line in lines]
    facts = [("Status", invoice.get_status_display()), ("Billing period", period_label(invoice)),
             ("Issued", display.day(invoice.issued_at, timezone)), ("Due", display.day(invoice.due_date))]
    if invoice.paid_at:
        facts.append(("Paid", display.day(invoice.paid_at, timezone)))
    if invoice.voided_at:
        facts.append(("Voided", f"{display.day(invoice.voided_at, timezone)}"
                                f"{': ' + invoice.void_reason if invoice.void_reason else ''}"))
        replacement = invoice_replacing(invoice)
        if replacement is not None:
            facts.append(("Replaced by", format_html('<a href="{}">{}</a>', reverse(
                "admin:billing_invoice_change", args=[replacement.pk]), replacement.invoice_number)))
    if invoice.last_sent_at:
        facts.append(("Last sent", display.moment(invoice.last_sent_at)))
    payments = list(invoice.payments.prefetch_related("refunds"))
    money_role = may_act(user, invoice.book.organization_id, MONEY_ROLES)
    return InvoicePage(
        invoice=invoice, seller=Seller.of(invoice.book.organization), customer_lines=customer_contact_lines(invoice.customer),
        period=period_label(invoice), facts=facts, lines=lines, totals=_totals(invoice, payments),
        payments=_payments(payments, currency),
        may_send=invoice.status in SENDABLE,
        may_void=(money_role and invoice.status in (*SENDABLE, InvoiceStatus.REFUNDED)
                  and invoice.amount_paid == 0),
        may_record_payment=money_role and invoice.status in PAYABLE,
        may_adjust=money_role and invoice.status == InvoiceStatus.DRAFT,
        may_refund=money_role and any(payment.refundable > 0 for payment in payments), money_role=money_role,
        amount_due=(display.EMPTY if invoice.status == InvoiceStatus.VOID
                    else display.money(invoice.amount_due, currency)),
        overpaid=display.money(invoice.amount_overpaid, currency) if invoice.amount_overpaid > 0 else None,
        generate_again_url=(reverse("admin:billing_subscription_generate_invoice", args=[invoice.subscription_id])
                            + "?" + urlencode({"period": f"{invoice.period_start.isoformat()}/"
                                                         f"{invoice.period_end.isoformat()}"})
                            if invoice.status == InvoiceStatus.VOID else ""),
        period_ends=(period_days(invoice)[1]
                     if invoice.status == InvoiceStatus.DRAFT and invoice.period_end > clock.now() else ""),
        # "tickets resolved: 1 not on it", never "1 tickets resolved": a signal's name is not a noun to put in the
        # plural.
        usage_since_issued=[f"{display.unit(late.signal_name)}: {display.quantity(late.recorded - late.billed)} not "
                            f"on it (billed {display.quantity(late.billed)}, recorded for the period now "
                            f"{display.quantity(late.recorded)})" for late in usage_recorded_since_issued(invoice)],
    )
