"""Request and response shapes of /v1/portal-sessions (spec §2 "Portal session", §4)."""
from django.core.validators import URLValidator
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.fields import QueryFlag, Text, TextOut, UuidIn
from portal.models import PortalFeature
from portal.services import portal_url

RETURN_URL_MAX = 2048


class PortalSessionCreateIn(serializers.Serializer):
    customerId = Text(source="customer_id", max_length=255, required=False, allow_null=True)
    customerExternalId = Text(source="customer_external_id", max_length=255, required=False,
                              allow_null=True)
    returnUrl = Text(source="return_url", max_length=RETURN_URL_MAX, required=False, allow_null=True,
                     allow_blank=True, validators=[URLValidator(schemes=["http", "https"],
                                                                message="Must be an http or https URL.")])
    features = serializers.ListField(child=serializers.ChoiceField(choices=PortalFeature.values),
                                     allow_empty=False, required=False, default=list(PortalFeature.values))

    def validate_features(self, value):
        return list(dict.fromkeys(value))  # stored once each, in the order sent

    def validate(self, data):
        given = [field for field in ("customer_id", "customer_external_id") if data.get(field) is not None]
        if not given:
            raise serializers.ValidationError("Send customerId or customerExternalId.")
        if len(given) == 2:
            raise serializers.ValidationError("Send either customerId or customerExternalId, not both.")
        data["return_url"] = data.get("return_url") or ""
        return data


class PortalSessionQueryIn(serializers.Serializer):
    customerId = UuidIn(source="customer_id", required=False)
    includeExpired = QueryFlag(source="include_expired", required=False, default=False,
                                              help_text="true also lists used, expired and revoked sessions")


class PortalSessionFieldsOut(serializers.Serializer):
    id = serializers.UUIDField()
    object = serializers.SerializerMethodField()
    customerId = serializers.UUIDField(source="customer_id")
    customerName = serializers.CharField(source="customer.name")
    customerEmail = TextOut(source="customer.email", allow_null=True)
    expiresAt = serializers.DateTimeField(source="expires_at")
    createdAt = serializers.DateTimeField(source="created_at")

    def get_object(self, session) -> str:
        return "portal_session"


class PortalSessionCreateOut(PortalSessionFieldsOut):
    """The only answer that carries the link: its token is stored as a digest and never shown again."""

    url = serializers.SerializerMethodField()
    token = serializers.SerializerMethodField()

    def get_url(self, session) -> str:
        return portal_url(self.context["token"])

    def get_token(self, session) -> str:
        return self.context["token"]


@extend_schema_field({"type": "string", "format": "date-time", "description": "present once used"})
class PresentOnceSet(serializers.DateTimeField):
    """A timestamp key that the row carries only once it is set (spec §2: get adds `usedAt` once used)."""


class PortalSessionOut(PortalSessionFieldsOut):
    isExpired = serializers.SerializerMethodField()
    isUsed = serializers.SerializerMethodField()
    features = serializers.ListField(child=serializers.CharField())
    returnUrl = TextOut(source="return_url", allow_null=True)

    def get_isExpired(self, session) -> bool:
        """Past its hour, or revoked: the link can no longer be opened nor its portal used."""
        return session.is_expired(self.context["now"])

    def get_isUsed(self, session) -> bool:
        return session.used_at is not None


class PortalSessionDetailOut(PortalSessionOut):
    usedAt = PresentOnceSet(source="used_at", required=False)
    revokedAt = PresentOnceSet(source="revoked_at", required=False)

    def to_representation(self, session):
        body = super().to_representation(session)
        for key in ("usedAt", "revokedAt"):
            if body.get(key) is None:
                body.pop(key, None)
        return body
