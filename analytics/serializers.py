"""Query parameters and response shapes of the analytics reads (docs/decisions/analytics.md)."""
from operator import attrgetter

from rest_framework import serializers

from analytics.selectors.mrr import ALL, CANONICAL, COMMITTED, RUN_RATE
from analytics.selectors.usage import BREAKDOWN_BY, GROUP_BY
from billing.serializers.common import InstantIn
from core.fields import DecimalNumber, QueryFlag, UuidIn


def one_of(values) -> dict:
    """A ChoiceField error that lists the accepted values."""
    return {"invalid_choice": f"\"{{input}}\" is not accepted; use one of: {', '.join(values)}."}


# --------------------------------------------------------------------------- query parameters

class AnalyticsWindowIn(serializers.Serializer):
    """ISO 8601 dates (whole UTC days, inclusive) or timestamps (instants; endDate exclusive, the last second of a
    day meaning the following midnight, as an invoice's billingPeriodEnd: the window an invoice bills reads the same
    written either place)."""

    startDate = InstantIn(source="start", required=False)
    endDate = InstantIn(source="end", period_end=True, required=False)


class UsageAnalyticsQueryIn(AnalyticsWindowIn):
    customerId = UuidIn(required=False)
    agentId = UuidIn(required=False)
    signalId = UuidIn(required=False)
    groupBy = serializers.ChoiceField(source="group_by", choices=list(GROUP_BY), default="daily",
                                      error_messages=one_of(GROUP_BY))
    breakdownBy = serializers.ChoiceField(source="breakdown_by", choices=list(BREAKDOWN_BY), required=False,
                                          error_messages=one_of(BREAKDOWN_BY))


class CostAnalyticsQueryIn(AnalyticsWindowIn):
    startDate = InstantIn(source="start")
    endDate = InstantIn(source="end", period_end=True)
    customerId = UuidIn(required=False)
    subscriptionId = UuidIn(required=False)
    agentId = UuidIn(required=False)
    signalId = UuidIn(required=False)
    includePriorWindow = QueryFlag(source="include_prior_window", default=False)


MRR_VARIANTS = (CANONICAL, RUN_RATE, COMMITTED, ALL)


class MrrQueryIn(serializers.Serializer):
    variant = serializers.ChoiceField(choices=MRR_VARIANTS, default="canonical", error_messages=one_of(MRR_VARIANTS))
    customerId = UuidIn(source="customer_id", required=False)
    subscriptionId = UuidIn(source="subscription_id", required=False)


class RowOut(serializers.Serializer):
    """A flat row of a long analytics list (a timeline runs to thousands of rows), rendered straight from
    its declared fields without DRF's per-field bookkeeping; the fields still document the shape."""

    def to_representation(self, instance):
        readers = self.__dict__.get("_readers")
        if readers is None:
            readers = self._readers = [(name, attrgetter(field.source), field) for name, field in self.fields.items()]
        row = {}
        for name, read, field in readers:
            value = read(instance)
            row[name] = None if value is None else field.to_representation(value)
        return row


# --------------------------------------------------------------------------- usage

class AnalyticsWindowOut(serializers.Serializer):
    start = serializers.DateTimeField()
    end = serializers.DateTimeField(help_text="exclusive")


class UsageDateRangeOut(serializers.Serializer):
    start = serializers.DateTimeField(source="window.start")
    end = serializers.DateTimeField(source="window.end", help_text="exclusive")
    groupBy = serializers.CharField(source="group_by")


class UsageSummaryOut(serializers.Serializer):
    totalEvents = serializers.IntegerField(source="event_count")
    totalQuantity = DecimalNumber(source="total_quantity")
    totalCost = DecimalNumber(source="total_cost")
    avgCostPerEvent = DecimalNumber(source="avg_cost_per_event")


class UsagePointOut(RowOut):
    date = serializers.DateField(source="bucket", help_text="first day of the bucket (UTC)")
    eventCount = serializers.IntegerField(source="event_count")
    totalQuantity = DecimalNumber(source="total_quantity")
    totalCost = DecimalNumber(source="total_cost")


