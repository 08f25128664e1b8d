from django.contrib import admin
from django.db.models import Count

from config.accounts.admin_scoping import BookScopedAdmin, ScopedInlineMixin
from matters.models import Matter, MatterAttribution, MatterRule
from matters.services import matter_delete


class MatterRuleInline(ScopedInlineMixin, admin.TabularInline):
    model = MatterRule
    extra = 0
    fields = ["priority", "agent_code", "customer_external_id", "signal_pattern", "created_at"]
    readonly_fields = ["created_at"]
    ordering = ["priority", "created_at"]


@admin.register(Matter)
class MatterAdmin(BookScopedAdmin):
    list_display = ["matter_number", "name", "client_name", "status", "book", "rule_count", "event_count",
                    "created_at"]
    search_fields = ["matter_number", "name", "client_name"]
    list_filter = ["status", "book__environment"]
    date_hierarchy = "created_at"
    readonly_fields = ["id", "created_at", "updated_at"]
    raw_id_fields = ["responsible_user"]
    inlines = [MatterRuleInline]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(
            rule_count=Count("rules", distinct=True), event_count=Count("attributions", distinct=True))

    @admin.display(description="rules", ordering="rule_count")
    def rule_count(self, matter):
        return matter.rule_count

    @admin.display(description="events", ordering="event_count")
    def event_count(self, matter):
        return matter.event_count

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
class MatterRuleAdmin(BookScopedAdmin):
    list_display = ["matter", "priority", "agent_code", "customer_external_id", "signal_pattern", "book",
                    "created_at"]
    list_select_related = ["matter", "book__organization"]
    search_fields = ["matter__matter_number", "matter__name", "agent_code", "customer_external_id",
                     "signal_pattern"]
    list_filter = ["book__environment"]
    date_hierarchy = "created_at"
    ordering = ["book", "priority", "created_at"]
    raw_id_fields = ["matter"]


@admin.register(MatterAttribution)
class MatterAttributionAdmin(BookScopedAdmin):
    """Read-only: attribution changes go through the API (manual assignment) so the history stays exact."""

    list_display = ["event", "matter", "source", "assigned_by", "book", "created_at", "updated_at"]
    list_select_related = ["event", "matter", "book__organization"]
    search_fields = ["matter__matter_number", "event__id", "event__customer_external_id", "event__agent_code"]
    list_filter = ["source", "book__environment"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
