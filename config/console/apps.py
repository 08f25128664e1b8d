from django.contrib.admin.apps import AdminConfig


class ConsoleAdminConfig(AdminConfig):
    """Django's admin app with the console's site (`admin.site` everywhere is a ConsoleSite)."""

    default_site = "config.console.site.ConsoleSite"
