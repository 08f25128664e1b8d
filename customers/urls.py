from django.urls import path

from customers import views

urlpatterns = [
    path("customers", views.CustomerListCreateApi.as_view()),
    path("customers/<str:customer_id>", views.CustomerDetailApi.as_view()),
    path("agents", views.AgentListCreateApi.as_view()),
    path("agents/<str:agent_id>", views.AgentDetailApi.as_view()),
    path("signals", views.SignalListCreateApi.as_view()),
    path("signals/bulk", views.SignalBulkCreateApi.as_view()),
    path("signals/<str:signal_id>", views.SignalDetailApi.as_view()),
    path("events", views.UsageEventListApi.as_view()),
    path("events/map-model", views.ModelMapApi.as_view()),
    path("events/export", views.UsageEventExportApi.as_view()),
    path("price-overrides", views.PriceOverrideListApi.as_view()),
    path("price-overrides/<str:override_id>", views.PriceOverrideDetailApi.as_view()),
]
