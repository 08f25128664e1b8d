"""Operator console for plans, strategies, subscriptions, credit grants and pool alerts.

Strategies and subscriptions are not edited as rows here: their rules (checks as a whole, the changelog, periods)
live in the API's services. A plan's page adds a strategy and the subscription list adds a subscription through
pages that call the API's serializers and services (billing/admin_create_pages.py). Plans' names and agent links
are edited here. The subscription actions generate invoices, top up credits and pause pool alerts through the same
services as the API.
"""
import re
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from django import forms
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.contrib import messages
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join, strip_tags
from django.utils.safestring import mark_safe

from billing.admin_create_pages import strategy_add_view, subscription_add_view, subscription_write_roles
from billing.admin_invoices import InvoiceInline, ReadOnlyInline
from billing.invoice_documents import bounds_days, period_label
from billing.models import (ChargeType, CreditGrant, CreditPoolAlert, Invoice, PlanAgent, PricingPlan,
                            PricingStrategy, Subscription, SubscriptionChange)
from billing.pricing.terms import period_timezone, periods_from, stored_period_cycle_end
from billing.selectors.credit_pools import NEAR_EMPTY_PERCENT, credit_balance_get, credit_balance_list
from billing.selectors.invoices import customer_amounts_owed, usage_recorded_since_issued
from billing.services.credit_pools import credit_alerts_pause, credit_topup
from billing.services.invoices import invoice_generate
from billing.services.plans import plan_delete, plan_subscriptions
from billing.services.plan_changes import (subscription_change_plan, subscription_periods_preview,
                                           subscription_plan_change_preview)
from accounts.admin_display import format_value, period_cell, presence_filter, readable
from accounts.admin_actions import act_on_rows, action_page, actor, error_text, idempotency_key, submitted
from accounts.admin_scoping import (BookScopedAdmin, ReadOnlyAdminMixin, ScopedInlineMixin, holds_role_somewhere,
                                   is_operator, may_act, organization_id_of)
from accounts.api import MONEY_ROLES
from accounts.models import Book
from core import clock, display
from core.clock import MAX_YEAR, MIN_YEAR, YEAR_RANGE_MESSAGE
from core.errors import ApiError, NotFound
from core.money import EXACT_IN_DIGITS, EXACT_IN_PLACES
from core.scoping import owned
from customers.admin import CustomerAdmin
from customers.models import Agent, Customer, Signal


class PlanAgentInline(ScopedInlineMixin, admin.TabularInline):
    model = PlanAgent
    extra = 0
    fields = ["agent", "created_at"]
    readonly_fields = ["created_at"]
    autocomplete_fields = ["agent"]


@admin.display(description="Billing frequency", ordering="billing_frequency")
def strategy_frequency(strategy) -> str:
    """A one-time fee is charged once, whatever frequency its row keeps ("Onetime ... Monthly" read as monthly)."""
    if strategy.charge_type == ChargeType.ONETIME:
        return display.EMPTY
    return strategy.get_billing_frequency_display()


strategy_frequency.csv_value = lambda strategy: (None if strategy.charge_type == ChargeType.ONETIME
                                                 else strategy.billing_frequency)


class PricingStrategyInline(ReadOnlyAdminMixin, ScopedInlineMixin, admin.TabularInline):
    """Strategies are checked as a whole and logged on subscriptions: not edited as rows here; the plan's "Add
    pricing strategy" page (above the rows, with its hint) goes through the API's serializer and service."""

    model = PricingStrategy
    template = "admin/billing/pricingplan/strategies_inline.html"
    extra = 0
    fields = ["name", "agent", "charge_type", "pricing_model", strategy_frequency, "rate", "tiers", "active",
              "deleted_at"]
    readonly_fields = [strategy_frequency]
    show_change_link = True


