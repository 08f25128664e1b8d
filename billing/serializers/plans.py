from decimal import Decimal

from rest_framework import serializers

from billing.serializers.common import AllOptional, RefusesFields
from core.fields import DecimalIn, Flag, JsonObjectIn, Text, UuidIn

LINKS_ONLY_THROUGH_LINK_ROUTES = ("Agent links change only through POST /v1/pricing-plans/{planId}/agents "
                                  "and DELETE /v1/pricing-plans/{planId}/agents/{agentId}.")


class PlanCreateIn(serializers.Serializer):
    name = Text(max_length=255)
    agentId = UuidIn(source="agent_id", required=False, allow_null=True)
    description = Text(max_length=255, required=False, allow_blank=True, default="")
    featuresList = JsonObjectIn(source="features_list", required=False, default=dict)
    isActive = Flag(source="is_active", required=False, default=True)


class PlanUpdateIn(RefusesFields, AllOptional, serializers.Serializer):
    refused = {"agentId": LINKS_ONLY_THROUGH_LINK_ROUTES, "agents": LINKS_ONLY_THROUGH_LINK_ROUTES}

    name = Text(max_length=255)
    description = Text(max_length=255, allow_blank=True)
    featuresList = JsonObjectIn(source="features_list")
    isActive = Flag(source="is_active")


class PlanAgentLinkIn(serializers.Serializer):
    agentId = UuidIn(source="agent_id")


class PlanCopyIn(serializers.Serializer):
    newName = Text(source="new_name", max_length=255, required=False)
    # Percent off every rate and tier rate of the copy (10 means the copy charges 90%).
    discount = DecimalIn(required=False, default=Decimal(0), min_value=Decimal(0), max_value=Decimal(100))


class PlanAgentOut(serializers.Serializer):
    id = serializers.UUIDField(source="agent.id")
    name = serializers.CharField(source="agent.name")
    agentCode = serializers.CharField(source="agent.agent_code")


class PlanOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    description = serializers.CharField()
    featuresList = serializers.JSONField(source="features_list")
    isActive = serializers.BooleanField(source="is_active")
    agents = PlanAgentOut(source="agent_links.all", many=True)
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")
