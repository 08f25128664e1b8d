"""Operator console for invoices, payments and refunds. The records are read-only (money moves through the API,
the webhook and the scheduled jobs); the actions send, void and refund through the same services as the API."""
from decimal import Decimal

from django import forms
from django.contrib import admin
from django.db.models import F
from django.utils.html import format_html_join
from django.utils.safestring import mark_safe

from billing.models import Invoice, InvoiceLine, Payment, Refund
from billing.services.invoices import invoice_send, invoice_void
from billing.services.payments import refund_create
from config.accounts.admin_actions import act_on_rows, action_page, submitted
from config.accounts.admin_scoping import BookScopedAdmin, ReadOnlyAdminMixin, ScopedInlineMixin
from config.accounts.api import MONEY_ROLES
from config.core import clock
from config.core.money import CENTS_DIGITS, CENTS_PLACES, to_cents


def overpaid_or_none(invoice):
    """The surplus in cents, or None (the console's "-") when there is none: the rare value stands out."""
    return to_cents(invoice.amount_overpaid) if invoice.amount_overpaid > 0 else None


class OverpaidFilter(admin.SimpleListFilter):
    """Invoices that collected more than their total (paid twice): their surplus payment is to refund."""

    title = "overpaid"
    parameter_name = "overpaid"

    def lookups(self, request, model_admin):
        return [("yes", "Overpaid"), ("no", "Not overpaid")]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(amount_paid__gt=F("total"))
        if self.value() == "no":
            return queryset.filter(amount_paid__lte=F("total"))
        return queryset


class ReadOnlyInline(ReadOnlyAdminMixin, ScopedInlineMixin, admin.TabularInline):
    extra = 0


class InvoiceLineInline(ReadOnlyInline):
    model = InvoiceLine
    fields = ["position", "charge_type", "description", "agent", "signal", "quantity", "used_quantity", "amount",
              "prorated_days", "period_days", "terms_as_priced"]

    @admin.display(description="Terms as priced")
    def terms_as_priced(self, line):
        """One term a line (tiers one a line too), so the inline stays as wide as its other columns."""
        return format_html_join(mark_safe("<br>"), "{}: {}", _term_lines(line.terms or {}))


def _term_lines(terms: dict):
    for name, value in terms.items():
        if isinstance(value, list):
            for position, item in enumerate(value, 1):
                shown = ", ".join(f"{key} {item[key]}" for key in item) if isinstance(item, dict) else item
                yield f"{name} {position}", shown
        elif value not in (None, "", {}):
            yield name, value


class PaymentInline(ReadOnlyInline):
    model = Payment
    fields = ["created_at", "amount", "refunded_amount", "status", "provider", "provider_payment_id"]
    show_change_link = True


class RefundInline(ReadOnlyInline):
    model = Refund
    fields = ["created_at", "amount", "provider_refund_id", "reason"]


class InvoiceInline(ReadOnlyInline):
    """A subscription's invoices, newest period first."""

    model = Invoice
    fields = ["invoice_number", "status", "period_start", "period_end", "total", "amount_paid", "amount_overpaid",
              "issued_at", "due_date"]
    ordering = ["-period_start"]
    show_change_link = True

    @admin.display(description="Amount overpaid")
    def amount_overpaid(self, invoice):
        return overpaid_or_none(invoice)


class VoidForm(forms.Form):
    reason = forms.CharField(max_length=500, required=False, help_text="Kept on the invoice.")


