"""Operator console for invoices, payments and refunds. The records are read-only (money moves through the API,
the webhook, the scheduled jobs and the actions); the actions send, void, record payments received and refund
through the same services as the API."""
from decimal import Decimal
from functools import partial

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import F, Q
from django.http import Http404, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from billing.admin_create_pages import ApiForm
from billing.admin_invoice_page import invoice_page
from billing.invoice_documents import InvoiceView, invoice_pdf, period_days, period_label
from billing.models import PAYABLE, Invoice, InvoiceStatus, Payment, Refund
from billing.selectors.invoices import InvoiceTotals, invoice_totals
from billing.serializers.invoices import InvoiceUpdateIn
from billing.services.invoices import invoice_send, invoice_update, invoice_void
from billing.services.payments import PROVIDER_ID_LENGTH, payment_record_received, refund_create
from accounts.admin_actions import act_on_rows, action_page, submitted
from accounts.admin_display import MonthsDateFilter, figure, format_value, period_cell, presence_filter
from accounts.admin_scoping import BookScopedAdmin, ReadOnlyAdminMixin, ScopedInlineMixin, may_act
from accounts.api import MONEY_ROLES
from core import clock, display
from core.errors import EmailNotSent
from core.ids import uuid_or_none
from core.money import CENTS_DIGITS, CENTS_PLACES, to_cents
from core.scoping import owned
from core.serialization import decimal_text


def overpaid(invoice) -> str:
    """The surplus, or a dash when there is none: the rare value stands out."""
    return display.money(invoice.amount_overpaid, invoice.currency) if invoice.amount_overpaid > 0 else display.EMPTY


def _totals_line(totals: InvoiceTotals) -> str:
    """`8 invoices: total $2,417.16, paid $1,588.50, due $828.66 (1 void left out)`."""
    count = f"{totals.invoices} invoice{'s' if totals.invoices != 1 else ''}"
    if totals.currency.upper() != display.DEFAULT_CURRENCY.upper():
        count += f" in {totals.currency.upper()}"
    notes = [f"{totals.void} void left out of the total"] if totals.void else []
    if totals.drafts:
        notes.append(f"{totals.drafts} draft{'s' if totals.drafts != 1 else ''}, not sent yet")
    money = partial(display.money, currency=totals.currency)
    return (f"{count}: total {money(totals.total)}, paid {money(totals.paid)}, due {money(totals.due)}"
            + (f" ({'; '.join(notes)})" if notes else ""))


def amount_due(invoice) -> str:
    """What is still to collect; a void invoice owes nothing (a dash)."""
    if invoice.status == InvoiceStatus.VOID:
        return display.EMPTY
    return display.money(invoice.amount_due, invoice.currency)


class WaitingForPaymentFilter(admin.SimpleListFilter):
    """Sent invoices not settled yet, whatever their status among pending, issued and overdue (the status filter
    shows one status at a time): what the customers owe."""

    title = "payment"
    parameter_name = "payment"

    def lookups(self, request, model_admin):
        return [("waiting", "Waiting for payment")]

    def queryset(self, request, queryset):
        if self.value() == "waiting":
            return queryset.filter(status__in=PAYABLE)
        return queryset


class OverpaidFilter(admin.SimpleListFilter):
    """Invoices that collected more than their total (paid twice), or anything once void or refunded (a payment that
    reached them afterwards): what they hold beyond what they bill is to refund (`Invoice.amount_overpaid`)."""

    title = "overpaid"
    parameter_name = "overpaid"

    def lookups(self, request, model_admin):
        return [("yes", "Overpaid"), ("no", "Not overpaid")]

    def queryset(self, request, queryset):
        overpaid = Q(amount_paid__gt=F("total")) | Q(status__in=[InvoiceStatus.VOID, InvoiceStatus.REFUNDED],
                                                     amount_paid__gt=0)
        if self.value() == "yes":
            return queryset.filter(overpaid)
        if self.value() == "no":
            return queryset.exclude(overpaid)
        return queryset


class CurrencyFilter(admin.AllValuesFieldListFilter):
    """The currencies of the invoices listed, written as people read them (`USD`; stored as the API takes them,
    `usd`)."""

    def choices(self, changelist):
        for choice in super().choices(changelist):
            yield {**choice, "display": _upper_code(choice["display"])}


def _upper_code(display: str) -> str:
    # "All" and the empty value's label keep their case; a currency code (with its count when counted) is upper.
    code, _, count = str(display).partition(" ")
    return f"{code.upper()} {count}".strip() if len(code) == 3 and code.isalpha() and code.islower() else display