class DimensionTotalOut(RowOut):
    dimensionId = serializers.UUIDField(source="dimension_id", allow_null=True)
    dimensionLabel = serializers.CharField(source="dimension_label", allow_null=True)
    totalEvents = serializers.IntegerField(source="event_count")
    totalQuantity = DecimalNumber(source="total_quantity")
    totalCost = DecimalNumber(source="total_cost")


class DimensionPointOut(RowOut):
    date = serializers.DateField(source="bucket")
    dimensionId = serializers.UUIDField(source="dimension_id", allow_null=True)
    dimensionLabel = serializers.CharField(source="dimension_label", allow_null=True)
    eventCount = serializers.IntegerField(source="event_count")
    totalQuantity = DecimalNumber(source="total_quantity")
    totalCost = DecimalNumber(source="total_cost")


class DimensionBreakdownOut(serializers.Serializer):
    dimensionType = serializers.CharField(source="dimension_type")
    summary = DimensionTotalOut(many=True)
    timeline = DimensionPointOut(many=True)


class UsageMetadataOut(serializers.Serializer):
    signals = serializers.DictField(child=serializers.CharField(), help_text="signal id -> name")
    customers = serializers.DictField(child=serializers.CharField(), help_text="customer id -> name")
    agents = serializers.DictField(child=serializers.CharField(), help_text="agent id -> name")


class UsageAnalyticsOut(serializers.Serializer):
    dateRange = UsageDateRangeOut(source="*")
    filters = serializers.DictField(child=serializers.CharField(), help_text="the filters passed, and only those")
    summary = UsageSummaryOut()
    timeSeriesData = UsagePointOut(source="time_series", many=True)
    metadata = UsageMetadataOut()
    dimensionBreakdown = DimensionBreakdownOut(source="dimension_breakdown", required=False,
                                               help_text="only with breakdownBy")

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if instance.dimension_breakdown is None:
            del data["dimensionBreakdown"]
        return data


# --------------------------------------------------------------------------- cost

class AgentCostOut(RowOut):
    agentId = serializers.UUIDField(source="key", allow_null=True, help_text="null: a deleted agent")
    cost = DecimalNumber()
    eventCount = serializers.IntegerField(source="event_count")


class CustomerCostOut(RowOut):
    customerId = serializers.UUIDField(source="key")
    cost = DecimalNumber()
    eventCount = serializers.IntegerField(source="event_count")


class SignalCostOut(RowOut):
    signalId = serializers.UUIDField(source="key", allow_null=True, help_text="null: orphan events")
    cost = DecimalNumber()
    eventCount = serializers.IntegerField(source="event_count")


class DayCostOut(RowOut):
    date = serializers.DateTimeField(source="key", help_text="UTC midnight")
    cost = DecimalNumber()
    eventCount = serializers.IntegerField(source="event_count")


class PlanCostOut(RowOut):
    planId = serializers.UUIDField(source="key", allow_null=True, help_text="null: events no subscription covers")
    cost = DecimalNumber()
    eventCount = serializers.IntegerField(source="event_count")


class ModelCostOut(RowOut):
    model = serializers.CharField(source="key", allow_null=True, help_text="null: non-LLM service or unresolved")
    cost = DecimalNumber()
    eventCount = serializers.IntegerField(source="event_count")


class CostFiguresOut(serializers.Serializer):
    window = AnalyticsWindowOut()
    cost = DecimalNumber()
    eventCount = serializers.IntegerField(source="event_count")
    eventCountWithNullCost = serializers.IntegerField(source="event_count_with_null_cost")
    byAgent = AgentCostOut(source="by_agent", many=True)
    byCustomer = CustomerCostOut(source="by_customer", many=True)
    bySignal = SignalCostOut(source="by_signal", many=True)
    byDay = DayCostOut(source="by_day", many=True)
    byPlan = PlanCostOut(source="by_plan", many=True)
    byModel = ModelCostOut(source="by_model", many=True)


class CostAnalyticsOut(CostFiguresOut):
    prior = CostFiguresOut(required=False, help_text="only with includePriorWindow=true")

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if instance.prior is None:
            del data["prior"]
        return data


# --------------------------------------------------------------------------- mrr

