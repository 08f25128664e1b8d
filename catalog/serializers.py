from rest_framework import serializers

from config.core.serialization import DecimalText


class ServiceOut(serializers.Serializer):
    """A catalog entry. LLM rates are USD per single token (`costUnit: "token"`); a non-LLM entry's
    `inputCost` is its USD price per `costUnit` and `outputCost` is null. An LLM entry whose provider publishes
    no cache price bills cached tokens at the input rate: `cacheReadCost`/`cacheWriteCost` are the rates that
    apply, and `cacheReadCostBasis`/`cacheWriteCostBasis` say `published` or `inputCost`."""

    id = serializers.UUIDField()
    externalId = serializers.CharField(source="external_id")
    canonicalName = serializers.CharField(source="canonical_name")
    displayName = serializers.CharField(source="display_name")
    provider = serializers.CharField()
    serviceType = serializers.CharField(source="service_type")
    inputCost = DecimalText(source="input_cost", allow_null=True)
    outputCost = DecimalText(source="output_cost", allow_null=True)
    cacheReadCost = DecimalText(source="cache_read_rate", allow_null=True,
                                help_text="USD per cache-read token that applies (the input rate when no cache "
                                          "price is published); null for non-LLM entries.")
    cacheWriteCost = DecimalText(source="cache_write_rate", allow_null=True,
                                 help_text="USD per cache-write token that applies (the input rate when no cache "
                                           "price is published); null for non-LLM entries.")
    cacheReadCostBasis = serializers.ChoiceField(
        source="cache_read_basis", choices=["published", "inputCost"], allow_null=True,
        help_text="`published`: the provider's cache-read price; `inputCost`: none is published, cache reads are "
                  "billed at the input rate (as providers bill them). Null for non-LLM entries.")
    cacheWriteCostBasis = serializers.ChoiceField(
        source="cache_write_basis", choices=["published", "inputCost"], allow_null=True,
        help_text="As cacheReadCostBasis, for cache writes.")
    costUnit = serializers.CharField(
        source="cost_unit",
        help_text="Unit of the rates: `token` for LLM entries (USD per single token; cache tokens without a "
                  "published cache price at the input rate), else the unit a non-LLM price is per "
                  "(request, minute, character, image, page, ...).")
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
