from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "config.webhooks"
    label = "webhooks"
    verbose_name = "Webhooks"
