from rest_framework import serializers

from core.fields import DayIn, DecimalNumber, DecimalText, Text, UuidIn
from matters.models import MatterStatus

INT32_MAX = 2**31 - 1


class MatterIn(serializers.Serializer):
    """POST (all of matterNumber, name, clientName required) and PATCH (partial: only sent fields)."""

    matterNumber = Text(source="matter_number", max_length=255)
    name = Text(max_length=255)
    clientName = Text(source="client_name", max_length=255)
    status = serializers.ChoiceField(choices=MatterStatus.choices, default=MatterStatus.OPEN)
    responsibleUserId = UuidIn(source="responsible_user_id", allow_null=True, required=False)


class MatterOut(serializers.Serializer):
    id = serializers.UUIDField()
    matterNumber = serializers.CharField(source="matter_number")
    name = serializers.CharField()
    clientName = serializers.CharField(source="client_name")
    status = serializers.CharField()
    responsibleUserId = serializers.UUIDField(source="responsible_user_id", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class MatterWithCostOut(MatterOut):
    """A list row: the matter plus its cost over every attributed event."""

    actualCost = DecimalNumber(source="actual_cost")
    eventCount = serializers.IntegerField(source="event_count")
    eventsMissingCost = serializers.IntegerField(source="events_missing_cost")


class MatterEventRowOut(serializers.Serializer):
    eventId = serializers.UUIDField(source="id")
    usageDate = serializers.DateTimeField(source="usage_date")
    agentName = serializers.SerializerMethodField()
    signalName = serializers.CharField(source="signal_name")
    quantity = DecimalText()
    usageCost = DecimalText(source="usage_cost", allow_null=True)  # null when unresolved
    source = serializers.SerializerMethodField()

    def get_agentName(self, event) -> str:
        # An event keeps its agent code when its agent is gone.
        return event.agent.name if event.agent is not None else event.agent_code

    def get_source(self, event) -> str | None:
        attribution = getattr(event, "matter_attribution", None)
        return attribution.source if attribution is not None else None


class MatterDetailOut(serializers.Serializer):
    """GET /v1/matters/{id}: the matter, its cost over every attributed event, the most recent events."""

    matter = MatterOut()
    actualCost = DecimalNumber(source="matter.actual_cost")
    eventCount = serializers.IntegerField(source="matter.event_count")
    eventsMissingCost = serializers.IntegerField(source="matter.events_missing_cost")
    events = MatterEventRowOut(many=True)
    eventsCap = serializers.IntegerField(source="events_cap")


class MatterDeletedOut(serializers.Serializer):
    deleted = serializers.BooleanField()
    eventsReturnedToUnassigned = serializers.IntegerField()
    routingRulesDeleted = serializers.IntegerField()


class UnassignedTotalsOut(serializers.Serializer):
    """Added to the page of Unassigned events: totals over every unassigned event, not just the page."""

    totalCost = DecimalNumber(source="actual_cost")
    eventsMissingCost = serializers.IntegerField(source="events_missing_cost")


class PageOut(serializers.Serializer):
    """Schema only: the `page_response` envelope."""

    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    totalPages = serializers.IntegerField()
    totalResults = serializers.IntegerField()


class MatterPageOut(PageOut):
    results = MatterWithCostOut(many=True)


class UnassignedPageOut(PageOut):
    results = MatterEventRowOut(many=True)
    totalCost = DecimalNumber(help_text="Over every unassigned event, not just the page.")
    eventsMissingCost = serializers.IntegerField(help_text="Over every unassigned event, not just the page.")


class MatterAssignIn(serializers.Serializer):
    eventId = UuidIn(source="event_id")
    matterId = UuidIn(source="matter_id", allow_null=True)  # required; null unassigns


class MatterAssignOut(serializers.Serializer):
    assigned = serializers.BooleanField()
    eventId = serializers.UUIDField(source="event_id")
    matterId = serializers.UUIDField(source="matter_id", allow_null=True)
    source = serializers.CharField()


class MatterRuleIn(serializers.Serializer):
    """POST (matterId required) and PATCH (partial: only sent fields; a matcher sent as null is cleared)."""

    matterId = UuidIn(source="matter_id")
    priority = serializers.IntegerField(min_value=-INT32_MAX, max_value=INT32_MAX, default=100)
    # Matchers compare exactly (signalPattern: case-insensitive substring), so whitespace is kept.
    agentCode = Text(source="agent_code", max_length=255, allow_null=True, required=False,
                     trim_whitespace=False)
    customerExternalId = Text(source="customer_external_id", max_length=255, allow_null=True,
                              required=False, trim_whitespace=False)
    signalPattern = Text(source="signal_pattern", max_length=255, allow_null=True, required=False,
                         trim_whitespace=False)


class MatterRuleOut(serializers.Serializer):
    id = serializers.UUIDField()
    matterId = serializers.UUIDField(source="matter_id")
    matterNumber = serializers.CharField(source="matter.matter_number")
    matterName = serializers.CharField(source="matter.name")
    priority = serializers.IntegerField()
    agentCode = serializers.CharField(source="agent_code", allow_null=True)
    customerExternalId = serializers.CharField(source="customer_external_id", allow_null=True)
    signalPattern = serializers.CharField(source="signal_pattern", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class MatterRulePageOut(PageOut):
    results = MatterRuleOut(many=True)


class MatterRuleDeletedOut(serializers.Serializer):
    deleted = serializers.BooleanField()


class MatterRulesAppliedOut(serializers.Serializer):
    assigned = serializers.IntegerField(help_text="Events this call assigned.")
    jobId = serializers.UUIDField(help_text="The sweep as a job (GET /v1/jobs/{id}): succeeded when this call went "
                                            "through every event, otherwise queued or running in the background.")


class MatterAuditQueryIn(serializers.Serializer):
    startDate = DayIn(source="start_date", required=False)
    endDate = DayIn(source="end_date", required=False)
    view = serializers.ChoiceField(choices=["summary"], default="summary")
    format = serializers.ChoiceField(choices=["json", "csv"], default="json")


class AuditRowOut(serializers.Serializer):
    matterId = serializers.UUIDField(source="matter_id", allow_null=True)
    matterNumber = serializers.CharField(source="matter_number", allow_null=True)
    name = serializers.CharField()
    clientName = serializers.CharField(source="client_name", allow_null=True)
    status = serializers.CharField(allow_null=True)
    eventCount = serializers.IntegerField(source="event_count")
    eventsMissingCost = serializers.IntegerField(source="events_missing_cost")
    cost = DecimalText()  # exact decimal string, as in the CSV


class AuditTotalsOut(serializers.Serializer):
    eventCount = serializers.IntegerField(source="event_count")
    eventsMissingCost = serializers.IntegerField(source="events_missing_cost")
    cost = DecimalText()


class MatterAuditSummaryOut(serializers.Serializer):
    view = serializers.SerializerMethodField()
    startDate = serializers.DateField(source="start_date")
    endDate = serializers.DateField(source="end_date")
    currency = serializers.SerializerMethodField()
    matters = AuditRowOut(many=True)
    unassigned = AuditRowOut()
    totals = AuditTotalsOut()

    def get_view(self, summary) -> str:
        return "summary"

    def get_currency(self, summary) -> str:
        return "USD"
