from rest_framework import serializers

from config.core.serialization import DecimalText


class ServiceOut(serializers.Serializer):
    """A catalog entry. LLM rates are USD per single token (`costUnit: "token"`); a non-LLM entry's
    `inputCost` is its USD price per `costUnit` and `outputCost` is null."""

    id = serializers.UUIDField()
    externalId = serializers.CharField(source="external_id")
    canonicalName = serializers.CharField(source="canonical_name")
    displayName = serializers.CharField(source="display_name")
    provider = serializers.CharField()
    serviceType = serializers.CharField(source="service_type")
    inputCost = DecimalText(source="input_cost", allow_null=True)
    outputCost = DecimalText(source="output_cost", allow_null=True)
    cacheReadCost = DecimalText(source="cache_read_cost", allow_null=True)
    cacheWriteCost = DecimalText(source="cache_write_cost", allow_null=True)
    costUnit = serializers.CharField(source="cost_unit")
    contextWindow = serializers.IntegerField(source="context_window", allow_null=True)
    source = serializers.CharField()
    isApi = serializers.BooleanField(source="is_api")
    isActive = serializers.BooleanField(source="is_active")


class PaginationOut(serializers.Serializer):
    page = serializers.IntegerField()
    limit = serializers.IntegerField()
    total = serializers.IntegerField()
    totalPages = serializers.IntegerField()


class ServicePageOut(serializers.Serializer):
    data = ServiceOut(many=True)
    pagination = PaginationOut()
