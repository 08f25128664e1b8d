from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"
