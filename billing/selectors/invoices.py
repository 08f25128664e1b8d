from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, F, Prefetch, Sum

from billing.models import Invoice, InvoiceLine, InvoiceStatus, Payment
from core.money import ZERO
from core.scoping import get_owned, owned


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
