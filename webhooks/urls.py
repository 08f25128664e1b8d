from django.urls import path

from webhooks import views

urlpatterns = [
    path("webhook-endpoints", views.WebhookEndpointListCreateApi.as_view()),
    path("webhook-endpoints/<str:endpoint_id>", views.WebhookEndpointDetailApi.as_view()),
    path("webhook-endpoints/<str:endpoint_id>/rotate-secret", views.WebhookEndpointRotateSecretApi.as_view()),
    path("webhook-endpoints/<str:endpoint_id>/test", views.WebhookEndpointTestApi.as_view()),
    path("webhook-endpoints/<str:endpoint_id>/replay", views.WebhookEndpointReplayApi.as_view()),
    path("webhook-endpoints/<str:endpoint_id>/deliveries", views.WebhookDeliveryListApi.as_view()),
    path("webhook-endpoints/<str:endpoint_id>/deliveries/<str:delivery_id>/resend",
         views.WebhookDeliveryResendApi.as_view()),
]
