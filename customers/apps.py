from django.apps import AppConfig


class CustomersConfig(AppConfig):
    name = "customers"
    verbose_name = "Customers, agents, signals and usage"

    def ready(self):
        from customers import receivers  # noqa: F401  (connects the repricing after a catalog load)
