"""Operator console for spend controls and watches.

Caps are shown, not edited here: their rules (the org ceiling, one cap per target) live in the API's services.
Firing records are permanent. Notifications are the organization's in-app feed of tripped watches.
"""
from django.contrib import admin
from django.utils.html import format_html

from accounts.actors import actor_name
from accounts.admin_actions import act_on_rows
from accounts.admin_scoping import BookScopedAdmin, ReadOnlyAdminMixin, may_act, organization_id_of
from core import display
from controls.models import CustomerAlert, CustomerAlertFiring, Device, Notification, SpendCap, SpendCapAlert
from controls.services.customer_alerts import customer_alert_delete
from controls.views import WATCH_ROLES


class CreatedByShownMixin:
    """The page of a cap or a watch names who created it where the stored id would be. The API keeps the user id of
    the member whose key made it (`createdByUserId`); the console names authors one way (accounts/actors.py): a
    user by email, a key by its name."""

    readonly_fields = ["created_by"]

    def get_fields(self, request, obj=None):
        fields = [name for name in super().get_fields(request, obj) if name != "created_by"]
        return ["created_by" if name == "created_by_user_id" else name for name in fields]

    @admin.display(description="Created by")
    def created_by(self, row) -> str:
        stored = row.created_by_user_id
        if not stored:
            return display.EMPTY
        author = stored if ":" in stored else f"user:{stored}"  # `api-key:<id>` as kept elsewhere; a bare id: a user
        name = actor_name(row.book_id, author)
        return stored if name == author else name  # nobody the book knows: as the API keeps it


@admin.register(SpendCap)
class SpendCapAdmin(CreatedByShownMixin, ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["sentence", "scope", "scope_value", "amount_usd", "period", "mode", "tripped_at",
                    "updated_at"]  # 1,366 px: the book is on the cap's page
    list_filter = ["scope", "period", "mode"]
    search_fields = ["scope_value", "created_by_user_id"]
    date_hierarchy = "created_at"


@admin.register(SpendCapAlert)
class SpendCapAlertAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["cap", "threshold_percent", "spent_usd", "amount_usd", "window_start", "created_at", "book"]
    list_filter = ["threshold_percent"]
    search_fields = ["cap__scope_value"]
    date_hierarchy = "created_at"
    list_select_related = ["cap", "book__organization"]


@admin.register(Device)
class DeviceAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["device_id", "customer_external_id", "armed", "last_seen_at", "book", "created_at"]
    list_filter = ["armed"]
    search_fields = ["device_id", "customer_external_id"]
    date_hierarchy = "last_seen_at"


@admin.register(CustomerAlert)
class CustomerAlertAdmin(CreatedByShownMixin, ReadOnlyAdminMixin, BookScopedAdmin):
    """Deleting a watch here has the API's effect: its notifications go, its firing records stay."""

    deletable = True
    list_display = ["customer", "metric", "threshold_usd", "window_mode", "recipient_email", "book", "created_at"]
    list_filter = ["metric", "window_mode"]
    search_fields = ["customer__name", "customer__external_id", "recipient_email"]
    date_hierarchy = "created_at"
    list_select_related = ["customer", "book__organization"]

    def has_delete_permission(self, request, obj=None):
        allowed = super().has_delete_permission(request, obj)
        return allowed and (obj is None or may_act(request.user, organization_id_of(obj), WATCH_ROLES))

    def delete_model(self, request, obj):
        customer_alert_delete(book=obj.book, alert_id=obj.pk)  # as DELETE /v1/customer-alerts/{id}

    def delete_queryset(self, request, queryset):
        def delete(alert):
            customer_alert_delete(book=alert.book, alert_id=alert.pk)
            return f"{alert} deleted."
        act_on_rows(self, request, queryset, delete, roles=WATCH_ROLES)


@admin.register(CustomerAlertFiring)
class CustomerAlertFiringAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["customer", "metric", "value_usd", "threshold_usd", "window_key", "recipient_email", "created_at",
                    "book"]
    list_filter = ["metric"]
    search_fields = ["customer__name", "customer__external_id", "recipient_email", "window_key"]
    date_hierarchy = "created_at"
    list_select_related = ["customer", "book__organization"]


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    """The in-app feed: operators read notices and open the customer from the link; dismissing deletes one."""

    deletable = True
    list_display = ["title", "open_link", "book", "created_at"]
    search_fields = ["title", "body"]
    date_hierarchy = "created_at"
    readonly_fields = ["title", "body", "open_link", "alert", "firing", "book", "created_at"]
    fields = readonly_fields

    @admin.display(description="Customer")
    def open_link(self, notification):
        return format_html('<a href="{}">Open customer</a>', notification.link)
