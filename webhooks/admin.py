"""The console's webhooks: each endpoint with its health, and the delivery log with every attempt. Endpoints are
shown, not edited here (the API validates their URLs); actions send a test, enable or disable an endpoint, and
resend deliveries, each through the API's services. Secrets never appear."""
from django.contrib import admin
from django.utils.html import format_html

from accounts.admin_actions import act_on_rows
from accounts.admin_scoping import BookScopedAdmin, ReadOnlyAdminMixin, ScopedInlineMixin
from core import clock
from webhooks import services
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent

WEBHOOK_ROLES = frozenset({"owner", "admin", "finance"})
HEALTH_COLORS = {"healthy": "#2e7d32", "failing": "#b26a00", "disabled": "#b00020"}


def health_of(endpoint: WebhookEndpoint) -> str:
    if not endpoint.enabled:
        return "disabled"
    return "failing" if endpoint.failing_since else "healthy"


@admin.register(WebhookEndpoint)
class WebhookEndpointAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["url", "health", "event_types_text", "description", "failing_since", "last_success_at",
                    "last_failure_at", "book", "created_at"]
    list_filter = ["enabled"]
    search_fields = ["url", "description"]
    date_hierarchy = "created_at"
    list_select_related = ["book__organization"]
    # The secrets are never shown; event types are shown as `event_types_text` (empty: every type).
    exclude = ["secret", "previous_secret", "earlier_secrets", "event_types"]
    actions = ["send_test", "enable", "disable"]

    @admin.display(description="Health")
    def health(self, endpoint):
        state = health_of(endpoint)
        return format_html('<strong style="color: {}">{}</strong>', HEALTH_COLORS[state], state)

    @admin.display(description="Event types")
    def event_types_text(self, endpoint):
        return ", ".join(endpoint.event_types) or "every type"

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "health", "event_types_text"]

    @admin.action(description="Send a test event")
    def send_test(self, request, queryset):
        def test(endpoint):
            services.webhook_endpoint_test(book=endpoint.book, endpoint_id=endpoint.pk, now=clock.now())
            return f"{endpoint}: test event queued; its delivery appears in the log."
        act_on_rows(self, request, queryset, test, roles=WEBHOOK_ROLES)

    @admin.action(description="Enable (healthy again; replay what it missed through the API)")
    def enable(self, request, queryset):
        def enable(endpoint):
            services.webhook_endpoint_update(book=endpoint.book, endpoint_id=endpoint.pk, now=clock.now(), enabled=True)
            return f"{endpoint} enabled."
        act_on_rows(self, request, queryset, enable, roles=WEBHOOK_ROLES)

    @admin.action(description="Disable")
    def disable(self, request, queryset):
        def disable(endpoint):
            services.webhook_endpoint_update(book=endpoint.book, endpoint_id=endpoint.pk, now=clock.now(),
                                             enabled=False)
            return f"{endpoint} disabled."
        act_on_rows(self, request, queryset, disable, roles=WEBHOOK_ROLES)


class WebhookAttemptInline(ScopedInlineMixin, admin.TabularInline):
    model = WebhookAttempt
    fields = ["number", "created_at", "succeeded", "response_status", "latency_ms", "error", "response_body"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    ordering = ["-number"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    """The delivery log: every event sent to an endpoint, its attempts (newest first) and the next retry."""

    list_display = ["created_at", "event_type", "endpoint", "status", "attempts", "last_response", "next_attempt_at",
                    "delivered_at", "book"]
    list_filter = ["status", "event__type"]
    search_fields = ["endpoint__url", "event__type"]
    date_hierarchy = "created_at"
    list_select_related = ["event", "endpoint", "book__organization"]
    inlines = [WebhookAttemptInline]
    actions = ["resend"]

    @admin.display(description="Event", ordering="event__type")
    def event_type(self, delivery):
        return delivery.event.type

    @admin.display(description="Last answer")
    def last_response(self, delivery):
        attempt = delivery.attempt_log.order_by("-number").first()
        if attempt is None:
            return "-"
        answer = str(attempt.response_status) if attempt.response_status else attempt.error
        return f"{answer} ({attempt.latency_ms} ms)" if attempt.latency_ms is not None else answer

    @admin.action(description="Resend now (same webhook-id)")
    def resend(self, request, queryset):
        def resend(delivery):
            services.webhook_delivery_resend(book=delivery.book, endpoint_id=delivery.endpoint_id,
                                             delivery_id=delivery.pk, now=clock.now())
            return f"{delivery}: resent."
        act_on_rows(self, request, queryset, resend, roles=WEBHOOK_ROLES)


@admin.register(WebhookEvent)
class WebhookEventAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["created_at", "type", "id", "book"]
    list_filter = ["type"]
    # The event's id (as a delivery's headers name it) or anything its object holds: an invoice number, a customer's
    # external id.
    search_fields = ["id", "data_json"]
    date_hierarchy = "created_at"
    list_select_related = ["book__organization"]
