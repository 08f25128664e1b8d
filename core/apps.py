from django.apps import AppConfig, apps


class CoreConfig(AppConfig):
    name = "core"
    label = "core"
    verbose_name = "Core"

    def ready(self):
        from core.exact_json import make_json_fields_exact

        # JSON columns read and write numbers exactly (contract.md "Exact numbers in").
        make_json_fields_exact(apps.get_models(include_auto_created=True))
