from django.apps import AppConfig


class CompositionRootConfig(AppConfig):
    """The composition root (this package: settings, URLs, WSGI/ASGI, the Celery app and its periodic schedule, the
    hooks). Installed last, so its `ready()` wires every app's hooks once every app is loaded, in every process that
    sets Django up (web, worker, beat, management commands); it also holds `manage.py run_scheduled_jobs`, the
    schedule's runner without Celery. No app imports it."""

    name = "config"
    label = "config"
    verbose_name = "Composition root"

    def ready(self):
        from config.hooks import install_hooks

        install_hooks()
