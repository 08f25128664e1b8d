from django.db import migrations
from django.utils import timezone


def convert(apps, schema_editor):
    from customers.partition_conversion import convert_ledger
    convert_ledger(now=timezone.now())


def unconvert(apps, schema_editor):
    from customers.partition_conversion import unconvert_ledger
    unconvert_ledger()


class Migration(migrations.Migration):
    """The ledger partitioned by UTC month of usage_date (customers/partition_conversion.py): a populated
    ledger is converted in online steps and one short switch; an empty one is replaced. Not atomic: the
    steps commit one by one, and the index of step 2 is built CONCURRENTLY."""

    atomic = False

    dependencies = [
        ('customers', '0009_usage_event_keys'),
        ('matters', '0002_attribution_event_without_fk'),
    ]

    operations = [
        migrations.RunPython(convert, unconvert, elidable=False),
    ]
