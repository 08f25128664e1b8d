from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "config.core"
    label = "core"
    verbose_name = "Core"