class RefundForm(forms.Form):
    amount = forms.DecimalField(max_digits=CENTS_DIGITS, decimal_places=CENTS_PLACES, min_value=Decimal("0.01"),
                                required=False, help_text="Leave blank to refund what is left of each payment.")
    reason = forms.CharField(max_length=500, required=False)

    def __init__(self, *args, payment_count: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.payment_count = payment_count

    def clean_amount(self):
        amount = self.cleaned_data["amount"]
        if amount is not None and self.payment_count > 1:
            raise forms.ValidationError("Select one payment to refund an amount; leave it blank to refund what is "
                                        "left of each selected payment.")
        return amount


@admin.register(Invoice)
class InvoiceAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["invoice_number", "customer", "subscription", "status", "total", "amount_paid",
                    "amount_overpaid", "period_start", "period_end", "issued_at", "due_date", "book"]
    list_filter = ["status", OverpaidFilter, "currency", ("due_date", admin.DateFieldListFilter)]
    search_fields = ["invoice_number", "customer__name", "customer__external_id", "subscription__name"]
    date_hierarchy = "created_at"
    list_select_related = ["customer", "subscription", "book__organization"]
    exclude = ["pay_token_digest"]
    readonly_fields = ["amount_due", "amount_overpaid"]
    inlines = [InvoiceLineInline, PaymentInline]
    actions = ["send_invoices", "void_invoices"]

    def get_fields(self, request, obj=None):
        """The derived amounts right after what they derive from (the model's fields come first otherwise)."""
        derived = ["amount_due", "amount_overpaid"]
        fields = [field for field in super().get_fields(request, obj) if field not in derived]
        after = fields.index("amount_paid") + 1
        return [*fields[:after], *derived, *fields[after:]]

    @admin.display(description="Amount due")
    def amount_due(self, invoice):
        return to_cents(invoice.amount_due)

    @admin.display(description="Amount overpaid")
    def amount_overpaid(self, invoice):
        """To refund: the surplus payment(s), with the payments' refund action."""
        return overpaid_or_none(invoice)

    @admin.action(description="Send the selected invoices (finalizing drafts) to their customers")
    def send_invoices(self, request, queryset):
        now = clock.now()

        def send(invoice):
            delivery = invoice_send(book=invoice.book, invoice_id=invoice.pk, now=now)
            return f"{invoice} sent to {delivery.recipient} ({delivery.invoice.status})."
        act_on_rows(self, request, queryset.order_by("invoice_number"), send)

    @admin.action(description="Void the selected invoices (drafts and unpaid invoices)…")
    def void_invoices(self, request, queryset):
        form = submitted(request, VoidForm)
        if not (form.is_bound and form.is_valid()):
            return action_page(self, request, queryset, form, title="Void invoices", submit="Void",
                               intro="A void invoice keeps its number and its pay link stops working. Invoices "
                                     "with money collected must have their payments refunded first.")
        now, reason = clock.now(), form.cleaned_data["reason"]

        def void(invoice):
            invoice_void(book=invoice.book, invoice_id=invoice.pk, now=now, reason=reason)
            return f"{invoice} voided."
        act_on_rows(self, request, queryset.order_by("invoice_number"), void, roles=MONEY_ROLES)


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["created_at", "invoice", "amount", "refunded_amount", "status", "provider", "provider_payment_id",
                    "book"]
    list_filter = ["status", "provider"]
    search_fields = ["provider_payment_id", "invoice__invoice_number", "invoice__customer__name"]
    date_hierarchy = "created_at"
    list_select_related = ["invoice", "book__organization"]
    inlines = [RefundInline]
    actions = ["refund_payments"]

    @admin.action(description="Record a refund of the selected payments…")
    def refund_payments(self, request, queryset):
        form = submitted(request, RefundForm, payment_count=queryset.count())
        if not (form.is_bound and form.is_valid()):
            return action_page(self, request, queryset, form, title="Refund payments", submit="Refund",
                               intro="With Stripe configured, Stripe refunds a Stripe payment first. The invoice's "
                                     "collected amount shrinks; a paid invoice refunded in full becomes refunded.")
        now, amount, reason = clock.now(), form.cleaned_data["amount"], form.cleaned_data["reason"]

        def refund(payment):
            refunded = refund_create(book=payment.book, invoice_id=payment.invoice_id, payment_id=payment.pk, now=now,
                                     amount=amount, reason=reason)
            return f"Refunded {refunded.amount} of payment {payment.provider_payment_id} ({payment.invoice})."
        act_on_rows(self, request, queryset.order_by("created_at", "pk"), refund, roles=MONEY_ROLES)


@admin.register(Refund)
class RefundAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["created_at", "payment", "amount", "provider_refund_id", "reason", "book"]
    list_filter = ["payment__provider", ("provider_refund_id", admin.EmptyFieldListFilter)]
    search_fields = ["provider_refund_id", "payment__provider_payment_id", "payment__invoice__invoice_number"]
    date_hierarchy = "created_at"
    list_select_related = ["payment", "book__organization"]
