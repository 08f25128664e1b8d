from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class ConsoleAdminConfig(AdminConfig):
    """Django's admin app with the console's site (`admin.site` everywhere is a ConsoleSite)."""

    default_site = "config.console.site.ConsoleSite"


class ConsoleConfig(AppConfig):
    """The composition root's app, the top of the stack (it may import every app): the console's site, the
    hooks (config/hooks.py), the periodic jobs' runners (config/schedule.py: the Celery task and
    `manage.py run_scheduled_jobs`) and `manage.py seed_demo` (config/demo)."""

    name = "config.console"
    label = "console"
    verbose_name = "Operator console"

    def ready(self):
        from config.hooks import install_hooks

        install_hooks()
