import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """The attribution's event loses its database foreign key before the ledger is partitioned (a
    partitioned table can be referenced only through a key holding its partition key)."""

    dependencies = [
        ('customers', '0008_rollup_sums_unbounded'),
        ('matters', '0001_matters_rules_attribution'),
    ]

    operations = [
        migrations.AlterField(
            model_name='matterattribution',
            name='event',
            field=models.OneToOneField(db_constraint=False, on_delete=django.db.models.deletion.CASCADE,
                                       related_name='matter_attribution', to='customers.usageevent'),
        ),
    ]
