from django.contrib import admin, messages

from config.accounts.admin_scoping import BookScopedAdmin, ScopedInlineMixin
from config.core import clock
from config.core.errors import ApiError
from customers.models import Agent, Customer, Signal, UsageDailyRollup
from customers.services import customer_delete

# Choices limited to the organizations of rows the operator can see (never another organization's name).
ORGANIZATION_FILTER = ("book__organization", admin.RelatedOnlyFieldListFilter)


@admin.action(description="Delete selected customers (soft delete)")
def soft_delete_customers(modeladmin, request, queryset):
    deleted = 0
    for customer in queryset.filter(deleted_at__isnull=True).select_related("book"):
        try:
            customer_delete(book=customer.book, customer_id=customer.id, now=clock.now())
            deleted += 1
        except ApiError as error:
            modeladmin.message_user(request, f"{customer}: {error.message}", messages.ERROR)
    modeladmin.message_user(request, f"{deleted} customer(s) deleted.", messages.SUCCESS)


@admin.register(Customer)
class CustomerAdmin(BookScopedAdmin):
    list_display = ["name", "external_id", "email", "status", "book", "net_terms", "is_internal", "created_at",
                    "deleted_at"]
    list_filter = ["status", "is_internal", ("deleted_at", admin.EmptyFieldListFilter), "book__environment",
                   ORGANIZATION_FILTER]
    search_fields = ["name", "external_id", "email", "billing_contact_email"]
    date_hierarchy = "created_at"
    readonly_fields = ["id", "created_at", "updated_at", "deleted_at"]
    actions = [soft_delete_customers]

    def has_delete_permission(self, request, obj=None):
        return False  # customers are soft-deleted through the action above, as through the API


class SignalInline(ScopedInlineMixin, admin.TabularInline):
    model = Signal
    fields = ["name", "short_name", "type", "cost_category"]
    extra = 0
    show_change_link = True


@admin.register(Agent)
class AgentAdmin(BookScopedAdmin):
    list_display = ["name", "agent_code", "is_active", "book", "created_at"]
    list_filter = ["is_active", "book__environment", ORGANIZATION_FILTER]
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
    list_display = ["short_name", "name", "type", "agent", "cost_category", "book", "created_at"]
    list_filter = ["type", "cost_category", "book__environment", ORGANIZATION_FILTER]
    search_fields = ["name", "short_name", "agent__name", "agent__agent_code"]
    date_hierarchy = "created_at"
    list_select_related = ["agent", "book__organization"]
    fields = ["id", "agent", "name", "short_name", "type", "cost_category", "book", "created_at", "updated_at"]
    readonly_fields = ["id", "book", "created_at", "updated_at"]

    def save_model(self, request, obj, form, change):
        obj.book = obj.agent.book  # a signal lives in its agent's book
        super().save_model(request, obj, form, change)


@admin.register(UsageDailyRollup)
class UsageDailyRollupAdmin(BookScopedAdmin):
    """Read-only: the rollup is derived from the ledger and kept exact by customers/rollup.py."""

    list_display = ["day", "grain", "customer", "agent_id", "signal_id", "model", "event_count", "unpriced_count",
                    "quantity", "cost", "book"]
    list_filter = ["grain", "book__environment", ORGANIZATION_FILTER]
    search_fields = ["model", "customer__name", "customer__external_id"]
    date_hierarchy = "day"
    list_select_related = ["customer", "book__organization"]
    readonly_fields = [field.name for field in UsageDailyRollup._meta.fields]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
