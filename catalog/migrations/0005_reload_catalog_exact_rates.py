"""Load the catalog again from its data files: rates with every digit of the source, every long-context
threshold, off-peak prices and the xAI threshold rule (the columns 0004 added). Same loader as
`manage.py load_catalog`; the unpriced events it can now price are priced by the next `load_catalog`."""
from django.db import migrations


def reload_catalog(apps, schema_editor):
    from catalog.services import catalog_load
    from core import clock

    catalog_load(now=clock.now(), service_model=apps.get_model("catalog", "ServiceEntry"))


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0004_exact_rates_thresholds_off_peak"),
    ]

    operations = [
        migrations.RunPython(reload_catalog, migrations.RunPython.noop),
    ]
