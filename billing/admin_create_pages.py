"""Console pages that create what the API creates: a pricing strategy of a plan (`POST
/v1/pricing-plans/{planId}/pricing-strategies`) and a subscription (`POST /v1/subscriptions`).

A form here only collects and translates: a choice becomes its id, tier lines become tier objects, JSON text its
value. The body it makes is then checked as the API checks a request body (what PostgreSQL cannot store, then the
API's own In serializer) and written by the API's own service, so every rule and every error message is the API's;
each error is shown next to the field its path names (`tiers[1].rate` beside the tiers), the others at the top.
Who may write is the API view's own role policy (`write_roles`), read from the view.
"""
import re

from django import forms
from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.http import HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import reverse
from rest_framework.exceptions import ValidationError as ApiValidationError

from accounts.admin_actions import actor, role_refusal
from accounts.admin_scoping import may_act, organization_id_of, visible_books
from billing.models import (BillingCycle, BillingFrequency, BillingModel, ChargeType, PlanAgent, PricingModel,
                            PricingPlan, SubscriptionStatus)
from billing.serializers.strategies import StrategyIn
from billing.serializers.subscriptions import SubscriptionCreateIn
from billing.services.strategies import strategies_create
from billing.services.subscriptions import subscription_create
from billing.views.strategies import StrategyListApi
from billing.views.subscriptions import SubscriptionListCreateApi
from core import clock, exact_json
from core.errors import ApiError, flatten_validation_errors
from core.scoping import owned
from core.serialization import parse, unstorable_message, unstorable_reason
from customers.models import Agent, Customer, Signal


def strategy_write_roles():
    """The roles the API asks to add a plan's strategies: its view's own policy (None: any member), read when asked,
    so the console never asks more or less than the API."""
    return StrategyListApi.write_roles


def subscription_write_roles():
    """The roles the API asks to create a subscription, as `strategy_write_roles`."""
    return SubscriptionListCreateApi.write_roles


TIERS_HELP = ("One tier a line: lower, upper, rate (upper empty for the open-ended last tier), e.g. \"0, 1000, 0.002\" "
              "then \"1000, , 0.0015\"; or the tiers array as the API takes it (JSON, starting with \"[\"). A credit "
              "pool: \"0, pool size, pool price\" then \"pool size, , overage rate\". Leave empty for a flat rate or "
              "a fee.")


class ApiForm(forms.Form):
    """A console form whose values become an API request body (`api_body`), checked by the API's serializer.

    `API_FIELDS` maps each form field to its camelCase body field; a blank value is left out of the body, so the
    serializer's defaults and its "This field is required." apply as to a request that leaves it out."""

    API_FIELDS: dict[str, str] = {}

    def api_body(self) -> dict:
        body = {}
        for name, api_name in self.API_FIELDS.items():
            value = self.cleaned_data.get(name)
            if value not in (None, "", []):
                body[api_name] = value
        return body

    def add_api_errors(self, problems: list[str]) -> None:
        """The API's messages ("path: message"), each beside the field its path names, the others at the top."""
        fields = {api_name: name for name, api_name in self.API_FIELDS.items()}
        for problem in problems:
            path = problem.partition(": ")[0] if ": " in problem else ""
            head = re.split(r"[.\[]", path, maxsplit=1)[0]
            self.add_error(fields.get(head), problem)

    def api_parse(self, serializer_class) -> dict | None:
        """The body as the API's serializer reads it (snake_case), or None with its errors on the form. What
        PostgreSQL could not store is refused first, as the API's JSON parser refuses it."""
        body = self.api_body()
        reason = unstorable_reason(body)
        if reason:
            self.add_api_errors([unstorable_message(reason)])
            return None
        try:
            return parse(serializer_class, body)
        except ApiValidationError as problem:
            self.add_api_errors(flatten_validation_errors(problem.detail))
            return None


def api_error_messages(error: ApiError, item_prefix: str = "") -> list[str]:
    """A service's refusal as a list of messages; `item_prefix` ("[0].") is dropped: the form is the one item."""
    found = error.message if isinstance(error.message, list) else [error.message]
    return [str(message).removeprefix(item_prefix) if item_prefix else str(message) for message in found]