class ReadOnlyInline(ReadOnlyAdminMixin, ScopedInlineMixin, admin.TabularInline):
    extra = 0


class RefundInline(ReadOnlyInline):
    model = Refund
    fields = ["created_at", "amount", "provider_refund_id", "reason"]


class InvoiceInline(ReadOnlyInline):
    """A subscription's invoices, newest period first."""

    model = Invoice
    fields = ["invoice_number", "status", "period", "total", "amount_paid", "amount_overpaid", "issued_at", "due_date"]
    ordering = ["-period_start"]
    show_change_link = True

    @admin.display(description="Period")
    def period(self, invoice):
        return period_cell(period_label(invoice))

    @admin.display(description="Amount overpaid")
    def amount_overpaid(self, invoice):
        return figure(overpaid(invoice))

    @admin.display(description="Amount due")
    def amount_due(self, invoice):
        return figure(amount_due(invoice))


class SendForm(forms.Form):
    """The confirmation of a send that finalizes drafts whose period has not ended (nothing to fill in)."""


class VoidForm(forms.Form):
    reason = forms.CharField(max_length=500, required=False, help_text="Kept on the invoice.")


class PaymentForm(forms.Form):
    amount = forms.DecimalField(max_digits=CENTS_DIGITS, decimal_places=CENTS_PLACES, min_value=Decimal("0.01"))
    reference = forms.CharField(max_length=PROVIDER_ID_LENGTH,
                                help_text="The transfer's or cheque's reference: recording it twice records it once.")
    received_on = forms.DateField(label="Received on", required=False, widget=forms.DateInput(attrs={"type": "date"}),
                                  help_text="The day the money arrived, as on the bank statement (blank: today).")

    def __init__(self, *args, invoice=None, **kwargs):
        super().__init__(*args, **kwargs)
        if invoice is not None and not self.is_bound:
            self.fields["amount"].initial = invoice.amount_due


