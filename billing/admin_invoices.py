"""Operator console for invoices, payments and refunds: read-only records (money moves through the API, the
webhook and the scheduled jobs); voiding goes through the same service as the API."""
from django.contrib import admin, messages

from billing.models import Invoice, InvoiceLine, Payment, Refund
from billing.services.invoices import invoice_void
from config.accounts.admin_scoping import BookScopedAdmin, ScopedInlineMixin
from config.core import clock
from config.core.errors import ApiError


class ReadOnlyInline(ScopedInlineMixin, admin.TabularInline):
    extra = 0

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class InvoiceLineInline(ReadOnlyInline):
    model = InvoiceLine
    fields = ["position", "charge_type", "description", "agent", "signal", "quantity", "used_quantity", "amount",
              "prorated_days", "period_days", "terms"]
    readonly_fields = fields


class PaymentInline(ReadOnlyInline):
    model = Payment
    fields = ["created_at", "amount", "refunded_amount", "status", "provider", "provider_payment_id"]
    readonly_fields = fields
    show_change_link = True


class ReadOnlyAdmin(BookScopedAdmin):
    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Invoice)
class InvoiceAdmin(ReadOnlyAdmin):
    list_display = ["invoice_number", "customer", "status", "total", "amount_paid", "period_start", "period_end",
                    "due_date", "book"]
    list_filter = ["status", "currency", "book__environment"]
    search_fields = ["invoice_number", "customer__name", "customer__external_id", "subscription__name"]
    date_hierarchy = "created_at"
    list_select_related = ["customer", "book__organization"]
    inlines = [InvoiceLineInline, PaymentInline]
    actions = ["void_invoices"]

    @admin.action(description="Void the selected invoices (drafts and unpaid invoices)")
    def void_invoices(self, request, queryset):
        for invoice in queryset.order_by("pk"):
            try:
                invoice_void(book=invoice.book, invoice_id=invoice.pk, now=clock.now(), reason="voided in the console")
            except ApiError as exc:
                self.message_user(request, f"{invoice.invoice_number}: {exc.message}", messages.ERROR)
            else:
                self.message_user(request, f"{invoice.invoice_number} voided.")


class RefundInline(ReadOnlyInline):
    model = Refund
    fields = ["created_at", "amount", "provider_refund_id", "reason"]
    readonly_fields = fields


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "invoice", "amount", "refunded_amount", "status", "provider", "provider_payment_id"]
    list_filter = ["status", "provider", "book__environment"]
    search_fields = ["provider_payment_id", "invoice__invoice_number", "invoice__customer__name"]
    date_hierarchy = "created_at"
    list_select_related = ["invoice", "book__organization"]
    inlines = [RefundInline]


@admin.register(Refund)
class RefundAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "payment", "amount", "provider_refund_id", "reason"]
    search_fields = ["provider_refund_id", "payment__provider_payment_id", "payment__invoice__invoice_number"]
    date_hierarchy = "created_at"
    list_select_related = ["payment", "book__organization"]
