from django.urls import path

from controls import views

urlpatterns = [
    path("control/caps", views.SpendCapListCreateApi.as_view()),
    path("control/caps/<str:cap_id>", views.SpendCapDetailApi.as_view()),
    path("control/spend", views.SpendApi.as_view()),
    path("control/coverage", views.CoverageApi.as_view()),
    path("control/devices/heartbeat", views.DeviceHeartbeatApi.as_view()),
    path("control/check", views.SpendCheckApi.as_view()),
    path("customer-alerts", views.CustomerAlertListCreateApi.as_view()),
    path("customer-alerts/<str:alert_id>", views.CustomerAlertDetailApi.as_view()),
]
