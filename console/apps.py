from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class ConsoleAdminConfig(AdminConfig):
    """Django's admin app with the console's site (`admin.site` everywhere is a ConsoleSite)."""

    default_site = "console.site.ConsoleSite"


class ConsoleConfig(AppConfig):
    """The operator console: its site, dashboard, ledger verification and `manage.py seed_demo` (console/demo).
    The top app of the stack: it may import every app below it."""

    name = "console"
    label = "console"
    verbose_name = "Operator console"
