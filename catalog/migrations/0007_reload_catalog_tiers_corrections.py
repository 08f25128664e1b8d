"""Load the catalog again from its data files: 1-hour cache-write rates, the batch, flex and priority tiers'
rates (the columns 0006 added) and the reviewed corrections. Same loader as `manage.py load_catalog`."""
from django.db import migrations


def reload_catalog(apps, schema_editor):
    from catalog.services import catalog_load
    from core import clock

    catalog_load(now=clock.now(), service_model=apps.get_model("catalog", "ServiceEntry"))


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0006_price_overrides_tiers_1h_cache_writes"),
    ]

    operations = [
        migrations.RunPython(reload_catalog, migrations.RunPython.noop),
    ]
