from django.db.models import Prefetch

from billing.models import Invoice, InvoiceLine, Payment
from config.core.scoping import get_owned, owned


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
