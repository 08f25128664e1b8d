from django.urls import path

from analytics import views

urlpatterns = [
    path("analytics/usage", views.UsageAnalyticsApi.as_view()),
    path("analytics/cost", views.CostAnalyticsApi.as_view()),
    path("analytics/mrr", views.MrrAnalyticsApi.as_view()),
    path("analytics/revenue", views.RevenueAnalyticsApi.as_view()),
    path("customers/<str:customer_id>/revenue", views.CustomerRevenueApi.as_view()),
    path("subscriptions/<str:subscription_id>/revenue", views.SubscriptionRevenueApi.as_view()),
]
