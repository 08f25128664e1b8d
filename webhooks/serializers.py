from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core import clock
from core.errors import ApiError
from core.fields import Flag, Text, refuse_unknown_fields
from webhooks.delivery import message_id
from webhooks.events import SUBSCRIBABLE_TYPES
from webhooks.models import DeliveryStatus, EventType


@extend_schema_field(OpenApiTypes.DATETIME)
class WebhookInstantIn(serializers.Field):
    """An ISO 8601 date or timestamp as an aware UTC instant (no offset means UTC)."""

    def to_internal_value(self, data):
        try:
            return clock.parse_instant(data, field=self.field_name)
        except (ApiError, TypeError, ValueError):
            raise serializers.ValidationError("Not a valid ISO 8601 date or timestamp.")


EVENT_TYPES_HELP = "Event types to receive; empty (the default) means every type. docs/webhooks.md lists them."


class WebhookEndpointCreateIn(serializers.Serializer):
    url = Text(max_length=2000, help_text="https (http allowed in test books); public hosts only")
    eventTypes = serializers.ListField(source="event_types", child=serializers.ChoiceField(choices=SUBSCRIBABLE_TYPES),
                                       required=False, default=list, max_length=len(SUBSCRIBABLE_TYPES) * 2,
                                       help_text=EVENT_TYPES_HELP)
    description = Text(max_length=500, required=False, allow_blank=True, default="")
    enabled = Flag(required=False, default=True)

    def validate(self, attrs):
        refuse_unknown_fields(self)
        return attrs


class WebhookEndpointUpdateIn(serializers.Serializer):
    url = Text(max_length=2000)
    eventTypes = serializers.ListField(source="event_types", child=serializers.ChoiceField(choices=SUBSCRIBABLE_TYPES),
                                       max_length=len(SUBSCRIBABLE_TYPES) * 2, help_text=EVENT_TYPES_HELP)
    description = Text(max_length=500, allow_blank=True)
    enabled = Flag(help_text="true enables a disabled endpoint again (healthy); replay what it missed")

    def validate(self, attrs):
        refuse_unknown_fields(self, message=f"Cannot be changed; only {', '.join(self.fields)} can be sent.")
        return attrs


class WebhookEndpointOut(serializers.Serializer):
    id = serializers.UUIDField()
    url = serializers.CharField()
    description = serializers.CharField()
    eventTypes = serializers.ListField(source="event_types", child=serializers.CharField(),
                                       help_text="empty: every type")
    enabled = serializers.BooleanField()
    health = serializers.SerializerMethodField(help_text="healthy, failing (attempts failing since failingSince) or "
                                                         "disabled")
    failingSince = serializers.DateTimeField(source="failing_since", allow_null=True)
    lastSuccessAt = serializers.DateTimeField(source="last_success_at", allow_null=True)
    lastFailureAt = serializers.DateTimeField(source="last_failure_at", allow_null=True)
    disabledAt = serializers.DateTimeField(source="disabled_at", allow_null=True)
    disabledReason = serializers.CharField(source="disabled_reason")
    previousSecretExpiresAt = serializers.DateTimeField(
        source="previous_secret_expires_at", allow_null=True,
        help_text="after a rotation: until then deliveries are signed with the previous secret too")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")

    def get_health(self, endpoint) -> str:
        if not endpoint.enabled:
            return "disabled"
        return "failing" if endpoint.failing_since else "healthy"


class WebhookEndpointWithSecretOut(WebhookEndpointOut):
    secret = serializers.CharField(help_text="whsec_...: shown only in this answer; verify deliveries with it")


class WebhookEndpointDeletedOut(serializers.Serializer):
    deleted = serializers.BooleanField()
    id = serializers.UUIDField()


class WebhookAttemptOut(serializers.Serializer):
    number = serializers.IntegerField(help_text="1 for the first attempt")
    attemptedAt = serializers.DateTimeField(source="created_at")
    succeeded = serializers.BooleanField()
    responseStatus = serializers.IntegerField(source="response_status", allow_null=True,
                                              help_text="null when no answer was read")
    responseBody = serializers.CharField(source="response_body", help_text="the answer's first 1024 bytes")
    latencyMs = serializers.IntegerField(source="latency_ms", allow_null=True)
    error = serializers.CharField(help_text="why it is not delivered: the status, a refused target, a timeout...")


class WebhookDeliveryOut(serializers.Serializer):
    id = serializers.UUIDField()
    eventId = serializers.SerializerMethodField(help_text="the envelope's id and the webhook-id header")
    eventType = serializers.ChoiceField(source="event.type", choices=EventType.choices)
    eventCreatedAt = serializers.DateTimeField(source="event.created_at")
    status = serializers.ChoiceField(choices=DeliveryStatus.choices)
    attempts = serializers.IntegerField(help_text="attempts made so far")
    nextAttemptAt = serializers.DateTimeField(source="next_attempt_at", allow_null=True,
                                              help_text="pending: when the next attempt is due")
    deliveredAt = serializers.DateTimeField(source="delivered_at", allow_null=True)
    attemptLog = serializers.SerializerMethodField(help_text="every attempt, newest first")
    createdAt = serializers.DateTimeField(source="created_at")

    def get_eventId(self, delivery) -> str:
        return message_id(delivery.event)

    @extend_schema_field(WebhookAttemptOut(many=True))
    def get_attemptLog(self, delivery) -> list:
        return WebhookAttemptOut(delivery.attempt_log.all(), many=True).data


class WebhookDeliveryListOut(serializers.Serializer):
    data = WebhookDeliveryOut(many=True)
    hasMore = serializers.BooleanField()


class WebhookNoFieldsIn(serializers.Serializer):
    """The body of an action that takes no fields: absent or `{}` (anything else is a 400 naming it)."""

    def validate(self, attrs):
        unknown = list(self.initial_data)
        if unknown:
            raise serializers.ValidationError({key: "Unknown field: this action takes no fields." for key in unknown})
        return attrs


class WebhookReplayIn(serializers.Serializer):
    since = WebhookInstantIn(help_text="ISO 8601; every event at or after it that the endpoint receives")


class WebhookReplayOut(serializers.Serializer):
    replayed = serializers.IntegerField(help_text="events queued for delivery, oldest first")