@admin.register(PricingPlan)
class PricingPlanAdmin(BookScopedAdmin):
    list_display = ["name", "book", "is_active", "agent_count", "strategy_count", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["name", "description", "agents__agent_code", "book__organization__name"]
    date_hierarchy = "created_at"
    ordering = ["-created_at"]
    readonly_fields = ["id", "created_at", "updated_at"]
    inlines = [PlanAgentInline, PricingStrategyInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(agent_count=Count("agent_links", distinct=True),
                                                      strategy_count=Count("strategies", distinct=True))

    @admin.display(description="agents", ordering="agent_count")
    def agent_count(self, plan) -> int:
        return plan.agent_count

    @admin.display(description="strategies", ordering="strategy_count")
    def strategy_count(self, plan) -> int:
        return plan.strategy_count

    def save_formset(self, request, form, formset, change):
        for instance in formset.save(commit=False):
            instance.book_id = form.instance.book_id  # links belong to the plan's book
            instance.save()
        for removed in formset.deleted_objects:
            removed.delete()

    # Deleting a plan: the API's rules (billing.services.plans.plan_delete), one plan at a time from its page.
    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)
        return actions

    def delete_view(self, request, object_id, extra_context=None):
        plan = self.get_object(request, unquote(object_id))
        if plan is not None:
            live, used = plan_subscriptions(book=plan.book, plan=plan)
            if used:  # said plainly, not as Django's list of related rows the user "has no permission" to delete
                why = (f"{live} upcoming or active subscription(s) are billed by it; end them first" if live else
                       'ended subscriptions keep it for their history and invoices; untick "Is active" to retire it')
                self.message_user(request, f"{plan} was not deleted: {why}.", messages.ERROR)
                return HttpResponseRedirect(reverse("admin:billing_pricingplan_change", args=[plan.pk]))
        return super().delete_view(request, object_id, extra_context)

    def get_deleted_objects(self, objs, request):
        # Its strategies and agent links go with an unused plan (as through the API); they have no delete of
        # their own in the console, which Django would otherwise report as a missing permission.
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def delete_model(self, request, obj):
        plan_delete(book=obj.book, plan_id=obj.pk)

    def get_urls(self):
        add_strategy = path("<path:object_id>/add-strategy/", self.admin_site.admin_view(self.add_strategy_view),
                            name="billing_pricingplan_add_strategy")
        return [add_strategy, *super().get_urls()]

    def add_strategy_view(self, request, object_id):
        """One strategy for the plan, as `POST /v1/pricing-plans/{planId}/pricing-strategies` (its serializer and
        service); then the plan's page."""
        return strategy_add_view(self, request, object_id)


@admin.register(PricingStrategy)
class PricingStrategyAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    # What fits a 1,366 px window; whether it is deleted is a filter, the book on the strategy's page.
    list_display = ["name", "plan", "agent", "charge_type", "pricing_model", strategy_frequency, "rate", "active"]
    list_filter = ["charge_type", "pricing_model", "billing_frequency", "active",
                   ("deleted_at", presence_filter("deleted", "Deleted", "Not deleted"))]
    search_fields = ["name", "plan__name", "agent__agent_code", "signal__short_name"]
    date_hierarchy = "created_at"
    list_select_related = ["plan", "agent", "book__organization"]


# The changelog's fields that name a row of the book, and the model it is a row of.
CHANGELOG_ROWS = {"planId": PricingPlan, "agentId": Agent, "customerId": Customer, "signalId": Signal,
                  "strategyId": PricingStrategy, "subscriptionId": Subscription,
                  "nextSubscriptionId": Subscription, "previousSubscriptionId": Subscription}

# What a changelog summary writes for the API (`json_value`): a subscription's id (a plan change names the other
# side) and instants in ISO 8601.
SUMMARY_VALUES = re.compile(r"(?P<id>\b[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}\b)"
                            r"|(?P<instant>\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2}))")


def summary_subscriptions(changes) -> dict:
    """The subscriptions that the changes' summaries name by id, read once per book: id (as text) -> subscription."""
    ids_by_book: dict = {}
    for change in changes:
        for match in SUMMARY_VALUES.finditer(change.summary):
            if match["id"]:
                ids_by_book.setdefault(change.book_id, set()).add(match["id"])
    return {str(subscription.pk): subscription for book_id, ids in ids_by_book.items()
            for subscription in owned(Subscription, book_id).filter(pk__in=ids)}


def readable_summary(change: SubscriptionChange, subscriptions: dict) -> str:
    """A changelog summary as finance reads it: a subscription it names by id by its name (a link to its page), an
    instant as the console writes instants. The stored summary, which the API returns, keeps the ids
    and ISO 8601 that clients read; an id the book no longer holds (a withdrawn change's successor is deleted)
    stays as written."""
    def readable_value(match) -> str:
        if match["instant"]:
            try:
                return display.moment(datetime.fromisoformat(match["instant"]))
            except ValueError:
                return match["instant"]
        subscription = subscriptions.get(match["id"])
        if subscription is None:
            return match["id"]
        return format_html('<a href="{}">{}</a>', reverse("admin:billing_subscription_change",
                                                           args=[subscription.pk]), subscription.name)

    parts, position = [], 0
    for match in SUMMARY_VALUES.finditer(change.summary):
        parts += [change.summary[position:match.start()], readable_value(match)]
        position = match.end()
    parts.append(change.summary[position:])
    return format_html_join("", "{}", ((part,) for part in parts))  # the text escaped, the links kept


def readable_changelog(change: SubscriptionChange, names: dict) -> str:
    """The console's way with a change's fields (`readable`), each value a row's name or an instant where it is one.
    `names` keeps (model, id) -> the row's name for the calls of one request."""
    def name(model, row_id: str) -> str:
        key = (model, row_id)
        if key not in names:
            try:
                row = owned(model, change.book_id).filter(pk=row_id).first()
            except ValidationError:  # not an id (hand-made data): shown as it is
                row = None
            names[key] = str(row) if row is not None else row_id
        return names[key]

    def shown(field: str, value):
        if not isinstance(value, str) or not value:
            return value
        if field in CHANGELOG_ROWS:
            return name(CHANGELOG_ROWS[field], value)
        if len(value) > 10 and value[4:5] == "-" and value[10:11] == "T":  # an instant as the API writes it
            try:
                return display.moment(datetime.fromisoformat(value.replace("Z", "+00:00")))
            except ValueError:
                return value
        return value

    return readable({field_words(field): {side: shown(field, values.get(side)) for side in ("before", "after")}
                     if isinstance(values, dict) else values for field, values in change.changes.items()})


def field_words(field: str) -> str:
    """An API field as the console names it: `currentPeriodEnd` as "Current period end", `planId` as "Plan" (its
    value is the plan's name)."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", field.removesuffix("Id") or field).lower()
    return words[:1].upper() + words[1:]


class SubscriptionChangeInline(ReadOnlyAdminMixin, ScopedInlineMixin, admin.TabularInline):
    """The changelog as finance reads it: each change `field: before → after`, a row of the book by its name and an
    instant in UTC to the minute (the API's changelog keeps ids and ISO 8601)."""

    model = SubscriptionChange
    extra = 0
    fields = ["created_at", "kind", "summary_text", "readable_changes", "actor"]
    readonly_fields = ["summary_text", "readable_changes"]
    verbose_name_plural = "changelog"
    ordering = ["-created_at"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._names: dict = {}  # (model, id) -> the row's name; an inline is made for each request

    @admin.display(description="Summary")
    def summary_text(self, change: SubscriptionChange):
        return readable_summary(change, summary_subscriptions([change]))

    @admin.display(description="Changes")
    def readable_changes(self, change: SubscriptionChange):
        return readable_changelog(change, self._names)


@admin.display(description="Consumed units")
def settled_consumption(grant: CreditGrant) -> str:
    """What a period grant drew from the ledger, written when its period is settled. Before that a blank read as
    "nothing used" beside a balance that counts the period's use, so it says why there is no figure yet."""
    if grant.kind == CreditGrant.Kind.TOPUP:
        return display.EMPTY  # drawn through the period grants ("top-up units drawn"), never on its own row
    if grant.settled_at is None:
        return "not settled yet (the credit pool's balance counts this period's use)"
    return display.quantity(grant.consumed_units)


# In a CSV, the figure or an empty cell: a spreadsheet sums the column.
settled_consumption.csv_value = lambda grant: (
    grant.consumed_units if grant.kind != CreditGrant.Kind.TOPUP and grant.settled_at is not None else None)


def _grant_period(grant: CreditGrant) -> str:
    """A period grant's local days in the timezone of its period, as the subscription's periods are written (a
    top-up has no period)."""
    if grant.period_start is None:
        return period_cell(display.EMPTY)
    return period_cell(display.period(grant.period_start, grant.period_end,
                                      period_timezone(grant.subscription, grant.period_start)))


class CreditGrantInline(ReadOnlyAdminMixin, ScopedInlineMixin, admin.TabularInline):
    model = CreditGrant
    extra = 0
    fields = ["created_at", "kind", "units", "grant_period", "consumed", "note", "created_by"]
    readonly_fields = ["consumed"]
    ordering = ["-created_at"]

    @admin.display(description="Period")
    def grant_period(self, grant):
        return _grant_period(grant)

    consumed = staticmethod(settled_consumption)


class RunsForeverFilter(admin.BooleanFieldListFilter):
    """`isForever` under a title that reads (Django titles a filter by its field's name: "By is forever")."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.title = "runs forever"


class NearlyEmptyPoolFilter(admin.SimpleListFilter):
    """Subscriptions whose credit pool has at most a percent left, as GET /v1/credit-balances?belowPercent=."""

    title = "credit pool"
    parameter_name = "pool_left"

    def lookups(self, request, model_admin):
        return [(str(NEAR_EMPTY_PERCENT), f"{NEAR_EMPTY_PERCENT}% or less left"), ("0", "empty or overdrawn")]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        try:
            below = Decimal(self.value())
        except InvalidOperation:
            below = None
        # NaN and Infinity compare with nothing; the API's belowPercent is -100 to 100 too.
        if below is None or not below.is_finite() or not -100 <= below <= 100:
            raise IncorrectLookupParameters(f"pool_left: {self.value()!r} is not a percent from -100 to 100")
        now = clock.now()
        books = Book.objects.filter(pk__in=queryset.values("book_id"))  # already scoped and filtered
        ids = [balance.subscription.pk for book in books
               for balance in credit_balance_list(book=book, now=now, below_percent=below)]
        return queryset.filter(pk__in=ids)


class TopUpForm(forms.Form):
    units = forms.DecimalField(max_digits=EXACT_IN_DIGITS, decimal_places=EXACT_IN_PLACES,
                               help_text="Added to each selected subscription's pool; top-ups never expire.")
    note = forms.CharField(max_length=1000, required=False)
    idempotency_key = forms.CharField(max_length=200, widget=forms.HiddenInput)

    def clean_units(self):
        units = self.cleaned_data["units"]
        if units <= 0:
            raise forms.ValidationError("Must be greater than 0.")
        return units


class ChangePlanForm(forms.Form):
    """The console's plan change: the new plan (one linked to the subscription's agent), when, and seats."""

    NOW, NEXT_PERIOD, AT = "now", "next_period", "at"
    plan = forms.ModelChoiceField(queryset=PricingPlan.objects.none(), help_text="Plans linked to the agent.")
    when = forms.ChoiceField(choices=[(NOW, "Now"), (NEXT_PERIOD, "At the start of the next billing period"),
                                      (AT, "At a chosen time")], initial=NOW, widget=forms.RadioSelect)
    effective_at = forms.DateTimeField(required=False, label="Chosen time (UTC)",
                                       help_text="For 'At a chosen time': YYYY-MM-DD HH:MM, in UTC.")
    seats_count = forms.IntegerField(min_value=0, max_value=2**31 - 1, required=False, label="Seats",
                                     help_text="Seats on the new plan; empty keeps the current seats.")
    previewed = forms.CharField(widget=forms.HiddenInput, required=False)  # the choice the preview showed

    def __init__(self, *args, subscription: Subscription, **kwargs):
        super().__init__(*args, **kwargs)
        self.subscription = subscription
        self.fields["plan"].queryset = owned(PricingPlan, subscription.book_id).filter(
            agent_links__agent_id=subscription.agent_id, is_active=True).order_by("name")

    def clean(self):
        data = super().clean()
        chosen = data.get("effective_at")
        if data.get("when") == self.AT and chosen is None:
            self.add_error("effective_at", "Give the time the change takes effect.")
        elif chosen is not None and not MIN_YEAR <= chosen.year <= MAX_YEAR:  # as the API's effectiveAt
            self.add_error("effective_at", YEAR_RANGE_MESSAGE)
        return data

    def effective_instant(self, now):
        """The instant the choice means: now, the end of the stored current period's cycle (not where a change
        already scheduled inside it cuts it: the new change replaces that one), or the chosen time."""
        when = self.cleaned_data["when"]
        if when == self.NEXT_PERIOD:
            return stored_period_cycle_end(self.subscription) or now
        return self.cleaned_data["effective_at"] if when == self.AT else now

    def fingerprint(self) -> str:
        data = self.cleaned_data
        return "|".join(str(data.get(name) or "") for name in ("plan", "when", "effective_at", "seats_count")) \
            + f"|{getattr(data.get('plan'), 'pk', '')}"


def _side_shown(subscription: Subscription, side) -> tuple:
    """A plan-change preview's side as the page writes it: money with its currency, the period as its invoice
    writes it (local days, a cut's local time)."""
    return (side, [(description, display.money(amount)) for description, amount in side.lines],
            display.money(side.total), display.days(*bounds_days(subscription, side.period_start, side.period_end)))


# Who may generate an invoice from the console: any member, as the API (InvoiceGenerateApi sets no write_roles, and
# the list action "Generate invoices for the current period" asks the same).
GENERATE_ROLES = None
PERIODS_OFFERED = 36  # the most recent periods in the form's list; older ones are asked for by their days


def begun_periods(subscription: Subscription, now: datetime) -> list[tuple[datetime, datetime]]:
    """The subscription's billing periods that have begun by `now`, newest first (at most PERIODS_OFFERED), on the
    calendar its invoices are billed on: each period under the billingDay and timezone in force for it
    (`periods_from`, as the credit-pool rollover walks them)."""
    periods = []
    for period in periods_from(subscription, subscription.start_date):
        if period.start > now:
            break
        periods.append((period.start, period.end))
    return periods[::-1][:PERIODS_OFFERED]


class GenerateInvoiceForm(forms.Form):
    """One period of a subscription to invoice: one of its periods so far, or a first and last day (in the
    subscription's time zone, the last day included, as the console writes periods)."""

    period = forms.ChoiceField(required=False, label="Billing period")
    first_day = forms.DateField(required=False, label="Or from (first day)", help_text="YYYY-MM-DD.")
    last_day = forms.DateField(required=False, label="to (last day)")

    def __init__(self, *args, subscription: Subscription, now: datetime, **kwargs):
        super().__init__(*args, **kwargs)
        self.subscription = subscription
        self.windows = {f"{start.isoformat()}/{end.isoformat()}": (start, end)
                        for start, end in begun_periods(subscription, now)}
        billed = {}  # period -> the invoices billing exactly it, so the list says which one a void left unbilled
        for invoice in owned(Invoice, subscription.book_id).filter(subscription=subscription).order_by("created_at"):
            billed.setdefault((invoice.period_start, invoice.period_end), []).append(
                f"{invoice.invoice_number} ({invoice.get_status_display().lower()})")
        choices = [("", "-")]
        for value, (start, end) in self.windows.items():
            timezone = period_timezone(subscription, start)
            current = " (current)" if start <= now < end else ""
            invoices = ", ".join(billed.get((start, end), [])) or "not invoiced"
            choices.append((value, f"{display.period(start, end, timezone)}{current}: {invoices}"))
        self.fields["period"].choices = choices
        self.fields["period"].help_text = ("The subscription's periods so far, newest first, with the invoices of "
                                           "each.")
        self.fields["last_day"].help_text = (f"Days in the subscription's time zone ({subscription.timezone}); the "
                                             "last day is billed.")

    def clean(self):
        data = super().clean()
        period, first, last = data.get("period"), data.get("first_day"), data.get("last_day")
        if self.errors:
            return data
        if period and (first or last):
            raise ValidationError("Choose a period or give its days, not both.")
        if not period and not (first and last):
            raise ValidationError("Choose a period, or give its first and last day." if not (first or last)
                                  else "Give both the first and the last day.")
        for name in ("first_day", "last_day"):
            if data.get(name) is not None and not MIN_YEAR <= data[name].year <= MAX_YEAR:  # as the API's dates
                self.add_error(name, YEAR_RANGE_MESSAGE)
        return data

    def window(self) -> tuple:
        """The service's billingPeriodStart and billingPeriodEnd: the chosen period's instants, or the first day
        and the day after the last (bare dates: the service places them at local midnight, as the API's)."""
        if self.cleaned_data["period"]:
            return self.windows[self.cleaned_data["period"]]
        return self.cleaned_data["first_day"], self.cleaned_data["last_day"] + timedelta(days=1)


def _generate_outcome(subscription: Subscription, invoice: Invoice, created: bool) -> tuple[str, int]:
    """What one generate did, as the words after the invoice's number, and the message's level: a warning when a
    final invoice already bills the period (nothing was generated), naming the usage it does not bill."""
    what = "generated" if created else "re-priced" if invoice.status == "draft" else "already bills the period"
    message = f"{what} for {subscription}: {invoice.status}, total {display.money(invoice.total, invoice.currency)}."
    if created or invoice.status == "draft":
        return message, messages.SUCCESS
    # Nothing was generated: a final invoice keeps what was reviewed.
    late = usage_recorded_since_issued(invoice)
    if late:
        message += (" Nothing was generated, and usage recorded for the period since it was issued is not on "
                    "it (" + ", ".join(f"{display.unit(item.signal_name)}: billed "
                                       f"{display.quantity(item.billed)}, recorded "
                                       f"{display.quantity(item.recorded)}" for item in late)
                    + "): void it and generate the period again to bill it.")
    else:
        message += " Nothing was generated."
    return message, messages.WARNING


@admin.register(Subscription)
class SubscriptionAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["name", "customer", "plan", "status", "billing_cycle", "current_period", "credit_pool_left"]
    list_filter = ["status", "billing_cycle", "billing_model", NearlyEmptyPoolFilter, "pool_alerts_paused",
                   ("is_forever", RunsForeverFilter)]
    search_fields = ["name", "customer__name", "customer__external_id", "plan__name", "agent__agent_code"]
    date_hierarchy = "start_date"
    list_select_related = ["customer", "plan", "agent", "book__organization"]
    readonly_fields = ["current_period", "invoice_for_period", "strategies", "credit_pool", "plan_history"]
    fieldsets = [
        (None, {"fields": ["name", "customer", "plan", "agent", "status", "book"]}),
        ("Billing", {"fields": ["billing_model", "billing_cycle", "custom_cycle_days", "billing_day", "timezone",
                                "current_period", "invoice_for_period", "start_date", "end_date", "is_forever",
                                "net_terms", "seats_count", "prorated_amount", "invoice_memo"]}),
        ("Pricing", {"fields": ["strategies", "credit_pool", "pool_alerts_paused", "plan_history"]}),
        ("Details", {"fields": ["subscription_details", "metadata", "id", "created_at", "updated_at"]}),
    ]
    inlines = [InvoiceInline, CreditGrantInline, SubscriptionChangeInline]
    actions = ["generate_invoices", "top_up_credits", "pause_pool_alerts", "resume_pool_alerts"]

    @admin.display(description="Current period", ordering="current_period_start")
    def current_period(self, subscription):
        return period_cell(display.period(subscription.current_period_start, subscription.current_period_end,
                                          period_timezone(subscription, subscription.current_period_start)))
    current_period.csv_value = lambda subscription: display.iso_interval(subscription.current_period_start,
                                                                 subscription.current_period_end)

    @admin.display(description="Credit pool")
    def credit_pool_left(self, subscription):
        """Replaced per request by `get_list_display` (this one serves the admin's checks and other callers)."""
        return display.EMPTY

    @staticmethod
    def _pool_balance(request, subscription):
        """The subscription's credit balance, None without a pool: the balances of its book, read once a request
        when the list (or its export, "Select all" reaching books not on the page) first meets the book."""
        by_book = request.__dict__.setdefault("pool_balances", {})
        if subscription.book_id not in by_book:
            by_book[subscription.book_id] = {balance.subscription.pk: balance for balance in
                                             credit_balance_list(book=subscription.book, now=clock.now())}
        return by_book[subscription.book_id].get(subscription.pk)

    def get_list_display(self, request):
        def credit_pool_left(subscription):
            balance = self._pool_balance(request, subscription)
            if balance is None:
                return display.EMPTY
            # Not "x of size left": what is left counts top-ups (the subscription's page says so in words).
            return (f"{display.quantity(balance.remaining_units)} left ({display.percent(balance.remaining_percent)} "
                    f"of {display.quantity(balance.pool.size)})")
        credit_pool_left.short_description = "Credit pool"
        # The export's cell: what is left in units (top-ups counted), as the API's `remainingUnits`.
        credit_pool_left.csv_value = lambda subscription: getattr(self._pool_balance(request, subscription),
                                                                  "remaining_units", None)
        return [credit_pool_left if name == "credit_pool_left" else name for name in super().get_list_display(request)]

    def has_add_permission(self, request, *args):
        """The list's "Add subscription" leads to the console's page of `POST /v1/subscriptions` (`add_view`), for an
        operator holding a role the API accepts in some organization; each book is checked again there."""
        roles = subscription_write_roles()
        return is_operator(request.user) and (roles is None or holds_role_somewhere(request.user, roles))

    def add_view(self, request, form_url="", extra_context=None):
        """Not a form of the row: the API's serializer and service create it (billing/admin_create_pages.py)."""
        return subscription_add_view(self, request)

    def get_urls(self):
        change_plan = path("<path:object_id>/change-plan/", self.admin_site.admin_view(self.change_plan_view),
                           name="billing_subscription_change_plan")
        generate = path("<path:object_id>/generate-invoice/", self.admin_site.admin_view(self.generate_invoice_view),
                        name="billing_subscription_generate_invoice")
        return [change_plan, generate, *super().get_urls()]

    @admin.display(description="invoice for a period")
    def invoice_for_period(self, subscription):
        """The way to invoice a chosen period (a past one whose invoice was voided, say): a page with a form."""
        return format_html('<a class="button" href="{}">Generate an invoice for a period…</a>',
                           reverse("admin:billing_subscription_generate_invoice", args=[subscription.pk]))

    def generate_invoice_view(self, request, object_id):
        """Generate the draft of one chosen period, as `POST /v1/invoices/generate` with billingPeriodStart and
        billingPeriodEnd (`invoice_generate`); the service's refusals are the form's errors."""
        subscription = self.get_object(request, unquote(object_id))
        if subscription is None:  # missing or of an organization the operator does not see: as the change page
            return self._get_obj_does_not_exist_redirect(request, self.model._meta, object_id)
        if not may_act(request.user, organization_id_of(subscription), GENERATE_ROLES):
            raise PermissionDenied("Only members of the subscription's organization generate its invoices.")
        back = reverse("admin:billing_subscription_change", args=[subscription.pk])
        now = clock.now()
        # A void invoice's page links here with its period chosen (`?period=`); one not among the choices is none.
        form = GenerateInvoiceForm(request.POST if request.method == "POST" else None, subscription=subscription,
                                   now=now, initial={"period": request.GET.get("period", "")})
        if form.is_bound and form.is_valid():
            start, end = form.window()
            try:
                invoice, created = invoice_generate(book=subscription.book, now=now,
                                                    customer_id=subscription.customer_id,
                                                    subscription_id=subscription.pk, billing_period_start=start,
                                                    billing_period_end=end)
            except ApiError as problem:
                form.add_error(None, error_text(problem))
            else:
                outcome, level = _generate_outcome(subscription, invoice, created)
                self.log_change(request, subscription, f"{invoice} ({period_label(invoice)}) {outcome}")
                self.message_user(request, format_html(
                    '<a href="{}">{}</a> ({}) {}', reverse("admin:billing_invoice_change", args=[invoice.pk]),
                    invoice, period_label(invoice), outcome), level)
                return HttpResponseRedirect(back)
        context = {**self.admin_site.each_context(request), "opts": self.model._meta, "original": subscription,
                   "title": f"Generate an invoice for a period of {subscription}", "form": form, "back": back}
        return TemplateResponse(request, "admin/billing/subscription/generate_invoice.html", context)

    @admin.display(description="plan changes")
    def plan_history(self, subscription):
        """The plans before and after this one, and the way to change the plan (a page with a preview)."""
        links = []
        for label, other_id in (("Continues", subscription.previous_subscription_id),
                                ("Continued as", subscription.next_subscription_id)):
            if other_id is not None:
                other = Subscription.objects.select_related("plan").get(pk=other_id)
                links.append(format_html('{} <a href="{}">{}</a> (plan {}, {})', label,
                                         reverse("admin:billing_subscription_change", args=[other.pk]), other.name,
                                         other.plan.name, other.status))
        if subscription.status != "ended":
            links.append(format_html('<a class="button" href="{}">Change plan…</a>',
                                     reverse("admin:billing_subscription_change_plan", args=[subscription.pk])))
        return format_html_join("", "<div>{}</div>", ((link,) for link in links)) if links else display.EMPTY

    def change_plan_view(self, request, object_id):
        """Choose the plan and when, see both sides' amounts for the split period, then confirm. The change is the
        API's (`subscription_change_plan`); the preview makes it and rolls it back."""
        subscription = self.get_object(request, object_id)
        if subscription is None:  # missing or of an organization the operator does not see: as the change page
            return self._get_obj_does_not_exist_redirect(request, self.model._meta, object_id)
        back = reverse("admin:billing_subscription_change", args=[subscription.pk])
        if not may_act(request.user, organization_id_of(subscription), None):  # any member, as on the API
            self.message_user(request, f"{subscription}: only members of its organization change its plan.",
                              messages.ERROR)
            return HttpResponseRedirect(back)
        form = ChangePlanForm(request.POST if request.method == "POST" else None, subscription=subscription)
        context = {**self.admin_site.each_context(request), "title": f"Change the plan of {subscription}",
                   "opts": self.model._meta, "original": subscription, "form": form, "back": back, "sides": None}
        if form.is_bound and form.is_valid():
            now = clock.now()
            choice = {"book": subscription.book, "subscription_id": subscription.pk, "now": now,
                      "actor": actor(request), "plan_id": form.cleaned_data["plan"].pk,
                      "effective_at": form.effective_instant(now), "seats_count": form.cleaned_data["seats_count"]}
            try:
                if "confirm" in request.POST and form.cleaned_data["previewed"] == form.fingerprint():
                    replacement = subscription_change_plan(**choice)
                    self.message_user(request, f"{subscription} moves to plan '{replacement.plan.name}' at "
                                               f"{replacement.start_date:%Y-%m-%d %H:%M} UTC as {replacement}.",
                                      messages.SUCCESS)
                    return HttpResponseRedirect(reverse("admin:billing_subscription_change", args=[replacement.pk]))
                context["sides"] = subscription_plan_change_preview(**choice)
                # What the period the change falls in bills without it, for finance to compare.
                unchanged_periods = subscription_periods_preview(
                    book=subscription.book, subscription_id=subscription.pk, now=now,
                    moments=[side.period_start for side in context["sides"]])
                unchanged = [side for period in unchanged_periods for side in period]
                context["periods_compared"] = len(unchanged_periods)
                without_change = sum((side.total for side in unchanged), Decimal(0))
                with_change = sum((side.total for side in context["sides"]), Decimal(0))
                context["shown_sides"] = [_side_shown(subscription, side) for side in context["sides"]]
                context["unchanged_sides"] = [_side_shown(subscription, side) for side in unchanged]
                context["comparison"] = {"without": display.money(without_change), "with": display.money(with_change),
                                         "difference": display.money(with_change - without_change)}
                form.data = form.data.copy()
                form.data["previewed"] = form.fingerprint()
            except ApiError as problem:
                form.add_error(None, error_text(problem))
        return TemplateResponse(request, "admin/billing/subscription/change_plan.html", context)

    @admin.display(description="pricing strategies")
    def strategies(self, subscription):
        """The plan's strategies for the subscription's agent: what its invoices charge."""
        strategies = owned(PricingStrategy, subscription.book_id).filter(
            plan_id=subscription.plan_id, agent_id=subscription.agent_id, deleted_at__isnull=True,
        ).order_by("created_at")
        rows = format_html_join("", '<li><a href="{}">{}</a>: {}{}{}{}</li>', (
            (reverse("admin:billing_pricingstrategy_change", args=[strategy.pk]), strategy.name,
             strategy.get_charge_type_display(),
             f", {strategy.get_pricing_model_display()}" if strategy.pricing_model else "",
             f", {display.price(strategy.rate)}" if strategy.rate is not None else
             f", {format_value('tiers', strategy.tiers, strategy)}" if strategy.tiers else "",
             "" if strategy.active else " (inactive)") for strategy in strategies))
        return format_html("<ul>{}</ul>", rows) if rows else "None for this agent."

    @admin.display(description="credit pool")
    def credit_pool(self, subscription) -> str:
        try:
            balance = credit_balance_get(book=subscription.book, subscription_id=subscription.pk, now=clock.now())
        except NotFound:
            return "None: the plan sells no credit pool to this agent."
        paused = " Alert emails are paused." if subscription.pool_alerts_paused else ""
        period = display.period(balance.period_start, balance.period_end,
                                period_timezone(subscription, balance.period_start))
        # What is left counts top-ups, the pool's size is a period's grant (spec: remainingUnits and its percent
        # of poolSizeUnits), so "left" and "used" need not add up to the size: the wording says why.
        return (f"{display.quantity(balance.remaining_units)} units left, top-ups included "
                f"({display.percent(balance.remaining_percent)} of the {display.quantity(balance.pool.size)}-unit "
                f"pool of a period), {display.quantity(balance.consumed_units)} used "
                f"this period ({period}).{paused}")

    @admin.action(description="Generate invoices for the current period")
    def generate_invoices(self, request, queryset):
        now = clock.now()

        def generate(subscription):
            invoice, created = invoice_generate(book=subscription.book, now=now, customer_id=subscription.customer_id,
                                                subscription_id=subscription.pk)
            outcome, level = _generate_outcome(subscription, invoice, created)
            return f"{invoice} {outcome}", level
        act_on_rows(self, request, queryset.order_by("name", "pk"), generate, roles=GENERATE_ROLES)

    @admin.action(description="Top up credits…")
    def top_up_credits(self, request, queryset):
        form = submitted(request, TopUpForm, initial={"idempotency_key": idempotency_key()})
        if not (form.is_bound and form.is_valid()):
            return action_page(self, request, queryset, form, title="Top up credits", submit="Top up",
                               intro="Units are drawn after each period's own pool. Submitting this page twice adds "
                                     "them once.")
        units, note, key = (form.cleaned_data[name] for name in ("units", "note", "idempotency_key"))
        now, created_by = clock.now(), actor(request)

        def top_up(subscription):
            topup = credit_topup(book=subscription.book, subscription_id=subscription.pk, units=units, note=note,
                                 idempotency_key=f"{key}:{subscription.pk}", created_by=created_by, now=now)
            added = "added" if topup.created else "were already added by this form"
            return (f"{subscription}: {display.quantity(units)} units {added}; "
                    f"{display.quantity(topup.remaining_units)} units left.")
        act_on_rows(self, request, queryset.order_by("name", "pk"), top_up, roles=MONEY_ROLES)

    def _set_alerts_paused(self, request, queryset, paused: bool):
        def pause(subscription):
            credit_alerts_pause(book=subscription.book, subscription_id=subscription.pk, paused=paused,
                                actor=actor(request))
            return f"{subscription}: pool alert emails {'paused' if paused else 'resumed'}."
        act_on_rows(self, request, queryset.order_by("name", "pk"), pause, roles=MONEY_ROLES)

    @admin.action(description="Pause credit-pool alert emails")
    def pause_pool_alerts(self, request, queryset):
        self._set_alerts_paused(request, queryset, True)

    @admin.action(description="Resume credit-pool alert emails")
    def resume_pool_alerts(self, request, queryset):
        self._set_alerts_paused(request, queryset, False)


@admin.register(SubscriptionChange)
class SubscriptionChangeAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["created_at", "subscription", "kind", "summary_text", "actor", "book"]
    list_filter = ["kind"]
    search_fields = ["summary", "actor", "subscription__name"]
    date_hierarchy = "created_at"
    ordering = ["-created_at", "-id"]  # newest first, as every other console list (the API lists them in order)
    list_select_related = ["subscription", "book__organization"]
    readonly_fields = ["summary_text", "readable_changes"]
    READABLE = {"summary": "summary_text", "changes": "readable_changes"}  # the stored field -> as people read it

    def get_fields(self, request, obj=None):
        """The summary and the changes as people read them, where the stored ones would be."""
        fields = [name for name in super().get_fields(request, obj) if name not in self.READABLE.values()]
        # A field the console formats (the changes: JSON) comes as its display function, named as the field.
        return [self.READABLE.get(getattr(name, "__name__", name), name) for name in fields]

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The page's heading is the summary (the change's name) as people read it."""
        change = self.get_object(request, unquote(object_id))
        if change is not None:
            heading = strip_tags(readable_summary(change, summary_subscriptions([change])))
            extra_context = {**(extra_context or {}), "subtitle": mark_safe(heading)}  # escaped text, links gone
        return super().change_view(request, object_id, form_url, extra_context)

    def get_changelist_instance(self, request):
        """The page, with the subscriptions its summaries name (one read per book on the page)."""
        changelist = super().get_changelist_instance(request)
        request.summary_subscriptions = summary_subscriptions(changelist.result_list)
        return changelist

    def get_list_display(self, request):
        """`summary_text` reads the subscriptions that `get_changelist_instance` read for this request's page."""
        def summary_text(change):
            return readable_summary(change, getattr(request, "summary_subscriptions", {}))
        summary_text.short_description = "Summary"
        summary_text.admin_order_field = "summary"
        summary_text.csv_value = lambda change: change.summary  # text as stored, as the API returns it
        return [summary_text if name == "summary_text" else name for name in super().get_list_display(request)]

    @admin.display(description="Summary")
    def summary_text(self, change: SubscriptionChange):
        """On the change's page: its summary as people read it."""
        return readable_summary(change, summary_subscriptions([change]))

    @admin.display(description="Changes")
    def readable_changes(self, change: SubscriptionChange):
        return readable_changelog(change, {})


@admin.register(CreditGrant)
class CreditGrantAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    """Written by the API (top-ups) and the scheduled job (period grants and their settlement)."""

    # Whether a period is settled is the filter's (and the grant's page); the list keeps to what fits 1,366 px.
    list_display = ["created_at", "subscription", "kind", "units", "grant_period", settled_consumption,
                    "topup_units_drawn", "created_by"]
    list_filter = ["kind", ("settled_at", presence_filter("period settled", "Settled", "Not settled yet"))]
    search_fields = ["subscription__name", "subscription__customer__name", "subscription__customer__external_id",
                     "idempotency_key", "note", "created_by"]
    date_hierarchy = "created_at"
    list_select_related = ["subscription", "book__organization"]

    @admin.display(description="Period", ordering="period_start")
    def grant_period(self, grant):
        return _grant_period(grant)
    grant_period.csv_value = lambda grant: display.iso_interval(grant.period_start, grant.period_end)


@admin.register(CreditPoolAlert)
class CreditPoolAlertAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["created_at", "subscription", "stage", "outcome", "used_percent", "remaining_units",
                    "alert_period"]
    list_filter = ["stage", "outcome"]
    search_fields = ["subscription__name", "subscription__customer__name", "subscription__customer__external_id"]
    date_hierarchy = "created_at"
    list_select_related = ["subscription", "book__organization"]

    @admin.display(description="Period", ordering="period_start")
    def alert_period(self, alert):
        return period_cell(display.period(alert.period_start, alert.period_end,
                                          period_timezone(alert.subscription, alert.period_start)))
    alert_period.csv_value = lambda alert: display.iso_interval(alert.period_start, alert.period_end)


class CustomerSubscriptionInline(ReadOnlyInline):
    model = Subscription
    fields = ["name", "plan", "status", "billing_cycle", "current_period"]
    ordering = ["-start_date"]
    show_change_link = True

    @admin.display(description="Current period")
    def current_period(self, subscription):
        return period_cell(display.period(subscription.current_period_start, subscription.current_period_end,
                                          period_timezone(subscription, subscription.current_period_start)))


class CustomerInvoiceInline(InvoiceInline):
    """A customer's invoices, newest period first (its subscription named on each)."""

    fields = ["invoice_number", "subscription", "status", "period", "total", "amount_paid", "amount_due", "due_date"]


@admin.display(description="Owed")
def customer_owed(customer) -> str:
    """What the customer still owes in all, above its invoices (a finance person added them up by hand)."""
    if customer.pk is None:
        return display.EMPTY
    owed = customer_amounts_owed(book=customer.book_id, customer=customer)
    if not owed:
        return "Nothing: no sent invoice is waiting for payment."
    return "; ".join(
        f"{display.money(amount.amount_due, amount.currency)} on {amount.invoices} "
        f"invoice{'s' if amount.invoices != 1 else ''}{f', {amount.overdue} overdue' if amount.overdue else ''}"
        for amount in owed)


# A customer's page lists its subscriptions and invoices and what it owes: billing's rows, attached here because the
# customers app sits below billing and never imports it.
CustomerAdmin.inlines = [*CustomerAdmin.inlines, CustomerSubscriptionInline, CustomerInvoiceInline]
CustomerAdmin.readonly_fields = [customer_owed, *CustomerAdmin.readonly_fields]
