from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "accounts"
    label = "accounts"
    verbose_name = "Organizations, members and API keys"
