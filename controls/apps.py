from django.apps import AppConfig


class ControlsConfig(AppConfig):
    name = "controls"
    verbose_name = "Spend controls and alerts"

    def ready(self):
        from controls import receivers  # noqa: F401  (connects the post-ingestion hooks)
