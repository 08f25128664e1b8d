"""Portal sessions: one-time links that open a customer's hosted billing page (spec §2-4, contract: Hosted pages).

Only the SHA-256 digest of a link's token is stored; the raw token exists in the create response alone.
"""
from datetime import datetime

from django.db import models

from core.exact_json import ExactJSONField
from core.models import OrgOwned


class PortalFeature(models.TextChoices):
    """What the operator asked the portal to show; informational (spec §4: all four are shown regardless)."""

    INVOICES = "invoices"
    SUBSCRIPTIONS = "subscriptions"
    USAGE = "usage"
    PROFILE = "profile"


class PortalSession(OrgOwned):
    customer = models.ForeignKey("customers.Customer", on_delete=models.CASCADE, related_name="portal_sessions")
    token_digest = models.CharField(max_length=64)
    return_url = models.CharField(max_length=2048, blank=True)
    features = ExactJSONField(default=list)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)  # the link was opened (consumed)
    revoked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.CharField(max_length=255, blank=True, help_text="api-key:<id>")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["token_digest"], name="portal_session_token_uniq")]
        indexes = [
            models.Index(fields=["book", "-created_at"], name="portal_session_book_created"),
            models.Index(fields=["book", "customer", "-created_at"], name="portal_session_book_customer"),
        ]

    def __str__(self):
        return f"portal session {self.pk} for {self.customer_id}"

    def is_expired(self, now: datetime) -> bool:
        """No longer usable: past its hour, or revoked."""
        return self.revoked_at is not None or now >= self.expires_at
