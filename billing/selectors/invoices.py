from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, F, Prefetch, Q, Sum, Value
from django.db.models.functions import Greatest

from billing.models import PAYABLE, SETTLED, ChargeType, Invoice, InvoiceLine, InvoiceStatus, Payment
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


@dataclass(frozen=True)
class InvoiceTotals:
    """What a selection of invoices in one currency adds up to: the columns `total` (void ones left out: they bill
    nothing), `amount_paid` (net of refunds; a void invoice's too, money received) and `amount_due` of a list, summed
    over every page."""

    currency: str
    invoices: int
    drafts: int
    void: int
    total: Decimal
    paid: Decimal
    due: Decimal


def invoice_totals(invoices) -> list[InvoiceTotals]:
    """The totals of `invoices` (a queryset, already scoped and filtered) per currency, in one read."""
    live = ~Q(status=InvoiceStatus.VOID)
    # Annotated under names of their own: `total=Sum("total")` would make F("total") below read the sum.
    rows = (invoices.order_by().values("currency").annotate(
        invoice_count=Count("id"), draft_count=Count("id", filter=Q(status=InvoiceStatus.DRAFT)),
        void_count=Count("id", filter=Q(status=InvoiceStatus.VOID)),
        summed_total=Sum("total", filter=live, default=ZERO), summed_paid=Sum("amount_paid", default=ZERO),
        # `Invoice.amount_due`: nothing once settled, never below zero.
        summed_due=Sum(Greatest(F("total") - F("amount_paid"), Value(ZERO)), filter=~Q(status__in=SETTLED),
                       default=ZERO))
        .order_by("currency"))
    return [InvoiceTotals(row["currency"], row["invoice_count"], row["draft_count"], row["void_count"],
                          row["summed_total"], row["summed_paid"], row["summed_due"]) for row in rows]


def invoice_replacing(voided: Invoice) -> Invoice | None:
    """The invoice generated again for a void invoice's subscription and period (the newest one not void), if any."""
    return (owned(Invoice, voided.book_id).filter(subscription_id=voided.subscription_id,
                                                   period_start=voided.period_start, period_end=voided.period_end)
            .exclude(status=InvoiceStatus.VOID).exclude(pk=voided.pk).order_by("-created_at", "-id").first())


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
