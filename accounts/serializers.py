from rest_framework import serializers

from core.fields import UuidIn


class OrganizationRefOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()


class VerifyOut(serializers.Serializer):
    organization = OrganizationRefOut()
    verified = serializers.BooleanField()
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class KeyInfoOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    type = serializers.CharField(source="key_type")
    environment = serializers.CharField()
    livemode = serializers.SerializerMethodField()
    scope = serializers.CharField()
    role = serializers.CharField()
    prefix = serializers.CharField()
    organization = OrganizationRefOut()
    userEmail = serializers.EmailField(source="membership.user.email")
    createdAt = serializers.DateTimeField(source="created_at")
    lastUsedAt = serializers.DateTimeField(source="last_used_at", allow_null=True)

    def get_livemode(self, key) -> bool:
        return key.environment == "live"


class MembershipOut(serializers.Serializer):
    organizationId = serializers.UUIDField(source="organization_id")
    organizationName = serializers.CharField(source="organization.name")
    role = serializers.CharField()


class UserMeOut(serializers.Serializer):
    id = serializers.UUIDField()
    email = serializers.EmailField()
    firstName = serializers.CharField(source="first_name")
    lastName = serializers.CharField(source="last_name")
    memberships = MembershipOut(many=True, source="memberships.all")


class InvitationCreateIn(serializers.Serializer):
    organizationId = UuidIn(source="organization_id")
    email = serializers.EmailField(max_length=254)  # Invitation.email's column
    role = serializers.ChoiceField(choices=["owner", "admin", "finance", "legal", "member"])


class InvitationOut(serializers.Serializer):
    id = serializers.UUIDField()
    organizationId = serializers.UUIDField(source="organization_id")
    email = serializers.EmailField()
    role = serializers.CharField()
    expiresAt = serializers.DateTimeField(source="expires_at")
    acceptedAt = serializers.DateTimeField(source="accepted_at", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")


class InvitationAcceptedOut(serializers.Serializer):
    accepted = serializers.BooleanField()
    organizationId = serializers.UUIDField(source="organization_id")
    role = serializers.CharField()
