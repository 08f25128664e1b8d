"""Matters (legal cases), the routing rules that file usage under them, and each event's attribution.

The usage ledger (`customers.UsageEvent`) is append-only, so attribution lives here: one
`MatterAttribution` row per event that was ever attributed. The row is the event's attribution
history: it is never deleted while the event exists, only re-pointed.

| row                              | meaning                                                   |
|----------------------------------|-----------------------------------------------------------|
| none                             | never attributed: Unassigned, and apply-rules may sweep it |
| matter set, source tag/rule/manual | attributed to that matter                                |
| matter null, source manual       | manually unassigned: apply-rules never sweeps it back      |
| matter null, source null         | its matter was deleted: Unassigned, not swept back either  |
"""
from django.conf import settings
from django.db import models
from django.db.models import Q

from core.models import OrgOwned


class MatterStatus(models.TextChoices):
    OPEN = "open"
    CLOSED = "closed"  # a label only (spec §3): attribution and routing ignore it


class AttributionSource(models.TextChoices):
    TAG = "tag"  # metadata.matterId named the matter's matterNumber at record time
    RULE = "rule"  # a routing rule matched, at record time or by apply-rules
    MANUAL = "manual"  # POST /v1/matters/assign; never overwritten by tag or rules


class Matter(OrgOwned):
    matter_number = models.CharField(max_length=255)
    name = models.CharField(max_length=255)
    client_name = models.CharField(max_length=255)
    status = models.CharField(max_length=8, choices=MatterStatus.choices, default=MatterStatus.OPEN)
    # A member of the organization (checked by the service); cleared if the user is deleted.
    responsible_user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                                         blank=True, related_name="+")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["book", "matter_number"], name="matter_number_uniq")]
        indexes = [models.Index(fields=["book", "-created_at"], name="matter_book_created")]

    def __str__(self):
        return f"{self.matter_number} {self.name}"


class MatterRule(OrgOwned):
    """Files an event under `matter` when every matcher it sets matches (see `matters/routing.py`)."""

    matter = models.ForeignKey(Matter, on_delete=models.CASCADE, related_name="rules")
    priority = models.IntegerField(default=100)  # lowest first; the older rule first on ties
    agent_code = models.CharField(max_length=255, null=True, blank=True)
    customer_external_id = models.CharField(max_length=255, null=True, blank=True)
    signal_pattern = models.CharField(max_length=255, null=True, blank=True,
                                      help_text="Case-insensitive substring of the signal name.")

    class Meta:
        ordering = ["priority", "created_at", "id"]  # evaluation order
        constraints = [
            models.CheckConstraint(
                condition=Q(agent_code__isnull=False) | Q(customer_external_id__isnull=False)
                | Q(signal_pattern__isnull=False),
                name="matter_rule_has_matcher",
                violation_error_message="Set at least one matcher: agent code, customer external id or signal "
                                        "pattern."),
        ]
        indexes = [models.Index(fields=["book", "priority", "created_at"], name="matter_rule_book_order")]

    def __str__(self):
        return f"rule {self.priority} -> {self.matter_id}"


class MatterAttribution(OrgOwned):
    """The matter of one usage event, and how it got there (see the module docstring)."""

    # No database foreign key: the ledger is partitioned by month, and PostgreSQL references a partitioned
    # table only through a unique key holding its partition key (id, usage_date). The one-to-one index
    # still makes an event's attribution unique; deleting events goes through Django's CASCADE, and an
    # archived month leaves its events' rows here (docs/decisions/ledger-partitions.md).
    event = models.OneToOneField("customers.UsageEvent", on_delete=models.CASCADE,
                                 related_name="matter_attribution", db_constraint=False)
    # RESTRICT: a matter is deleted only through matter_delete, which first returns its events.
    matter = models.ForeignKey(Matter, on_delete=models.RESTRICT, null=True, blank=True,
                               related_name="attributions")
    source = models.CharField(max_length=8, choices=AttributionSource.choices, null=True, blank=True)
    assigned_by = models.CharField(max_length=64, blank=True, help_text="Who made a manual decision.")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(matter__isnull=False, source__isnull=False)
                | Q(matter__isnull=True, source__isnull=True)
                | Q(matter__isnull=True, source=AttributionSource.MANUAL),
                name="matter_attribution_source_fits"),
        ]
        indexes = [models.Index(fields=["book", "matter"], name="matter_attribution_book_matter")]

    def __str__(self):
        return f"{self.event_id} -> {self.matter_id or 'Unassigned'} ({self.source or 'released'})"
