"""Operator console for portal sessions: read-only (links are minted through the API, which shows the token
once), with a revoke action that calls the same service as DELETE /v1/portal-sessions/{id}."""
from django.contrib import admin

from accounts.admin_actions import act_on_rows
from accounts.admin_display import presence_filter
from accounts.admin_scoping import BookScopedAdmin, ReadOnlyAdminMixin
from core import clock
from portal.models import PortalSession
from portal.services import portal_session_revoke


@admin.register(PortalSession)
class PortalSessionAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    list_display = ["id", "customer", "book", "created_at", "expires_at", "used_at", "revoked_at"]
    list_filter = [("used_at", presence_filter("link opened", "Opened", "Not opened")),
                   ("revoked_at", presence_filter("revoked", "Revoked", "Not revoked"))]
    search_fields = ["customer__name", "customer__external_id", "customer__email", "book__organization__name"]
    date_hierarchy = "created_at"
    list_select_related = ("book__organization", "customer")
    actions = ["revoke_sessions"]
    exclude = ["token_digest"]

    @admin.action(description="Revoke selected portal sessions")
    def revoke_sessions(self, request, queryset):
        now = clock.now()

        def revoke(session):
            portal_session_revoke(book=session.book, session_id=session.pk, now=now)
            return f"Portal session {session.pk} of {session.customer} revoked."
        act_on_rows(self, request, queryset.filter(revoked_at__isnull=True), revoke)