def json_value(text: str, field: str):
    """JSON text as the API's parser reads it (a number with a fraction as the Decimal it spells)."""
    try:
        return exact_json.loads(text)
    except (ValueError, RecursionError) as problem:
        raise forms.ValidationError(f"Not valid JSON ({problem}); write {field} as the API takes it.")


def tiers_from_text(text: str):
    """Tiers written one a line (`lower, upper, rate`, upper empty when open-ended) or as the API's JSON array.
    Values stay text: the API's serializer reads and checks them."""
    text = text.strip()
    if not text:
        return None
    if text.startswith("["):
        return json_value(text, "tiers")
    tiers = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 3:
            raise forms.ValidationError(f"Line {number} ({line.strip()!r}): write lower, upper, rate (three values "
                                        "separated by commas; upper empty for the open-ended last tier).")
        lower, upper, rate = parts
        tiers.append({"lower": lower, "upper": upper or None, "rate": rate})
    return tiers


class StrategyForm(ApiForm):
    """One pricing strategy of a plan, as one item of `POST /v1/pricing-plans/{planId}/pricing-strategies`."""

    API_FIELDS = {"name": "name", "agent": "agentId", "charge_type": "chargeType", "pricing_model": "pricingModel",
                  "rate": "rate", "tiers": "tiers", "billing_frequency": "billingFrequency", "signal": "signalId",
                  "minimum_commitment": "minimumCommitment", "active": "active", "tags": "tags"}

    name = forms.CharField(required=False)
    agent = forms.ChoiceField(required=False, help_text="The plan's agents (link another on the plan's page).")
    charge_type = forms.ChoiceField(required=False, choices=[("", "-"), *ChargeType.choices],
                                    help_text="Usage bills a signal's units; the others are fees.")
    pricing_model = forms.ChoiceField(
        required=False, choices=[("", "- (none: a recurring or one-time fee)"), *PricingModel.choices],
        help_text="Required for usage and per-seat strategies.")
    rate = forms.CharField(required=False, help_text="Per unit for a flat rate; the fee for a recurring or "
                                                     "one-time fee. Empty when the rates are in tiers.")
    tiers = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4, "cols": 60}), help_text=TIERS_HELP)
    billing_frequency = forms.ChoiceField(choices=BillingFrequency.choices, initial=BillingFrequency.MONTHLY)
    signal = forms.ChoiceField(required=False, help_text="Usage strategies only: a signal of the chosen agent.")
    minimum_commitment = forms.CharField(required=False, help_text="Units billed at least each period (usage and "
                                                                  "per-seat strategies); empty for none.")
    active = forms.BooleanField(required=False, initial=True)
    tags = forms.CharField(required=False, help_text="Comma-separated.")

    def __init__(self, *args, plan: PricingPlan, **kwargs):
        super().__init__(*args, **kwargs)
        agents = list(owned(Agent, plan.book_id).filter(
            pk__in=owned(PlanAgent, plan.book_id).filter(plan=plan).values("agent_id")).order_by("name", "pk"))
        self.fields["agent"].choices = [("", "-"), *((str(agent.pk), str(agent)) for agent in agents)]
        signals = owned(Signal, plan.book_id).filter(agent__in=agents).order_by("short_name", "pk")
        by_agent = {agent.pk: [] for agent in agents}
        for signal in signals:
            by_agent[signal.agent_id].append((str(signal.pk), str(signal)))
        # Grouped under their agent; one of another agent than the chosen one is refused by the API's check.
        self.fields["signal"].choices = [("", "-"), *((str(agent), by_agent[agent.pk]) for agent in agents
                                                     if by_agent[agent.pk])]

    def clean_tiers(self):
        return tiers_from_text(self.cleaned_data["tiers"])

    def clean_tags(self):
        return [tag.strip() for tag in self.cleaned_data["tags"].split(",") if tag.strip()]

    def api_body(self) -> dict:
        return {**super().api_body(), "active": self.cleaned_data["active"]}


