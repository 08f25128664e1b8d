from django.urls import path

from billing.views import analytics, plans, strategies, subscriptions, usage

urlpatterns = [
    path("pricing-plans", plans.PlanListCreateApi.as_view()),
    path("pricing-plans/<str:plan_id>", plans.PlanDetailApi.as_view()),
    path("pricing-plans/<str:plan_id>/agents", plans.PlanAgentLinkApi.as_view()),
    path("pricing-plans/<str:plan_id>/agents/<str:agent_id>", plans.PlanAgentUnlinkApi.as_view()),
    path("pricing-plans/<str:plan_id>/copy", plans.PlanCopyApi.as_view()),
    path("pricing-plans/<str:plan_id>/pricing-strategies", strategies.StrategyListApi.as_view()),
    path("pricing-plans/<str:plan_id>/pricing-strategies/<str:strategy_id>", strategies.StrategyDetailApi.as_view()),
    path("subscriptions", subscriptions.SubscriptionListCreateApi.as_view()),
    path("subscriptions/<str:subscription_id>", subscriptions.SubscriptionDetailApi.as_view()),
    path("subscriptions/<str:subscription_id>/invoice-dates", subscriptions.SubscriptionInvoiceDatesApi.as_view()),
    path("subscriptions/<str:subscription_id>/changelog", subscriptions.SubscriptionChangelogApi.as_view()),
    path("usage/record", usage.UsageRecordApi.as_view()),
    path("analytics/usage", analytics.UsageAnalyticsApi.as_view()),
    path("analytics/cost", analytics.CostAnalyticsApi.as_view()),
    path("analytics/mrr", analytics.MrrAnalyticsApi.as_view()),
    path("analytics/revenue", analytics.RevenueAnalyticsApi.as_view()),
    path("customers/<str:customer_id>/revenue", analytics.CustomerRevenueApi.as_view()),
    path("subscriptions/<str:subscription_id>/revenue", analytics.SubscriptionRevenueApi.as_view()),
]