class AdjustForm(ApiForm):
    """A draft's discount, tax rate and memo, read by the API's own serializer (`PATCH /v1/invoices/{id}`) and saved
    by the same service: the same rules and the same exact decimals. The form shows the draft's values, so a number
    cleared is 0 (no discount, no tax)."""

    discount_percent = forms.CharField(label="Discount (%)", required=False)
    discount_fixed = forms.CharField(label="Discount (amount)", required=False)
    tax_percent = forms.CharField(label="Tax rate (%)", required=False)
    memo = forms.CharField(max_length=5000, required=False, widget=forms.Textarea(attrs={"rows": 3}),
                           help_text="Printed on the invoice; blank for none.")
    API_FIELDS = {"discount_percent": "discountPercent", "discount_fixed": "discountFixed", "tax_percent": "taxRate",
                  "memo": "invoiceMemo"}

    def __init__(self, *args, invoice=None, **kwargs):
        super().__init__(*args, **kwargs)
        if invoice is not None and not self.is_bound:
            for name in self.fields:
                value = getattr(invoice, name)
                self.fields[name].initial = decimal_text(value) if isinstance(value, Decimal) else value

    def api_body(self) -> dict:
        """Every field, a cleared number as 0 and a cleared memo as empty (not left out, as `ApiForm` leaves out a
        blank: here blank means none)."""
        return {api_name: self.cleaned_data[name] or ("" if name == "memo" else "0")
                for name, api_name in self.API_FIELDS.items()}


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
    """Invoices in a list that fits a 1,366 px window, and each invoice as a page laid out like the document with
    its actions on it (billing/templates/admin/billing/invoice/document.html)."""

    list_display = ["invoice_number", "customer", "subscription", "status", "period", "issued", "total", "amount_paid",
                    "amount_due", "amount_overpaid", "due_date"]
    column_labels = {"invoice_number": "Invoice", "amount_paid": "Paid"}
    list_filter = ["status", WaitingForPaymentFilter, OverpaidFilter, ("currency", CurrencyFilter),
                   ("issued_at", MonthsDateFilter), ("period_start", MonthsDateFilter), ("due_date", MonthsDateFilter)]
    search_fields = ["invoice_number", "customer__name", "customer__external_id", "subscription__name"]
    csv_extra_columns = ["paid_at", "voided_at"]
    # A month's invoices for month-end are those issued in it (drafts, not issued yet, drop out when one is chosen).
    date_hierarchy = "issued_at"
    list_select_related = ["customer", "subscription", "book__organization"]
    # The pay link's token is derived from the nonce: neither is shown (the link itself is only in the email).
    exclude = ["pay_token_digest", "pay_token_nonce", "pricing_terms"]
    inlines = []
    change_form_template = "admin/billing/invoice/document.html"
    actions = ["send_invoices", "void_invoices"]

    def get_changelist_instance(self, request):
        """The page, with what every invoice the filters select adds up to (all pages, one read): month-end
        reads the totals, not the rows."""
        changelist = super().get_changelist_instance(request)
        changelist.totals_lines = [_totals_line(totals) for totals in invoice_totals(changelist.queryset)]
        return changelist

    @admin.display(description="Period", ordering="period_start")
    def period(self, invoice):
        return period_cell(period_label(invoice))
    period.csv_value = lambda invoice: display.iso_interval(invoice.period_start, invoice.period_end)

    @admin.display(description="Issued", ordering="issued_at")
    def issued(self, invoice):
        return format_value("day", invoice.issued_at)  # on one line, as every day of a list
    issued.csv_value = lambda invoice: invoice.issued_at

    @admin.display(description="Amount due")
    def amount_due(self, invoice):
        return figure(amount_due(invoice))
    amount_due.csv_value = (lambda invoice: None if invoice.status == InvoiceStatus.VOID
                            else to_cents(invoice.amount_due))

    @admin.display(description="Overpaid")
    def amount_overpaid(self, invoice):
        """To refund: the surplus payment(s), with the payments' refund action (a dash when none)."""
        return figure(overpaid(invoice))
    amount_overpaid.csv_value = lambda invoice: to_cents(invoice.amount_overpaid)  # 0.00 when none, as amounts are

    def get_urls(self):
        """The invoice page's own actions and its PDF, before the admin's catch-all `<id>/` route."""
        view = self.admin_site.admin_view
        return [
            path("<path:object_id>/pdf/", view(self.pdf_view), name="billing_invoice_pdf"),
            path("<path:object_id>/act/<str:what>/", view(self.act_view), name="billing_invoice_act"),
            *super().get_urls(),
        ]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        invoice = self.get_object(request, unquote(object_id))
        extra = {}
        if invoice is not None:
            extra = {"document": invoice_page(invoice, request.user), "forms": {
                "void": VoidForm(prefix="void"), "payment": PaymentForm(prefix="payment", invoice=invoice),
                "adjust": AdjustForm(prefix="adjust", invoice=invoice)}}
        return super().change_view(request, object_id, form_url, {**(extra_context or {}), **extra})

    def pdf_view(self, request, object_id):
        """The document the customer receives, as GET /v1/invoices/{id}/pdf renders it."""
        invoice = self.get_object(request, unquote(object_id))
        if invoice is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        response = HttpResponse(invoice_pdf(InvoiceView.of(invoice)), content_type="application/pdf")
        response["Content-Disposition"] = f'inline; filename="invoice-{invoice.invoice_number}.pdf"'
        return response

    def act_view(self, request, object_id, what):
        """One action from the invoice page, through the same services as the API and the list actions; the
        outcome is a message on the invoice page."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        invoice = self.get_object(request, unquote(object_id))
        if invoice is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        back = redirect(reverse("admin:billing_invoice_change", args=[invoice.pk]))
        now = clock.now()
        if what == "send":
            act_on_rows(self, request, [invoice], lambda row: _send(row, now))
            return back
        forms_by_action = {"void": lambda: VoidForm(request.POST, prefix="void"),
                           "payment": lambda: PaymentForm(request.POST, prefix="payment", invoice=invoice),
                           "refund": lambda: RefundForm(request.POST, prefix="refund", payment_count=1),
                           "adjust": lambda: AdjustForm(request.POST, prefix="adjust")}
        if what not in forms_by_action:
            raise Http404(f"No invoice action {what!r}.")
        form = forms_by_action[what]()
        if not form.is_valid():
            for field, errors in form.errors.items():
                self.message_user(request, f"{invoice}: {field}: {' '.join(errors)}", messages.ERROR)
            return back
        data = form.cleaned_data
        payment = None
        if what == "refund":
            payment_id = uuid_or_none(request.POST.get("payment"))  # a tampered form: said below
            payment = payment_id and owned(Payment, invoice.book_id).filter(invoice=invoice, pk=payment_id).first()
            if payment is None:
                self.message_user(request, f"{invoice}: choose one of its payments to refund.", messages.ERROR)
                return back
            if data["amount"] is not None and data["amount"] > payment.refundable:
                # Said before the page that asks "Refund ...?", which otherwise asked for an amount the refund
                # then refused (the service refuses it all the same).
                left = display.money(payment.refundable, invoice.currency)
                self.message_user(request, f"{invoice}: amount: at most {left} of payment "
                                           f"{payment.provider_payment_id} is left to refund.", messages.ERROR)
                return back
        beyond_due = what == "payment" and invoice.status in PAYABLE and data["amount"] > invoice.amount_due
        if ((what in ("void", "refund") or beyond_due) and request.POST.get("confirm") != "yes"
                and may_act(request.user, invoice.book.organization_id, MONEY_ROLES)):
            # Money leaves, an invoice dies for good or a payment is more than is due (to be refunded then): one
            # more page says exactly what will happen.
            return self._confirmation(request, invoice, what, data, payment)
        if what == "adjust":
            changes = form.api_parse(InvoiceUpdateIn)
            if changes is None:
                for message in (problem for problems in form.errors.values() for problem in problems):
                    self.message_user(request, f"{invoice}: {message}", messages.ERROR)
                return back
            act_on_rows(self, request, [invoice], lambda row: _adjust(row, changes), roles=MONEY_ROLES)
        elif what == "void":
            act_on_rows(self, request, [invoice], lambda row: _void(row, now, data["reason"]), roles=MONEY_ROLES)
        elif what == "payment":
            def record(row):
                payment, created = payment_record_received(book=row.book, invoice_id=row.pk, amount=data["amount"],
                                                           reference=data["reference"], now=now,
                                                           received_on=data["received_on"])
                shown = display.money(payment.amount, row.currency)
                return (f"{row}: payment of {shown} ({payment.provider_payment_id}) recorded." if created else
                        f"{row}: the payment {payment.provider_payment_id} was recorded already, for {shown} "
                        f"on {display.day(payment.created_at)}; nothing new was recorded.")
            act_on_rows(self, request, [invoice], record, roles=MONEY_ROLES)
        else:
            act_on_rows(self, request, [payment], lambda row: _refund(row, now, data["amount"], data["reason"]),
                        roles=MONEY_ROLES, history_of=_invoice_of)
        return back

    def _confirmation(self, request, invoice, what: str, data: dict, payment) -> TemplateResponse:
        """The page that asks before a void, a refund or a payment beyond what is due from the invoice page, carrying
        what was typed."""
        currency = invoice.currency
        if what == "payment":
            due, beyond = invoice.amount_due, data["amount"] - invoice.amount_due
            title, submit = (f"Record {display.money(data['amount'], currency)}, more than is due?",
                             "Yes, record the payment")
            facts = [f"Invoice {invoice} for {invoice.customer.name}: {display.money(due, currency)} due",
                     f"Payment: {display.money(data['amount'], currency)} (reference {data['reference']})"]
            consequence = (f"{display.money(beyond, currency)} more than is due will show as overpaid on the "
                           f"invoice, to refund to the customer.")
        elif what == "void":
            title, submit = f"Void {invoice}?", "Yes, void the invoice"
            facts = [f"Invoice {invoice} for {invoice.customer.name}: {display.money(invoice.total, currency)}",
                     f"Reason: {data['reason'] or '(none given)'}"]
            consequence = "The invoice keeps its number and its pay link stops working. This cannot be undone."
        else:
            amount = data["amount"] if data["amount"] is not None else payment.refundable
            title, submit = f"Refund {display.money(amount, currency)}?", "Yes, refund"
            facts = [f"Payment {payment.provider_payment_id} of {display.money(payment.amount, currency)} on invoice "
                     f"{invoice} ({invoice.customer.name})",
                     f"Refund: {display.money(amount, currency)}"
                     f"{' (all that is left of the payment)' if data['amount'] is None else ''}",
                     f"Reason: {data['reason'] or '(none given)'}"]
            consequence = ("With Stripe configured, Stripe refunds a Stripe payment first. The invoice's collected "
                           "amount shrinks by the refund. This cannot be undone.")
        carried = [(name, value) for name, value in request.POST.items() if name != "csrfmiddlewaretoken"]
        return TemplateResponse(request, "admin/billing/invoice/confirm.html", {
            **self.admin_site.each_context(request), "opts": self.opts, "invoice": invoice, "title": title,
            "facts": facts, "consequence": consequence, "carried": carried, "submit": submit})

    @admin.action(description="Send the selected invoices (finalizing drafts) to their customers")
    def send_invoices(self, request, queryset):
        now = clock.now()
        # A draft whose period is still running is finalized by the send with the usage recorded so far: asked
        # first, as its page warns under its button (a filter of last month's drafts holds such periods too).
        running = list(queryset.filter(status=InvoiceStatus.DRAFT, period_end__gt=now).order_by("invoice_number"))
        if running and not submitted(request, SendForm).is_bound:
            ends = "; ".join(f"{invoice} runs until {period_days(invoice)[1]}" for invoice in running[:10])
            more = f" and {len(running) - 10} more" if len(running) > 10 else ""
            return action_page(self, request, queryset, SendForm(), title="Send invoices whose period has not ended?",
                               submit="Send", intro=f"{len(running)} of the selected drafts bill a period that has "
                                                    f"not ended ({ends}{more}): sent now, they are finalized with the "
                                                    f"usage recorded so far, and usage recorded after will not be "
                                                    f"on them.")
        act_on_rows(self, request, queryset.order_by("invoice_number"), lambda invoice: _send(invoice, now))

    @admin.action(description="Void the selected invoices (drafts, unpaid and refunded invoices)…")
    def void_invoices(self, request, queryset):
        form = submitted(request, VoidForm)
        if not (form.is_bound and form.is_valid()):
            return action_page(self, request, queryset, form, title="Void invoices", submit="Void",
                               intro="A void invoice keeps its number and its pay link stops working. Invoices "
                                     "with money collected must have their payments refunded first.")
        now, reason = clock.now(), form.cleaned_data["reason"]
        act_on_rows(self, request, queryset.order_by("invoice_number"), lambda invoice: _void(invoice, now, reason),
                    roles=MONEY_ROLES)


def _send(invoice, now) -> str:
    delivery = invoice_send(book=invoice.book, invoice_id=invoice.pk, now=now)
    if not delivery.sent:
        raise EmailNotSent(delivery.failure)  # the row's error message
    return f"{invoice} sent to {delivery.recipient} ({delivery.invoice.status})."


def _adjust(invoice, changes: dict) -> str:
    updated = invoice_update(book=invoice.book, invoice_id=invoice.pk, **changes)
    return f"{invoice}: discount, tax and memo saved; total {display.money(updated.total, updated.currency)}."


def _void(invoice, now, reason: str) -> str:
    invoice_void(book=invoice.book, invoice_id=invoice.pk, now=now, reason=reason)
    return f"{invoice} voided: {reason}." if reason else f"{invoice} voided."


def _invoice_of(payment):
    """A refund is written to its invoice's history, beside the payment it gives back."""
    return payment.invoice


