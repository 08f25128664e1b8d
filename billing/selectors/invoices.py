from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, F, Prefetch, Q, Sum

from billing.models import PAYABLE, ChargeType, Invoice, InvoiceLine, InvoiceStatus, Payment
from billing.pricing.usage import billed_usage
from core.money import ZERO
from core.scoping import get_owned, owned
from customers.partitions import archived_spans, overlaps_archive


def invoice_list(*, book):
    """Newest first."""
    return owned(Invoice, book).select_related("customer").order_by("-created_at", "-id")


def invoice_documents(*, book):
    """Invoices with what their full rendering (JSON, PDF, page) reads: lines (with agents), payments (with
    refunds)."""
    return owned(Invoice, book).select_related("customer", "subscription", "book__organization").prefetch_related(
        Prefetch("lines", queryset=InvoiceLine.objects.select_related("agent").order_by("position")),
        Prefetch("payments", queryset=Payment.objects.prefetch_related("refunds").order_by("created_at", "id")))


def invoice_get(*, book, invoice_id) -> Invoice:
    return get_owned(Invoice, book, invoice_id, queryset=invoice_documents(book=book))


@dataclass(frozen=True)
class OverdueInvoices:
    count: int
    total: Decimal  # what they bill
    amount_due: Decimal  # what is still to collect (total minus the net collected)


def overdue_invoices(*, book) -> OverdueInvoices:
    """The book's overdue invoices (issued, unpaid after their due date; `invoices_mark_overdue`), summed."""
    sums = owned(Invoice, book).filter(status=InvoiceStatus.OVERDUE).aggregate(
        invoices=Count("pk"), billed=Sum("total"), due=Sum(F("total") - F("amount_paid")))
    return OverdueInvoices(sums["invoices"], sums["billed"] or ZERO, sums["due"] or ZERO)


@dataclass(frozen=True)
class AmountOwed:
    currency: str
    amount_due: Decimal
    invoices: int
    overdue: int


def customer_amounts_owed(*, book, customer) -> list[AmountOwed]:
    """What the customer still owes, per currency: the amount due of its sent invoices that are not settled
    (pending, issued, overdue; a draft is owed once sent), how many, and how many of them are overdue."""
    rows = (owned(Invoice, book).filter(customer=customer, status__in=PAYABLE)
            .values("currency").order_by("currency")
            .annotate(invoices=Count("pk"), overdue=Count("pk", filter=Q(status=InvoiceStatus.OVERDUE)),
                      due=Sum(F("total") - F("amount_paid"))))
    return [AmountOwed(row["currency"], max(row["due"], ZERO), row["invoices"], row["overdue"]) for row in rows]


@dataclass(frozen=True)
class UsageSinceIssued:
    signal_name: str
    billed: Decimal  # what the invoice's usage line counted
    recorded: Decimal  # what the subscription bills of the period in the ledger now


def usage_recorded_since_issued(invoice: Invoice) -> list[UsageSinceIssued]:
    """Each usage line of a final invoice (not a draft, not void) whose period the ledger now holds more usage of
    than the line counted: usage recorded for the period after the invoice was issued (a late batch, a
    back-fill). The invoice keeps what was reviewed (contract), so that usage is billed nowhere unless the invoice
    is voided and the period generated again; the console says so on the invoice. Counted with the invoice's
    captured terms, as its lines were; a period sharing a day with an archived month says nothing."""
    if invoice.status in (InvoiceStatus.DRAFT, InvoiceStatus.VOID):
        return []
    lines = [line for line in invoice.lines.all() if line.charge_type == ChargeType.USAGE and line.signal_id]
    if not lines or overlaps_archive(invoice.period_start, invoice.period_end, archived_spans()):
        return []
    recorded = billed_usage(book=invoice.book_id, windows={invoice.subscription: (invoice.period_start,
                                                                                    invoice.period_end)})
    found, seen = [], set()
    for line in lines:
        if line.signal_id in seen:
            continue
        seen.add(line.signal_id)
        billed = line.used_quantity if line.used_quantity is not None else line.quantity
        now = recorded.get((invoice.subscription_id, line.signal_id), ZERO)
        if now > billed:
            found.append(UsageSinceIssued((line.terms or {}).get("signalName") or str(line.signal_id), billed, now))
    return found
