from decimal import Decimal

from rest_framework import serializers

from core.fields import DecimalText


class LongContextOut(serializers.Serializer):
    """One long-context tier of an LLM entry (rates in USD per token; null: the tier below's rate)."""

    threshold = serializers.IntegerField(
        help_text="prompt tokens above which (or from which, if inclusive) it applies")
    input = DecimalText(allow_null=True, default=None)
    output = DecimalText(allow_null=True, default=None)
    cacheRead = DecimalText(source="cache_read", allow_null=True, default=None)
    cacheWrite = DecimalText(source="cache_write", allow_null=True, default=None)
    cacheWrite1h = DecimalText(source="cache_write_1h", allow_null=True, default=None)

    def to_representation(self, tier):
        return super().to_representation({**tier, **_rates(tier)})


class ServiceTierOut(serializers.Serializer):
    """A service tier's own rates from the price data (USD per token; null: none published for that tier)."""

    input = DecimalText(allow_null=True, default=None)
    output = DecimalText(allow_null=True, default=None)
    cacheRead = DecimalText(source="cache_read", allow_null=True, default=None)
    cacheWrite = DecimalText(source="cache_write", allow_null=True, default=None)
    cacheWrite1h = DecimalText(source="cache_write_1h", allow_null=True, default=None)
    longContext = LongContextOut(source="long_context", many=True, default=list)

    def to_representation(self, tier):
        return super().to_representation({"long_context": [], **tier, **_rates(tier)})


class ServiceTiersOut(serializers.Serializer):
    batch = ServiceTierOut(allow_null=True, default=None)
    flex = ServiceTierOut(allow_null=True, default=None)
    priority = ServiceTierOut(allow_null=True, default=None)


class OffPeakWindowOut(serializers.Serializer):
    hours = serializers.ListField(child=serializers.CharField(), help_text='UTC "HH:MM-HH:MM" spans, end exclusive')
    weekdays = serializers.ListField(
        child=serializers.IntegerField(), allow_null=True,
        help_text="ISO weekdays (1 = Monday) on weekdayTimezone's calendar; null: every day")


class OffPeakOut(serializers.Serializer):
    """Off-peak prices of an LLM entry: while one of `windows` is open, these rates replace the ones that would
    apply (null: that rate is unchanged)."""

    windows = OffPeakWindowOut(many=True)
    weekdayTimezone = serializers.CharField(source="weekday_timezone", allow_null=True, default=None)
    input = DecimalText(allow_null=True, default=None)
    output = DecimalText(allow_null=True, default=None)
    cacheRead = DecimalText(source="cache_read", allow_null=True, default=None)
    cacheWrite = DecimalText(source="cache_write", allow_null=True, default=None)

    def to_representation(self, block):
        return super().to_representation({"weekday_timezone": None, **block, **_rates(block)})


RATE_KEYS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


def _rates(stored: dict) -> dict:
    """The rates of a stored tier or off-peak block as Decimals (stored as decimal strings; absent: None)."""
    return {key: None if stored.get(key) is None else Decimal(str(stored[key])) for key in RATE_KEYS}


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
    longContext = LongContextOut(
        source="long_context", many=True,
        help_text="Long-context tiers, ascending. A request whose prompt tokens (input + cache read + cache write) "
                  "are above a threshold pays that tier's rates for all of its tokens; a rate a tier leaves null is "
                  "the tier below's.")
    longContextInclusive = serializers.BooleanField(
        source="long_context_inclusive",
        help_text="true where the provider bills a tier from its threshold itself (a prompt of exactly the "
                  "threshold pays it: xAI); false: only above it.")
    offPeak = OffPeakOut(source="off_peak", allow_null=True,
                         help_text="Off-peak prices, applied by the event's usageDate; null: none.")
    cacheWrite1hCost = DecimalText(
        source="cache_write_1h_cost", allow_null=True,
        help_text="USD per 1-hour cache-write token from the price data; null: none published (Anthropic's models bill "
                  "2x the input rate, others a 5-minute write's rate).")
    serviceTiers = ServiceTiersOut(
        source="service_tiers_view",
        help_text="The batch, flex and priority tiers' rates from the price data (null: none; a batch request "
                  "without them costs the provider's published discount, 50% at OpenAI, Anthropic and Google).")
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
