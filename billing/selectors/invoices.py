from django.db.models import Prefetch

from billing.models import Invoice, InvoiceLine, Payment
from config.core.scoping import get_owned, owned


def invoice_list(*, book):
    """Newest first."""
    return owned(Invoice, book).select_related("customer").order_by("-created_at", "-id")


def invoice_get(*, book, invoice_id) -> Invoice:
    """One invoice with what its full rendering reads: lines (with agents), payments (with refunds)."""
    queryset = owned(Invoice, book).select_related("customer", "subscription", "book__organization").prefetch_related(
        Prefetch("lines", queryset=InvoiceLine.objects.select_related("agent").order_by("position")),
        Prefetch("payments", queryset=Payment.objects.prefetch_related("refunds").order_by("created_at", "id")))
    return get_owned(Invoice, book, invoice_id, queryset=queryset)