class MrrRowOut(RowOut):
    subscriptionId = serializers.UUIDField(source="subscription.id")
    customerId = serializers.UUIDField(source="subscription.customer_id")
    agentId = serializers.UUIDField(source="subscription.agent_id")
    planId = serializers.UUIDField(source="subscription.plan_id")
    recurring = DecimalNumber()
    seatBased = DecimalNumber(source="seat_based")
    usage = DecimalNumber()
    total = DecimalNumber()


class MrrOut(serializers.Serializer):
    """runRate and committed."""

    variant = serializers.CharField()
    mrr = DecimalNumber()
    breakdown = MrrRowOut(many=True)


class CanonicalMrrFiguresOut(serializers.Serializer):
    mrr = DecimalNumber(help_text="non-draft invoices dated in the last complete UTC calendar month")
    arr = DecimalNumber(help_text="12 x mrr")


class CanonicalMrrOut(CanonicalMrrFiguresOut):
    variant = serializers.CharField()


class MrrFiguresOut(serializers.Serializer):
    mrr = DecimalNumber()
    breakdown = MrrRowOut(many=True)


class MrrAllOut(serializers.Serializer):
    variant = serializers.CharField()
    canonical = CanonicalMrrFiguresOut()
    runRate = MrrFiguresOut(source="run_rate")
    committed = MrrFiguresOut()


# --------------------------------------------------------------------------- revenue

class RevenueBreakdownOut(serializers.Serializer):
    usage = DecimalNumber(help_text="Agent-Earned")
    recurring = DecimalNumber()
    seat = DecimalNumber()
    onetime = DecimalNumber()


class RevenueFiguresOut(serializers.Serializer):
    revenue = DecimalNumber(help_text="Revenue: Agent-Earned plus prorated recurring, seat and one-time fees")
    cost = DecimalNumber()
    margin = DecimalNumber(help_text="revenue - cost")
    marginPercent = DecimalNumber(source="margin_percent", allow_null=True, help_text="null when revenue is 0")
    agentEarned = DecimalNumber(source="agent_earned", help_text="events x strategy rates; no fees, no proration")
    agentEarnedMargin = DecimalNumber(source="agent_earned_margin")
    agentEarnedMarginPercent = DecimalNumber(source="agent_earned_margin_percent", allow_null=True)
    breakdown = RevenueBreakdownOut(source="*")
    eventCount = serializers.IntegerField(source="event_count")
    eventCountWithNullCost = serializers.IntegerField(source="unpriced_count")
    billed = DecimalNumber(help_text="invoices dated in the window, issued or overdue")
    billedMargin = DecimalNumber(source="billed_margin")
    billedMarginPercent = DecimalNumber(source="billed_margin_percent", allow_null=True)
    collected = DecimalNumber(help_text="collected on invoices dated in the window and paid")
    collectedMargin = DecimalNumber(source="collected_margin")
    collectedMarginPercent = DecimalNumber(source="collected_margin_percent", allow_null=True)


class SubscriptionRevenueOut(RevenueFiguresOut):
    subscriptionId = serializers.UUIDField(source="subscription.id")
    subscriptionName = serializers.CharField(source="subscription.name")
    customerId = serializers.UUIDField(source="subscription.customer_id")
    agentId = serializers.UUIDField(source="subscription.agent_id")
    planId = serializers.UUIDField(source="subscription.plan_id")


class StrategyRevenueOut(RowOut):
    strategyId = serializers.UUIDField(source="strategy.id")
    strategyName = serializers.CharField(source="strategy.name")
    planId = serializers.UUIDField(source="strategy.plan_id")
    agentId = serializers.UUIDField(source="strategy.agent_id")
    signalId = serializers.UUIDField(source="strategy.signal_id", allow_null=True)
    chargeType = serializers.CharField(source="strategy.charge_type")
    pricingModel = serializers.CharField(source="strategy.pricing_model", allow_null=True)
    quantity = DecimalNumber(allow_null=True, help_text="usage units (usage) or billed seats (seat_based)")
    agentEarned = DecimalNumber(source="agent_earned")
    revenue = DecimalNumber()


class RevenueMetricsOut(RevenueFiguresOut):
    window = AnalyticsWindowOut()
    currency = serializers.SerializerMethodField()
    bySubscription = SubscriptionRevenueOut(source="subscriptions", many=True)
    byStrategy = StrategyRevenueOut(source="strategies", many=True)

    def get_currency(self, metrics) -> str:
        return "USD"
