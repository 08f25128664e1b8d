"""Analytics reads (spec §4 "Analytics", RevenueMetrics): usage, cost, MRR and revenue."""
from drf_spectacular.utils import OpenApiResponse, PolymorphicProxySerializer, extend_schema
from rest_framework.response import Response

from analytics.selectors.cost import cost_analytics
from analytics.selectors.mrr import ALL, CANONICAL, mrr_report
from analytics.selectors.revenue import customer_revenue, revenue_metrics, subscription_revenue
from analytics.selectors.usage import FILTERS, usage_analytics
from analytics.selectors.window import analytics_window
from analytics.serializers import (AnalyticsWindowIn, CanonicalMrrOut, CostAnalyticsOut, CostAnalyticsQueryIn,
                                   MrrAllOut, MrrOut, MrrQueryIn, RevenueMetricsOut, UsageAnalyticsOut,
                                   UsageAnalyticsQueryIn)
from accounts.api import OrgApiView
from core import clock
from core.openapi import ErrorOut
from core.serialization import parse

WINDOW_ERRORS = {404: ErrorOut, 422: ErrorOut}


def _window(query: dict):
    return analytics_window(start=query.get("start"), end=query.get("end"), now=clock.now())


class UsageAnalyticsApi(OrgApiView):
    """Events, quantity and cost over time, with an optional breakdown by customer, signal or agent."""

    @extend_schema(operation_id="analytics_usage", parameters=[UsageAnalyticsQueryIn],
                   responses={200: UsageAnalyticsOut, **WINDOW_ERRORS})
    def get(self, request):
        """Usage over time."""
        query = parse(UsageAnalyticsQueryIn, request.query_params)
        result = usage_analytics(book=self.book, window=_window(query), group_by=query["group_by"],
                                 breakdown_by=query.get("breakdown_by"),
                                 filters={name: query[name] for name in FILTERS if name in query})
        return Response(UsageAnalyticsOut(result).data)


class CostAnalyticsApi(OrgApiView):
    """What usage cost over a window, by agent, customer, signal, day, plan and model."""

    @extend_schema(operation_id="analytics_cost", parameters=[CostAnalyticsQueryIn],
                   responses={200: CostAnalyticsOut, **WINDOW_ERRORS})
    def get(self, request):
        """Cost of usage."""
        query = parse(CostAnalyticsQueryIn, request.query_params)
        filters = {name: query[name] for name in ("customerId", "subscriptionId", "agentId", "signalId")
                   if name in query}
        result = cost_analytics(book=self.book, window=_window(query), filters=filters,
                                include_prior_window=query["include_prior_window"])
        return Response(CostAnalyticsOut(result).data)


MRR_OUT = {CANONICAL: CanonicalMrrOut, ALL: MrrAllOut}


class MrrAnalyticsApi(OrgApiView):
    """Monthly recurring revenue: from invoices (canonical) or from the active subscriptions' pricing."""

    @extend_schema(operation_id="analytics_mrr", parameters=[MrrQueryIn], responses={
        200: PolymorphicProxySerializer(component_name="MrrResponse", resource_type_field_name=None,
                                        serializers=[CanonicalMrrOut, MrrOut, MrrAllOut]),
        404: ErrorOut, 422: OpenApiResponse(ErrorOut, description="A stored pricing strategy of an active "
                                                                  "subscription cannot be priced (the message "
                                                                  "names it).")})
    def get(self, request):
        """Monthly recurring revenue.

        `variant=canonical` (default) reads it from invoices; `runRate` and `committed` compute it from the active
        subscriptions' pricing (actual usage of the last 30 days, or the minimum commitments); `all` answers the three
        side by side. `customerId` or `subscriptionId` narrow it to one customer or subscription."""
        query = parse(MrrQueryIn, request.query_params)
        result = mrr_report(book=self.book, variant=query["variant"], now=clock.now(),
                            customer_id=query.get("customer_id"), subscription_id=query.get("subscription_id"))
        return Response(MRR_OUT.get(query["variant"], MrrOut)(result).data)


class RevenueAnalyticsApi(OrgApiView):
    """RevenueMetrics of the whole book (internal coding-agent usage left out)."""

    @extend_schema(operation_id="analytics_revenue", parameters=[AnalyticsWindowIn],
                   responses={200: RevenueMetricsOut, 422: ErrorOut})
    def get(self, request):
        """Revenue of the whole book.

        Revenue, cost and margins (agent-earned, billed and collected) of every customer but the internal coding-agent
        one, over `startDate`..`endDate` (dates are whole UTC days, both inclusive; default the last 30 days), with the
        split by subscription and by strategy. 422 when `endDate` is not after `startDate`."""
        window = _window(parse(AnalyticsWindowIn, request.query_params))
        return Response(RevenueMetricsOut(revenue_metrics(book=self.book, window=window)).data)


class CustomerRevenueApi(OrgApiView):
    """RevenueMetrics of one customer."""

    @extend_schema(operation_id="customer_revenue", parameters=[AnalyticsWindowIn],
                   responses={200: RevenueMetricsOut, 422: ErrorOut})
    def get(self, request, customer_id):
        """Revenue of one customer.

        Revenue, cost and margins (agent-earned, billed and collected) of the customer, over `startDate`..`endDate`
        (dates are whole UTC days, both inclusive; default the last 30 days), with the split by subscription and by
        strategy. 422 when `endDate` is not after `startDate`."""
        window = _window(parse(AnalyticsWindowIn, request.query_params))
        return Response(RevenueMetricsOut(customer_revenue(book=self.book, customer_id=customer_id,
                                                           window=window)).data)


class SubscriptionRevenueApi(OrgApiView):
    """RevenueMetrics of one subscription."""

    @extend_schema(operation_id="subscription_revenue", parameters=[AnalyticsWindowIn],
                   responses={200: RevenueMetricsOut, 422: ErrorOut})
    def get(self, request, subscription_id):
        """Revenue of one subscription.

        Revenue, cost and margins (agent-earned, billed and collected) of the subscription, over `startDate`..`endDate`
        (dates are whole UTC days, both inclusive; default the last 30 days), with the split by subscription and by
        strategy. 422 when `endDate` is not after `startDate`."""
        window = _window(parse(AnalyticsWindowIn, request.query_params))
        return Response(RevenueMetricsOut(subscription_revenue(book=self.book, subscription_id=subscription_id,
                                                               window=window)).data)
