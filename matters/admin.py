"""Operator console for matters, routing rules and attributions. Deleting a matter goes through `matter_delete`
(its events return to Unassigned), the rules are applied through `matter_rules_apply_start`, and the forms check
what the services check (a member as responsible user, at least one matcher per rule), as in the API."""
from django import forms
from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html

from accounts.admin_actions import act_on_rows, actor
from accounts.admin_display import figure, format_value
from accounts.admin_scoping import (BookScopedAdmin, ReadOnlyAdminMixin, SameBookModelForm, ScopedInlineMixin,
                                    holds_role_somewhere, may_act)
from accounts.models import Book, Role
from core import display
from core.errors import ApiError
from jobs.admin import job_link
from matters.models import Matter, MatterAttribution, MatterRule
from matters.selectors import matter_cost_totals
from matters.services import matter_delete, matter_rules_apply_start, responsible_user_check, rule_matchers_check

MATTER_ROLES = frozenset({Role.OWNER, Role.ADMIN, Role.FINANCE, Role.LEGAL})  # as the matters endpoints


@admin.action(description="Apply the routing rules to unassigned events (in the selected rows' books)")
def apply_matter_rules(modeladmin, request, queryset):
    def apply(book):
        assigned, job = matter_rules_apply_start(book=book, created_by=actor(request))
        if job.finished:
            return format_html("{}: {} events assigned by rule ({}).", book, assigned, job_link(job, "the job"))
        return format_html("{}: {} events assigned by rule so far; the rest of the sweep runs in the background: "
                           "{}.", book, assigned, job_link(job))
    books = Book.objects.select_related("organization").filter(pk__in=queryset.values("book_id"))
    act_on_rows(modeladmin, request, books, apply, roles=MATTER_ROLES)


def service_check(check, **kwargs) -> None:
    """Run a service's own validation and show its message on the form."""
    try:
        check(**kwargs)
    except ApiError as exc:
        messages = exc.message if isinstance(exc.message, list) else [exc.message]
        raise forms.ValidationError([message.split(": ", 1)[-1] for message in messages])


# On SameBookModelForm, as every console form: a form of its own replaces the admin's, so without it a rule of the
# test book could point at a matter of the live book.
class MatterForm(SameBookModelForm):
    def clean(self):
        cleaned = super().clean()
        book = cleaned.get("book") or getattr(self.instance, "book", None)
        user = cleaned.get("responsible_user")
        if book is not None:
            service_check(responsible_user_check, book=book, user_id=user.pk if user else None)
        return cleaned


class MatterRuleForm(SameBookModelForm):
    def clean(self):
        cleaned = super().clean()
        rule = MatterRule(**{field: cleaned.get(field) or None
                             for field in ("agent_code", "customer_external_id", "signal_pattern")})
        if not self.cleaned_data.get("DELETE"):
            service_check(rule_matchers_check, rule=rule)
        return cleaned


