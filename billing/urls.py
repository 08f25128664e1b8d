from django.urls import path

from billing.views import credit_pools, invoices, plans, strategies, subscriptions, usage

# The hot path, resolved before any other route of the API (config/urls.py): Django tries patterns in order, and
# recording is most of the API's requests (docs/performance.md).
recording_patterns = [path("usage/record", usage.UsageRecordApi.as_view())]

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
    path("subscriptions/<str:subscription_id>/change-plan", subscriptions.SubscriptionChangePlanApi.as_view()),
    path("invoices", invoices.InvoiceListApi.as_view()),
    path("invoices/generate", invoices.InvoiceGenerateApi.as_view()),
    path("invoices/<str:invoice_id>", invoices.InvoiceDetailApi.as_view()),
    path("invoices/<str:invoice_id>/pdf", invoices.InvoicePdfApi.as_view()),
    path("invoices/<str:invoice_id>/send", invoices.InvoiceSendApi.as_view()),
    path("invoices/<str:invoice_id>/void", invoices.InvoiceVoidApi.as_view()),
    path("invoices/<str:invoice_id>/payments/<str:payment_id>/refund", invoices.RefundCreateApi.as_view()),
    path("webhooks/stripe", invoices.StripeWebhookApi.as_view()),
    path("credit-balances", credit_pools.CreditBalanceListApi.as_view()),
    path("subscriptions/<str:subscription_id>/credit-balance", credit_pools.CreditBalanceDetailApi.as_view()),
    path("subscriptions/<str:subscription_id>/credit-topup", credit_pools.CreditTopupApi.as_view()),
    path("subscriptions/<str:subscription_id>/credit-alerts-pause", credit_pools.CreditAlertsPauseApi.as_view()),
]
