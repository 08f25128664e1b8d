"""Operator console for plans, strategies and subscriptions. Subscriptions' dates, periods and changelog are
read-only here: they change through the API (and its changelog) or the scheduled job."""
from django.contrib import admin

from billing.models import (CreditGrant, CreditPoolAlert, PlanAgent, PricingPlan, PricingStrategy, Subscription,
                            SubscriptionChange)
from config.accounts.admin_scoping import BookScopedAdmin, ScopedInlineMixin


class PlanAgentInline(ScopedInlineMixin, admin.TabularInline):
    model = PlanAgent
    extra = 0
    fields = ["agent", "created_at"]
    readonly_fields = ["created_at"]


class PricingStrategyInline(ScopedInlineMixin, admin.TabularInline):
    model = PricingStrategy
    extra = 0
    fields = ["name", "agent", "charge_type", "pricing_model", "billing_frequency", "rate", "tiers", "active",
              "deleted_at"]
    readonly_fields = fields  # strategies are checked as a whole and logged on subscriptions: edit through the API
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(PricingPlan)
class PricingPlanAdmin(BookScopedAdmin):
    list_display = ["name", "book", "is_active", "agent_count", "created_at"]
    list_filter = ["is_active", "book__environment"]
    search_fields = ["name", "description", "agents__agent_code", "book__organization__name"]
    date_hierarchy = "created_at"
    readonly_fields = ["id", "created_at", "updated_at"]
    inlines = [PlanAgentInline, PricingStrategyInline]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("agent_links")

    @admin.display(description="agents")
    def agent_count(self, plan) -> int:
        return len(plan.agent_links.all())

    def save_formset(self, request, form, formset, change):
        for instance in formset.save(commit=False):
            instance.book_id = form.instance.book_id  # links belong to the plan's book
            instance.save()
        for removed in formset.deleted_objects:
            removed.delete()


@admin.register(PricingStrategy)
class PricingStrategyAdmin(BookScopedAdmin):
    list_display = ["name", "plan", "agent", "charge_type", "pricing_model", "billing_frequency", "rate", "active",
                    "deleted_at"]
    list_filter = ["charge_type", "pricing_model", "billing_frequency", "active",
                   ("deleted_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "plan__name", "agent__agent_code", "signal__short_name"]
    date_hierarchy = "created_at"
    list_select_related = ["plan", "agent", "book__organization"]
    readonly_fields = ["id", "book", "plan", "agent", "charge_type", "signal", "pricing_model", "billing_frequency",
                       "tiers", "rate", "minimum_commitment", "active", "deleted_at", "created_at", "updated_at"]

    def has_add_permission(self, request, *args):
        return False


class SubscriptionChangeInline(ScopedInlineMixin, admin.TabularInline):
    model = SubscriptionChange
    extra = 0
    fields = ["created_at", "kind", "summary", "changes", "actor"]
    readonly_fields = fields
    ordering = ["-created_at"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Subscription)
class SubscriptionAdmin(BookScopedAdmin):
    list_display = ["name", "customer", "plan", "agent", "status", "billing_cycle", "start_date", "end_date",
                    "current_period_start", "current_period_end"]
    list_filter = ["status", "billing_cycle", "billing_model", "is_forever", "book__environment"]
    search_fields = ["name", "customer__name", "customer__external_id", "plan__name", "agent__agent_code"]
    date_hierarchy = "start_date"
    list_select_related = ["customer", "plan", "agent", "book__organization"]
    readonly_fields = ["id", "book", "customer", "plan", "agent", "status", "start_date", "end_date", "is_forever",
                       "billing_cycle", "custom_cycle_days", "billing_day", "timezone", "current_period_start",
                       "current_period_end", "created_at", "updated_at"]
    inlines = [SubscriptionChangeInline]

    def has_add_permission(self, request, *args):
        return False


@admin.register(SubscriptionChange)
class SubscriptionChangeAdmin(BookScopedAdmin):
    list_display = ["created_at", "subscription", "kind", "summary", "actor"]
    list_filter = ["kind"]
    search_fields = ["summary", "actor", "subscription__name"]
    date_hierarchy = "created_at"
    list_select_related = ["subscription", "book__organization"]

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class ReadOnlyRecordAdmin(BookScopedAdmin):
    """Records the API and the scheduled job write (and the ledger settles); the console only reads them."""

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(CreditGrant)
class CreditGrantAdmin(ReadOnlyRecordAdmin):
    list_display = ["created_at", "subscription", "kind", "units", "period_start", "period_end", "consumed_units",
                    "topup_units_drawn", "settled_at", "idempotency_key", "created_by"]
    list_filter = ["kind", ("settled_at", admin.EmptyFieldListFilter), "book__environment"]
    search_fields = ["subscription__name", "subscription__customer__name", "subscription__customer__external_id",
                     "idempotency_key", "note", "created_by"]
    date_hierarchy = "created_at"
    list_select_related = ["subscription", "book__organization"]


@admin.register(CreditPoolAlert)
class CreditPoolAlertAdmin(ReadOnlyRecordAdmin):
    list_display = ["created_at", "subscription", "stage", "outcome", "used_percent", "remaining_units",
                    "period_start", "period_end"]
    list_filter = ["stage", "outcome", "book__environment"]
    search_fields = ["subscription__name", "subscription__customer__name", "subscription__customer__external_id"]
    date_hierarchy = "created_at"
    list_select_related = ["subscription", "book__organization"]


from billing import admin_invoices  # noqa: E402,F401  (invoices, payments and refunds register there)
