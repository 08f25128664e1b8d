from django.db import migrations, models


class Migration(migrations.Migration):
    """The backlog row carries its event's usage_date, so that a catch-up reads only the ledger's partitions of
    the months it spans. Nullable: rows already waiting (and those the release before writes while both run)
    have none, and the catch-up then reads every month for them."""

    dependencies = [
        ('customers', '0010_usage_event_partitioned'),
    ]

    operations = [
        migrations.AddField(
            model_name='rollupbacklog',
            name='usage_date',
            field=models.DateTimeField(null=True),
        ),
    ]
