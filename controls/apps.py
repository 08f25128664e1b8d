from django.apps import AppConfig


class ControlsConfig(AppConfig):
    name = "controls"
    verbose_name = "Spend controls and alerts"
