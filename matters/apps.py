from django.apps import AppConfig


class MattersConfig(AppConfig):
    name = "matters"
    verbose_name = "Matters"