def strategy_add_view(model_admin, request, object_id):
    """Add one pricing strategy to a plan: the API's serializer (`StrategyIn`) and service (`strategies_create`)."""
    plan = model_admin.get_object(request, unquote(object_id))
    if plan is None:  # missing or of an organization the operator does not see: as the change page
        return model_admin._get_obj_does_not_exist_redirect(request, model_admin.model._meta, object_id)
    back = reverse("admin:billing_pricingplan_change", args=[plan.pk])
    roles = strategy_write_roles()
    if not may_act(request.user, organization_id_of(plan), roles):
        model_admin.message_user(request, f"{plan}: {role_refusal(roles)}", messages.ERROR)
        return HttpResponseRedirect(back)
    form = StrategyForm(request.POST if request.method == "POST" else None, plan=plan)
    if form.is_bound and form.is_valid():
        item = form.api_parse(StrategyIn)
        if item is not None:
            try:
                strategy, = strategies_create(book=plan.book, plan_id=plan.pk, items=[item], actor=actor(request),
                                              now=clock.now())
            except ApiError as problem:
                form.add_api_errors(api_error_messages(problem, "[0]."))
            else:
                message = f"Pricing strategy '{strategy.name}' added ({strategy.get_charge_type_display()})."
                model_admin.log_change(request, plan, message)
                model_admin.message_user(request, message, messages.SUCCESS)
                return HttpResponseRedirect(back)
    context = {**model_admin.admin_site.each_context(request), "opts": model_admin.model._meta, "original": plan,
               "title": f"Add a pricing strategy to {plan}", "form": form, "back": back,
               "linked_agents": len(form.fields["agent"].choices) - 1}
    return TemplateResponse(request, "admin/billing/pricingplan/add_strategy.html", context)


class BookChoiceForm(forms.Form):
    """The book a new subscription belongs to: its customer, plan and agent are offered from it alone."""

    book = forms.ChoiceField(label="Book")

    def __init__(self, *args, books, **kwargs):
        super().__init__(*args, **kwargs)
        self.books = {str(book.pk): book for book in books}
        self.fields["book"].choices = [("", "-"), *((key, str(book)) for key, book in self.books.items())]

    def chosen(self):
        return self.books[self.cleaned_data["book"]] if self.is_valid() else None


class SubscriptionForm(ApiForm):
    """`POST /v1/subscriptions`, its customer, plan and agent offered from one book."""

    API_FIELDS = {"customer": "customerId", "plan": "planId", "agent": "agentId", "name": "name",
                  "start_date": "startDate", "end_date": "endDate", "is_forever": "isForever", "status": "status",
                  "billing_cycle": "billingCycle", "custom_cycle_days": "customCycleDays",
                  "billing_day": "billingDay", "timezone": "timezone", "billing_model": "billingModel",
                  "seats_count": "seatsCount", "net_terms": "netTerms", "prorated_amount": "proratedAmount",
                  "invoice_memo": "invoiceMemo", "subscription_details": "subscriptionDetails",
                  "metadata": "metadata"}
    NOT_IN_BOOK = "Not a {what} of {book}: a subscription's customer, plan and agent belong to one book."

    book = forms.CharField(widget=forms.HiddenInput)
    customer = forms.ChoiceField(required=False)
    plan = forms.ChoiceField(required=False, help_text="Active plans.")
    agent = forms.ChoiceField(required=False, help_text="One of the plan's agents.")
    name = forms.CharField(required=False)
    start_date = forms.CharField(required=False, help_text="YYYY-MM-DD (midnight in the subscription's time zone) "
                                                           "or an instant, 2025-06-01T00:00:00Z.")
    end_date = forms.CharField(required=False, help_text="Empty: no end. As the start; a last second "
                                                         "(…T23:59:59) means the next midnight.")
    is_forever = forms.BooleanField(required=False, label="Runs forever")
    status = forms.ChoiceField(required=False, choices=[("", "- (from the start date)"), *SubscriptionStatus.choices],
                               help_text="Empty: upcoming for a future start, active otherwise.")
    billing_cycle = forms.ChoiceField(choices=BillingCycle.choices, initial=BillingCycle.MONTHLY)
    custom_cycle_days = forms.CharField(required=False, help_text="Days a period lasts, with the custom cycle only.")
    billing_day = forms.CharField(required=False, help_text="1 to 31; empty: periods start on the start date's day.")
    timezone = forms.CharField(required=False, help_text="An IANA name (Europe/Paris); empty: the customer's.")
    billing_model = forms.ChoiceField(choices=BillingModel.choices, initial=BillingModel.SUBSCRIPTION)
    seats_count = forms.CharField(required=False, label="Seats", help_text="Empty: 0.")
    net_terms = forms.CharField(required=False, help_text="Days to pay an invoice; empty: 30.")
    prorated_amount = forms.CharField(required=False)
    invoice_memo = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}))
    subscription_details = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
                                           help_text="A JSON object, stored as written.")
    metadata = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
                               help_text="A JSON object, stored as written.")

    def __init__(self, *args, book, **kwargs):
        super().__init__(*args, initial={"book": str(book.pk)}, **kwargs)
        self.book = book
        rows = {"customer": owned(Customer, book).filter(deleted_at__isnull=True, is_internal=False),
                "plan": owned(PricingPlan, book).filter(is_active=True), "agent": owned(Agent, book)}
        for name, queryset in rows.items():
            field = self.fields[name]
            field.choices = [("", "-"), *((str(row.pk), str(row)) for row in queryset.order_by("name", "pk"))]
            # Django fills in "%(value)s" placeholders: a "%" in a name is written as itself.
            field.error_messages["invalid_choice"] = self.NOT_IN_BOOK.format(what=name, book=book).replace("%", "%%")

    def clean_subscription_details(self):
        text = self.cleaned_data["subscription_details"].strip()
        return json_value(text, "subscriptionDetails") if text else None

    def clean_metadata(self):
        text = self.cleaned_data["metadata"].strip()
        return json_value(text, "metadata") if text else None

    def api_body(self) -> dict:
        return {**super().api_body(), "isForever": self.cleaned_data["is_forever"]}


