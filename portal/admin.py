"""Operator console for portal sessions: read-only (links are minted through the API, which shows the token
once), with a revoke action that calls the same service as DELETE /v1/portal-sessions/{id}."""
from django.contrib import admin, messages

from config.accounts.admin_scoping import BookScopedAdmin
from config.core import clock
from portal.models import PortalSession
from portal.services import portal_session_revoke


@admin.action(description="Revoke selected portal sessions")
def revoke_sessions(modeladmin, request, queryset):
    now = clock.now()
    for session in queryset.filter(revoked_at__isnull=True):
        portal_session_revoke(book=session.book, session_id=session.pk, now=now)
    modeladmin.message_user(request, "Selected portal sessions are revoked.", messages.SUCCESS)


@admin.register(PortalSession)
class PortalSessionAdmin(BookScopedAdmin):
    list_display = ["id", "customer", "book", "created_at", "expires_at", "used_at", "revoked_at"]
    list_filter = ["book__environment", ("used_at", admin.EmptyFieldListFilter),
                   ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["customer__name", "customer__external_id", "customer__email", "book__organization__name"]
    date_hierarchy = "created_at"
    list_select_related = ("book__organization", "customer")
    actions = [revoke_sessions]
    fields = ["id", "book", "customer", "features", "return_url", "created_at", "expires_at", "used_at", "revoked_at",
              "created_by"]
    readonly_fields = fields

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
