from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _keep_claims_after_migrate(sender, using, plan=None, **kwargs) -> None:
    """After a `migrate` that leaves the database at the latest schema: the final invoices made final before
    invoices kept their claims store them (billing.services.invoices.final_invoices_keep_claims). Not after a
    `flush` (no plan), nor on a database migrated to an earlier state (the service's queries need every column)."""
    if plan is None:
        return
    from django.db import connections
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connections[using])
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        return
    from billing.services.invoices import final_invoices_keep_claims

    final_invoices_keep_claims()


class BillingConfig(AppConfig):
    name = "billing"
    verbose_name = "Billing"

    def ready(self):
        post_migrate.connect(_keep_claims_after_migrate, sender=self, dispatch_uid="billing-keep-claims")
