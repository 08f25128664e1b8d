"""Operator console for customers, agents, signals and the usage ledger.

The ledger is append-only here too: events are read, never edited; unpriced ones are mapped to a catalog entry
through the same `model_map` as POST /v1/events/map-model (which backfills their cost).
"""
from django import forms
from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.contrib.admin.utils import get_fields_from_path
from django.contrib.admin.widgets import AutocompleteSelect
from django.core.exceptions import ValidationError
from django.http import StreamingHttpResponse
from django.urls import reverse
from django.utils.html import format_html

from catalog.models import ServiceEntry
from accounts.admin_actions import act_on_rows, action_page, actor, submitted
from accounts.admin_display import MonthsDateFilter, figure, presence_filter
from accounts.admin_scoping import (BookListFilter, BookScopedAdmin, ReadOnlyAdminMixin, SameBookModelForm,
                                   ScopedInlineMixin, visible_books)
from accounts.api import MONEY_ROLES
from accounts.models import Book
from core import clock, display
from core.ids import uuid_or_none
from core.scoping import owned
from jobs.admin import job_link
from customers.backfill import events_reprice_start, events_unpriced_reasons, model_map
from customers.export import EXPORT_TYPES, events_pages, export_bytes
from catalog.models import PriceOverride
from customers.models import Agent, Customer, RollupGrain, Signal, UsageDailyRollup, UsageEvent
from customers.price_overrides import price_override_delete
from customers.rollup import analytics_rollup_catch_up_books
from customers.services import customer_delete, customer_marking_internal


class CustomerForm(SameBookModelForm):
    def clean_is_internal(self):
        """Ticking "Is internal" on a customer the book bills is refused (`customer_marking_internal`); clearing it
        is always allowed. The admin's change view runs in one transaction, so the row lock the check takes holds
        until the mark is saved."""
        marked = self.cleaned_data.get("is_internal")
        if marked and self.instance.pk and not self.instance._state.adding and "is_internal" in self.changed_data:
            try:
                customer_marking_internal.run(book=self.instance.book, customer_id=self.instance.pk)
            except ValueError as refusal:
                raise ValidationError(str(refusal)) from None
        return marked


@admin.register(Customer)
class CustomerAdmin(BookScopedAdmin):
    form = CustomerForm
    list_display = ["name", "external_id", "email", "status", "net_terms", "is_internal", "created_at"]
    list_filter = ["status", "is_internal", ("deleted_at", presence_filter("deleted", "Deleted", "Not deleted"))]
    search_fields = ["name", "external_id", "email", "billing_contact_email"]
    date_hierarchy = "created_at"
    # The JSON fields are written through the API (their rules are its serializers'); shown here as lines.
    readonly_fields = ["usage", "id", "invoice_email_recipients", "metadata", "created_at", "updated_at",
                       "deleted_at"]
    actions = ["soft_delete_customers"]

    @admin.display(description="Usage")
    def usage(self, customer) -> str:
        """Where the customer's events are: the ledger's list, filtered to this customer (the list's searches
        match an external id whole, never a name)."""
        if customer.pk is None or customer._state.adding:  # the add page: ids are set before the row is saved
            return "-"
        return format_html('<a href="{}?customer__id__exact={}">Usage events of this customer</a>',
                           reverse("admin:customers_usageevent_changelist"), customer.pk)

    def has_delete_permission(self, request, obj=None):
        return False  # customers are soft-deleted through the action, as through the API

    @admin.action(description="Delete selected customers (soft delete)")
    def soft_delete_customers(self, request, queryset):
        now = clock.now()

        def delete(customer):
            customer_delete(book=customer.book, customer_id=customer.id, now=now)
            return f"{customer} deleted."
        act_on_rows(self, request, queryset.filter(deleted_at__isnull=True), delete)


class SignalInline(ScopedInlineMixin, admin.TabularInline):
    model = Signal
    fields = ["name", "short_name", "type", "cost_category"]
    extra = 0
    show_change_link = True


@admin.register(Agent)
class AgentAdmin(BookScopedAdmin):
    list_display = ["name", "agent_code", "is_active", "book", "created_at"]
    list_filter = ["is_active"]
    search_fields = ["name", "agent_code", "description"]
    date_hierarchy = "created_at"
    readonly_fields = ["id", "created_at", "updated_at"]
    inlines = [SignalInline]

    def save_formset(self, request, form, formset, change):
        for signal in formset.save(commit=False):
            signal.book = form.instance.book  # a signal lives in its agent's book
            signal.save()
        for signal in formset.deleted_objects:
            signal.delete()