class MatterRolesMixin:
    """Writes need a matters role (owner, admin, finance or legal) in the row's organization, as the matters
    endpoints ask; every operator reads. Without it a member added, changed and deleted matters and rules (a delete
    returns the matter's events to Unassigned)."""

    def _may_write(self, request, obj=None) -> bool:
        if obj is None or obj.book_id is None:
            return holds_role_somewhere(request.user, MATTER_ROLES)
        return may_act(request.user, obj.book.organization_id, MATTER_ROLES)

    def has_add_permission(self, request, *args):
        return super().has_add_permission(request, *args) and self._may_write(request, *args[:1])

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._may_write(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self._may_write(request, obj)

    def save_model(self, request, obj, form, change):
        # A new row's book is chosen on the form: the role is the one in that book's organization.
        if not self._may_write(request, obj):
            raise PermissionDenied
        super().save_model(request, obj, form, change)


class MatterRuleInline(MatterRolesMixin, ScopedInlineMixin, admin.TabularInline):
    model = MatterRule
    form = MatterRuleForm
    extra = 0
    fields = ["priority", "agent_code", "customer_external_id", "signal_pattern", "created_at"]
    readonly_fields = ["created_at"]
    ordering = ["priority", "created_at"]


def events_link(matter: Matter, text) -> str:
    """A link to the usage events list filtered to the matter's events (its `matter` filter, customers/admin.py)."""
    return format_html('<a href="{}?matter={}">{}</a>', reverse("admin:customers_usageevent_changelist"), matter.pk,
                       text)


@admin.register(Matter)
class MatterAdmin(MatterRolesMixin, BookScopedAdmin):
    form = MatterForm
    list_display = ["matter_number", "name", "client_name", "status", "book", "rule_count", "event_count",
                    "created_at"]
    search_fields = ["matter_number", "name", "client_name"]
    list_filter = ["status"]
    date_hierarchy = "created_at"
    ordering = ["-created_at"]
    readonly_fields = ["id", "events", "actual_cost", "usage", "created_at", "updated_at"]
    autocomplete_fields = ["responsible_user"]
    inlines = [MatterRuleInline]
    actions = [apply_matter_rules]

    def get_queryset(self, request):
        # Each row with the figures of GET /v1/matters/{id}: the API's `matter_list` annotates its rows with these
        # same subqueries, so the page and the API never disagree.
        return super().get_queryset(request).annotate(rule_count=Count("rules", distinct=True),
                                                      **matter_cost_totals())

    @admin.display(description="rules", ordering="rule_count")
    def rule_count(self, matter):
        return matter.rule_count

    @admin.display(description="events", ordering="event_count")
    def event_count(self, matter):
        """The count, linked to the events it counts."""
        return events_link(matter, figure(display.quantity(matter.event_count)))
    event_count.csv_value = lambda matter: matter.event_count

    # The add page's matter is not stored yet (its id is already set): no figures, no link.
    @admin.display(description="Events")
    def events(self, matter) -> str:
        if matter._state.adding:
            return display.EMPTY
        return figure(display.quantity(matter.event_count))

    @admin.display(description="Actual cost")
    def actual_cost(self, matter) -> str:
        """`actualCost` as the API gives it: the exact sum of its events' costs. An unpriced event adds 0, so the page
        says how many there are (the cost grows once they are priced)."""
        if matter._state.adding:
            return display.EMPTY
        cost = figure(display.price(matter.actual_cost))
        if not matter.events_missing_cost:
            return cost
        unpriced = matter.events_missing_cost
        return format_html("{} ({} {} without a cost yet, counted as 0)", cost, display.quantity(unpriced),
                           "event" if unpriced == 1 else "events")

    @admin.display(description="Usage")
    def usage(self, matter) -> str:
        if matter._state.adding:
            return display.EMPTY
        return events_link(matter, "Usage events of this matter")

    def save_formset(self, request, form, formset, change):
        # Inline rules belong to the matter's book.
        for rule in formset.save(commit=False):
            rule.book = form.instance.book
            rule.save()
        for rule in formset.deleted_objects:
            rule.delete()

    def get_deleted_objects(self, objs, request):
        # Attributions hold a matter back (RESTRICT) only from a plain delete: matter_delete keeps them
        # and returns their events to Unassigned, so neither their delete permission nor protection applies.
        deleted, model_count, perms_needed, _ = super().get_deleted_objects(objs, request)
        return deleted, model_count, perms_needed - {MatterAttribution._meta.verbose_name}, []

    def delete_model(self, request, obj):
        # Through the service: events return to Unassigned, rules go (spec §3).
        matter_delete(book=obj.book, matter_id=obj.id)

    def delete_queryset(self, request, queryset):
        for matter in queryset:
            matter_delete(book=matter.book, matter_id=matter.id)


@admin.register(MatterRule)
class MatterRuleAdmin(MatterRolesMixin, BookScopedAdmin):
    form = MatterRuleForm
    list_display = ["matter", "priority", "agent_code", "customer_external_id", "signal_pattern"]  # 1,366 px
    list_select_related = ["matter", "book__organization"]
    search_fields = ["matter__matter_number", "matter__name", "agent_code", "customer_external_id",
                     "signal_pattern"]
    list_filter = ["matter"]
    date_hierarchy = "created_at"
    ordering = ["book", "priority", "created_at"]
    autocomplete_fields = ["matter"]
    actions = [apply_matter_rules]


@admin.register(MatterAttribution)
class MatterAttributionAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    """Attribution changes go through the API (manual assignment) so the history stays exact."""

    list_display = ["event", "event_date", "event_cost", "matter", "source", "assigned_by", "updated_at"]  # 1,366 px
    list_select_related = ["event", "matter", "book__organization"]
    search_fields = ["matter__matter_number", "event__id", "=event__customer_external_id", "=event__agent_code"]
    list_filter = ["source"]
    date_hierarchy = "created_at"

    # The event's own date and cost, as the usage events list writes them: "documents_reviewed × 1" alone says
    # neither when the work was done nor what it cost the matter.
    @admin.display(description="Date", ordering="event__usage_date")
    def event_date(self, attribution) -> str:
        return format_value("moment", attribution.event.usage_date)
    event_date.csv_value = lambda attribution: attribution.event.usage_date

    @admin.display(description="Cost", ordering="event__usage_cost")
    def event_cost(self, attribution) -> str:
        cost = attribution.event.usage_cost
        return display.EMPTY if cost is None else format_value("price", cost)  # a dash while unpriced
    event_cost.csv_value = lambda attribution: attribution.event.usage_cost