def _refund(payment, now, amount, reason: str) -> str:
    refunded = refund_create(book=payment.book, invoice_id=payment.invoice_id, payment_id=payment.pk, now=now,
                             amount=amount, reason=reason)
    return (f"Refunded {display.money(refunded.amount, payment.invoice.currency)} of payment "
            f"{payment.provider_payment_id} ({payment.invoice}).")


@admin.display(description="customer")
def payment_customer(payment) -> str:
    return payment.invoice.customer.name


@admin.display(description="currency")
def payment_currency(payment) -> str:
    return payment.invoice.currency.upper()


@admin.register(Payment)
class PaymentAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["created_at", "received_on", "invoice", payment_customer, "amount", "refunded_amount", "status",
                    "provider", "provider_payment_id", "book"]
    list_filter = ["status", "provider"]
    search_fields = ["provider_payment_id", "invoice__invoice_number", "invoice__customer__name"]
    date_hierarchy = "created_at"
    ordering = ["-created_at", "-id"]  # newest first, as every other console list (the API lists them in order)
    list_select_related = ["invoice__customer", "book__organization"]
    csv_extra_columns = [payment_customer, payment_currency]
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

        act_on_rows(self, request, queryset.order_by("created_at", "pk"),
                    lambda payment: _refund(payment, now, amount, reason), roles=MONEY_ROLES, history_of=_invoice_of)


RefundedThroughFilter = presence_filter("refunded through", "The payment provider", "Recorded here only")


@admin.display(description="Invoice", ordering="payment__invoice__invoice_number")
def refund_invoice(refund) -> str:
    return refund.payment.invoice.invoice_number


@admin.display(description="Customer", ordering="payment__invoice__customer__name")
def refund_customer(refund) -> str:
    return refund.payment.invoice.customer.name


@admin.register(Refund)
class RefundAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["created_at", refund_invoice, refund_customer, "payment", "amount", "provider_refund_id", "reason",
                    "book"]
    list_filter = ["payment__provider", ("provider_refund_id", RefundedThroughFilter)]
    search_fields = ["provider_refund_id", "payment__provider_payment_id", "payment__invoice__invoice_number"]
    date_hierarchy = "created_at"
    ordering = ["-created_at", "-id"]  # newest first, as every other console list (the API lists them in order)
    list_select_related = ["payment__invoice__customer", "book__organization"]
