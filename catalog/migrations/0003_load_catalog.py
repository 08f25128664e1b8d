"""Load the services catalog into a fresh database (and the test database), with the same loader as
`manage.py load_catalog`."""
from django.db import migrations


def load_catalog(apps, schema_editor):
    from catalog.services import catalog_load
    from core import clock

    catalog_load(now=clock.now(), service_model=apps.get_model("catalog", "ServiceEntry"))


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0002_long_context_cache_write_rate"),
    ]

    operations = [
        migrations.RunPython(load_catalog, migrations.RunPython.noop),
    ]