def _chosen_book(request, books: dict):
    """The book the page works in: the one posted or asked for (`?book=`, or the list's book filter, which the
    list's add button passes on); None until the operator chooses one (every organization has two)."""
    wanted = (request.POST.get("book") or request.GET.get("book")
              or QueryDict(request.GET.get("_changelist_filters", "")).get("book"))
    return books.get(wanted) if wanted else None


def subscription_add_view(model_admin, request):
    """Create a subscription: the API's serializer (`SubscriptionCreateIn`) and service (`subscription_create`), in
    one book chosen first (a superuser sees every organization's); then the new subscription's page."""
    opts = model_admin.model._meta
    books = {str(book.pk): book for book in visible_books(request.user).order_by("organization__name", "environment")
             if may_act(request.user, book.organization_id, subscription_write_roles())}
    book = _chosen_book(request, books)
    chooser = BookChoiceForm({"book": str(book.pk)} if book else None, books=books.values())
    form = None
    if book is not None:
        form = SubscriptionForm(request.POST if request.method == "POST" else None, book=book)
        if form.is_bound and form.is_valid():
            fields = form.api_parse(SubscriptionCreateIn)
            if fields is not None:
                try:
                    subscription = subscription_create(book=book, now=clock.now(), actor=actor(request), **fields)
                except ApiError as problem:
                    form.add_api_errors(api_error_messages(problem))
                else:
                    page = reverse("admin:billing_subscription_change", args=[subscription.pk])
                    message = (f"Subscription {subscription} created for {subscription.customer} on plan "
                               f"'{subscription.plan}' ({subscription.status}).")
                    model_admin.log_addition(request, subscription, message)
                    model_admin.message_user(request, message, messages.SUCCESS)
                    return HttpResponseRedirect(page)
    elif request.method == "POST":
        model_admin.message_user(request, "Choose the book (organization, test or live) the subscription belongs to; "
                                          "the book posted is not one you may add subscriptions to.", messages.ERROR)
    context = {**model_admin.admin_site.each_context(request), "opts": opts, "title": "Add a subscription",
               "chooser": chooser, "form": form, "book": book, "has_books": bool(books),
               "back": reverse("admin:billing_subscription_changelist")}
    return TemplateResponse(request, "admin/billing/subscription/add_subscription.html", context)
