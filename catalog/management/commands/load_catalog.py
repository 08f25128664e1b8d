from django.core.management.base import BaseCommand

from catalog.services import catalog_load
from config.core import clock


class Command(BaseCommand):
    help = ("Load the services catalog from catalog/data (idempotent: ids stay, rates update, "
            "dropped entries go inactive).")

    def handle(self, *args, **options):
        result = catalog_load(now=clock.now())
        self.stdout.write(f"catalog: {result.created} created, {result.updated} updated, "
                          f"{result.unchanged} unchanged, {result.deactivated} deactivated")