@admin.register(Signal)
class SignalAdmin(BookScopedAdmin):
    list_display = ["short_name", "name", "type", "agent", "cost_category", "book"]  # 1,366 px
    list_filter = ["type", "cost_category"]
    search_fields = ["name", "short_name", "agent__name", "agent__agent_code"]
    date_hierarchy = "created_at"
    list_select_related = ["agent", "book__organization"]
    fields = ["id", "agent", "name", "short_name", "type", "cost_category", "book", "created_at", "updated_at"]
    readonly_fields = ["id", "book", "created_at", "updated_at"]
    autocomplete_fields = ["agent"]
    # Usage finds a signal by its agent and short name: moved to another agent, the agent's next records would make
    # a new signal that no plan bills (the API refuses another agentId). Disabled, as a book is, so the unique
    # checks of (agent, name) still run.
    OWNER_FIELDS = (*BookScopedAdmin.OWNER_FIELDS, "agent")

    def save_model(self, request, obj, form, change):
        obj.book = obj.agent.book  # a signal lives in its agent's book
        super().save_model(request, obj, form, change)


class ModelMapForm(forms.Form):
    model = forms.CharField(max_length=255, help_text="The unknown model name, as the events send it.")
    model_provider = forms.CharField(max_length=100, label="Model provider")

    def __init__(self, *args, admin_site, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["service"] = forms.ModelChoiceField(
            queryset=ServiceEntry.objects.filter(is_active=True), label="Catalog entry",
            widget=AutocompleteSelect(UsageEvent._meta.get_field("service"), admin_site),
            help_text="The active catalog entry whose rates price this model (type to search).")


def _visible_matter(request, matter_id: str):
    """The matter of a visible book with that id, or None. The ledger sits below matters in the stack, so the model
    is reached through the events' own relation (as Django's related-field filters reach theirs), never imported."""
    parsed = uuid_or_none(matter_id)
    if parsed is None:
        return None
    matter_model = get_fields_from_path(UsageEvent, "matter_attribution__matter")[-1].related_model
    return matter_model.objects.filter(pk=parsed, book__in=visible_books(request.user)).first()


class MatterListFilter(admin.SimpleListFilter):
    """The events attributed to one matter (a matter's page and the matters list link here with `?matter=<id>`).
    Scoped as the book filter (accounts/admin_scoping.py): an id that does not parse is the list's invalid filter
    notice, and the ledger's rows are the operator's books only, so another organization's matter lists nothing.
    Shown once chosen, never as a choice of every matter (the sidebar would list them all)."""

    title = "matter"
    parameter_name = "matter"

    def lookups(self, request, model_admin):
        if self.value() is None:
            return []
        matter = _visible_matter(request, self.value())
        return [(self.value(), str(matter) if matter is not None else self.value())]

    def has_output(self):
        return self.value() is not None  # chosen: applied (a filter without output is skipped) and shown

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        matter_id = uuid_or_none(self.value())
        if matter_id is None:
            raise IncorrectLookupParameters(f"Not an id: {self.value()[:40]!r}")
        return queryset.filter(matter_attribution__matter_id=matter_id)


@admin.register(UsageEvent)
class UsageEventAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    """The ledger: append-only. Searches match whole values (the table is the largest one)."""

    # What fits a 1,366 px window; the agent, the provider and the book are filters, searches and on the event's page.
    # The customer by name, as every other page names it (its external id is on the event's page and searchable).
    list_display = ["usage_date", "customer", "signal_shown", "quantity", "models", "usage_cost",
                    "event_status", "why_unpriced"]
    list_select_related = ["customer", "signal", "book__organization"]
    column_labels = {"usage_date": "Date", "usage_cost": "Cost", "event_status": "Status"}
    # A date filter rather than a date hierarchy: the hierarchy reads the distinct dates of the whole ledger.
    list_filter = ["event_status", "environment", ("usage_date", MonthsDateFilter), MatterListFilter]
    search_fields = ["=customer_external_id", "=agent_code", "=signal_name", "=model", "=idempotency_key"]
    ordering = ["-usage_date", "-id"]
    readonly_fields = ["why_unpriced", "models"]
    fieldsets = [
        (None, {"fields": ["usage_date", "customer", "agent", "signal", "quantity", "usage_cost", "event_status",
                           "why_unpriced", "environment"]}),
        ("Model and tokens", {"fields": ["models", "model_provider", "service", "input_tokens", "output_tokens",
                                         "cache_read_tokens", "cache_write_tokens", "services"]}),
        ("As recorded", {"fields": ["customer_external_id", "agent_code", "signal_name", "idempotency_key",
                                    "metadata", "raw_event_id", "id", "book", "created_at", "updated_at"]}),
    ]
    show_full_result_count = False
    actions = ["map_model", "price_again", "export_events_csv", "export_events_jsonl"]

    def changelist_view(self, request, extra_context=None):
        """Opened from a customer's or a matter's page (filtered to it), the list says whose events it shows."""
        customer_id = request.GET.get("customer__id__exact")
        matter_id = request.GET.get(MatterListFilter.parameter_name)
        if customer_id:
            try:
                customer = Customer.objects.filter(pk=customer_id, book__in=visible_books(request.user)).first()
            except ValidationError:  # not an id: the list answers as for any bad filter
                customer = None
            if customer is not None:
                extra_context = {**(extra_context or {}), "title": f"Usage events of {customer.name}",
                                 "subtitle": None}
        elif matter_id:
            matter = _visible_matter(request, matter_id)
            if matter is not None:
                extra_context = {**(extra_context or {}), "title": f"Usage events of matter {matter}",
                                 "subtitle": None}
        return super().changelist_view(request, extra_context)

    def get_search_results(self, request, queryset, search_term):
        """The search fields' whole values, or the events of the customer whose whole name the search is: the list
        names each event's customer, and names have spaces ("Stark Industries"), which the admin's search would
        take as two words."""
        found, may_have_duplicates = super().get_search_results(request, queryset, search_term)
        name = search_term.strip().strip('"')
        if name:
            found = found | queryset.filter(customer__name__iexact=name)
        return found, may_have_duplicates
    def get_changelist_instance(self, request):
        """The page, with why each unpriced event on it is unpriced (priced again now, read only: one catalog
        read per book on the page)."""
        changelist = super().get_changelist_instance(request)
        by_book: dict = {}
        for event in changelist.result_list:
            if event.usage_cost is None or event.priced_at_standard_tier:
                by_book.setdefault(event.book, []).append(event)
        reasons = [events_unpriced_reasons(book=book, events=events, how_to_map=self.HOW_TO_MAP)
                   for book, events in by_book.items()]
        request.unpriced_reasons = {event_id: reason for of_book in reasons for event_id, reason in of_book.items()}
        return changelist

    # Why an event is unpriced, or why a batch, flex or priority event was priced at standard rates.
    WHY = "Why unpriced"  # also says why a tier was priced at standard; no room for more at 1,366 px
    MAP_MODEL = "Map the model to a catalog entry and price the waiting events"
    HOW_TO_MAP = f'select it and run "{MAP_MODEL}"'  # the console's way, where the API's answers name theirs

    @admin.display(description="Model", ordering="model")
    def models(self, event) -> str:
        """The event's model, or a multi-service event's models in the order it lists them (its `model` column
        is empty: each service is priced on its own)."""
        if event.services:
            return " + ".join(dict.fromkeys(part["model"] for part in event.services))
        return event.model or "-"

    @admin.display(description="Signal", ordering="signal_name")
    def signal_shown(self, event):
        """The signal by its name, as invoices and the portal name it (a record may send its short name); the name
        the record sent once the signal is deleted."""
        return event.signal.name if event.signal is not None else event.signal_name

    signal_shown.raw_field = "signal_name"  # the CSV export writes what the record sent

    @admin.display(description=WHY)
    def why_unpriced(self, event):
        """On the event's page: why it is unpriced (priced again now, read only). The list replaces this per
        request by `get_list_display`, with one catalog read per book on the page."""
        if event.usage_cost is not None:
            return "-"
        return events_unpriced_reasons(book=event.book, events=[event], how_to_map=self.HOW_TO_MAP).get(event.pk, "-")

    def get_list_display(self, request):
        """`why_unpriced` reads the reasons that `get_changelist_instance` worked out for this request's page."""
        def why_unpriced(event):
            if event.usage_cost is not None and not event.priced_at_standard_tier:
                return ""
            return getattr(request, "unpriced_reasons", {}).get(event.pk, "")
        why_unpriced.short_description = self.WHY
        return [why_unpriced if name == "why_unpriced" else name for name in super().get_list_display(request)]

    def _export(self, queryset, export_format: str):
        """The selected events (every matching one with "Select all"), streamed like `GET /v1/events/export`:
        page by page, never the whole answer in memory."""
        # Opened in a spreadsheet by the people who download it: a name that reads as a formula is quoted, as in
        # every other CSV of the console.
        body = export_bytes(events_pages(queryset), export_format=export_format, gzip=False, spreadsheet=True)
        response = StreamingHttpResponse(body, content_type=EXPORT_TYPES[export_format])
        response["Content-Disposition"] = f'attachment; filename="usage-events.{export_format}"'
        return response

    def get_actions(self, request):
        # Every list's "Export selected rows as CSV" is, here, the ledger's own CSV export (below): the list's
        # columns wrote "Why unpriced" only for the rows of the page shown, empty for every other selected event.
        actions = super().get_actions(request)
        if "export_csv" in actions:
            _, name, description = actions["export_csv"]
            actions["export_csv"] = (type(self).export_events_csv, name, description)
        return actions

    @admin.action(description="Export these events with cost and attributes (CSV, every selected event)")
    def export_events_csv(self, request, queryset):
        return self._export(queryset, "csv")

    @admin.action(description="Export these events with cost and attributes (JSON Lines)")
    def export_events_jsonl(self, request, queryset):
        return self._export(queryset, "jsonl")

    @admin.action(description="Price again the unpriced events of these events' books (current catalog)")
    def price_again(self, request, queryset):
        books = Book.objects.select_related("organization").filter(
            pk__in=queryset.filter(usage_cost__isnull=True).values("book_id"))

        def price_in(book):
            job = events_reprice_start(book=book, created_by=actor(request))
            return format_html("{}: its unpriced events are being priced with the current catalog in the "
                               "background; {}.", book, job_link(job))
        act_on_rows(self, request, books, price_in)

    @admin.action(description=MAP_MODEL)
    def map_model(self, request, queryset):
        pairs = set(queryset.filter(usage_cost__isnull=True, model__isnull=False).order_by()
                    .values_list("model", "model_provider").distinct()[:2])
        initial = dict(zip(("model", "model_provider"), pairs.pop())) if len(pairs) == 1 else {}
        form = submitted(request, ModelMapForm, initial=initial, admin_site=self.admin_site)
        if not (form.is_bound and form.is_valid()):
            return action_page(self, request, queryset, form, title="Map a model to a catalog entry",
                               submit="Map and price events",
                               intro="Every unpriced event of these events' books that names the model is priced "
                                     "with the entry's rates; later events with the name resolve the same way.")
        model, provider, service = (form.cleaned_data[name] for name in ("model", "model_provider", "service"))

        def map_in(book):
            mapping = model_map(book=book, model=model, model_provider=provider, service_id=service.pk,
                                created_by=actor(request))
            priced = ("pricing them runs in the background" if mapping.scheduled
                      else f"{mapping.events_priced} priced")
            return format_html("{}: {} ({}) is priced as {}; {} unpriced events named it, {} ({}).", book,
                               mapping.alias.model, mapping.alias.model_provider, service, mapping.events_waiting,
                               priced, job_link(mapping.job, "the job"))
        books = Book.objects.select_related("organization").filter(pk__in=queryset.values("book_id"))
        act_on_rows(self, request, books, map_in)


@admin.register(UsageDailyRollup)
class UsageDailyRollupAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    """Derived from the ledger and kept exact by customers/rollup.py."""

    # What fits a 1,366 px window; the signal, the unpriced events, the quantity and the book are on the row's page.
    list_display = ["day", "grain", "customer", "agent", "model", "event_count", "priced_cost", "model_events",
                    "cost_of_model"]
    list_filter = ["grain"]
    # A day's own rows before the month's row that starts on it, rather than the two grains interleaved.
    ordering = ["-day", "grain"]
    search_fields = ["model", "customer__name", "customer__external_id"]
    date_hierarchy = "day"
    list_select_related = ["customer", "book__organization"]
    show_full_result_count = False
    # The row keeps plain ids (a deleted agent or signal leaves its id): the pages name them.
    exclude = ["agent_id", "signal_id"]
    readonly_fields = ["agent", "signal"]

    def get_changelist_instance(self, request):
        """The page, with the names of the agents its rows count (one read per book on the page). The rollup is
        caught up first, as every analytics read does: its rows lack the events recorded since the last catch-up
        (seconds ago, or since the workers stopped)."""
        books = visible_books(request.user)
        chosen = uuid_or_none(request.GET.get(BookListFilter.parameter_name))
        analytics_rollup_catch_up_books(books=books if chosen is None else books.filter(pk=chosen))
        changelist = super().get_changelist_instance(request)
        request.rollup_agents = _names(Agent, [(row.book_id, row.agent_id) for row in changelist.result_list])
        return changelist

    def get_list_display(self, request):
        """`agent` reads the names that `get_changelist_instance` read for this request's page."""
        def agent(row):
            return _name_of(row.agent_id, getattr(request, "rollup_agents", {}))
        agent.short_description = "Agent"
        agent.admin_order_field = "agent_id"
        agent.raw_field = "agent_id"  # the CSV export writes the id
        return [agent if name == "agent" else name for name in super().get_list_display(request)]

    @admin.display(description="Agent")
    def agent(self, row):
        return _name_of(row.agent_id, _names(Agent, [(row.book_id, row.agent_id)]))

    # An event without a cost adds nothing to `cost`: a row of unpriced events alone read as free ($0.00).
    @admin.display(description="Cost", ordering="cost")
    def priced_cost(self, row):
        cost = display.EMPTY if row.unpriced_count == row.event_count else display.price(row.cost)
        if not row.unpriced_count:
            return figure(cost)
        return format_html("{}<br><small>{} unpriced</small>", figure(cost), display.quantity(row.unpriced_count))
    priced_cost.csv_value = lambda row: row.cost

    # A multi-service event's figures go to the row of its first part's model; each model it names gets its events
    # and its parts' cost here (grains that keep the model only), so a second model's row does not read as unused.
    @admin.display(description="Events with the model", ordering="model_event_count")
    def model_events(self, row):
        return figure(display.quantity(row.model_event_count)) if _keeps_model(row) else display.EMPTY
    model_events.csv_value = lambda row: row.model_event_count if _keeps_model(row) else None

    @admin.display(description="Cost of the model", ordering="model_cost")
    def cost_of_model(self, row):
        return figure(display.price(row.model_cost)) if _keeps_model(row) else display.EMPTY
    cost_of_model.csv_value = lambda row: row.model_cost if _keeps_model(row) else None

    @admin.display(description="Signal")
    def signal(self, row):
        return _name_of(row.signal_id, _names(Signal, [(row.book_id, row.signal_id)]))


def _keeps_model(row) -> bool:
    return not row.grain & RollupGrain.NO_MODEL  # the grain's bit 1 sums the model away


def _name_of(row_id, names: dict) -> str:
    """An agent's or signal's name from a rollup row's id: a dash for a grain that sums them all, the id and
    "(deleted)" for one that no longer exists."""
    if row_id is None:
        return display.EMPTY
    return names.get(row_id, f"{row_id} (deleted)")


def _names(model, pairs: list[tuple]) -> dict:
    """(book, id) pairs of `model` (agents or signals) -> their names, read once per book."""
    by_book: dict = {}
    for book_id, row_id in pairs:
        if row_id is not None:
            by_book.setdefault(book_id, set()).add(row_id)
    return {pk: name for book_id, ids in by_book.items()
            for pk, name in owned(model, book_id).filter(pk__in=ids).values_list("pk", "name")}


@admin.register(PriceOverride)
class PriceOverrideAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    """A book's own prices (POST /v1/price-overrides), with who set each and when. Deleting one goes through the
    same service as the API, which prices the events it priced again (a job)."""

    list_display = ["target", "discount_percent", "input_cost", "output_cost", "cache_read_cost", "cache_write_cost",
                    "cache_write_1h_cost", "unit_cost", "since", "note", "created_by", "created_at", "book"]
    list_filter = ["model_provider"]
    search_fields = ["=model", "=model_provider", "service__canonical_name", "note"]
    date_hierarchy = "created_at"
    list_select_related = ["book__organization", "service"]
    actions = ["delete_and_reprice"]

    @admin.display(description="Prices")
    def target(self, override):
        if override.service_id:
            return f"{override.service.provider}/{override.service.canonical_name}"
        if override.model:
            return f"{override.model_provider}/{override.model} (not in the catalog)"
        return f"every {override.model_provider} model"

    @admin.display(description="Effective from", ordering="effective_from")
    def since(self, override):
        return override.effective_from or "every date"

    @admin.action(description="Delete the selected overrides and price their events again")
    def delete_and_reprice(self, request, queryset):
        def delete(override):
            change = price_override_delete(book=override.book, override_id=override.pk, created_by=actor(request))
            return format_html("{} deleted; its {} events are priced again ({}).", override,
                               change.events_affected, job_link(change.job, "the job"))
        # The API's roles for the same operation (contract: Price overrides; owner, admin, finance).
        act_on_rows(self, request, queryset.select_related("book", "service"), delete, roles=MONEY_ROLES)
