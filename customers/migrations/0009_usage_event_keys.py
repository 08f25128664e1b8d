import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    """The table of idempotency keys that referees replays across the ledger's monthly partitions.

    The ledger's unique (book, idempotency_key) index leaves the model only: on a populated ledger it keeps
    refereeing the release still running until the conversion (0010) has happened and its months have passed
    (customers.partitions.retire_transition_aids drops it then); on an empty one 0010 replaces the table.
    """

    dependencies = [
        ('accounts', '0003_organization_billing_profile'),
        ('customers', '0008_rollup_sums_unbounded'),
    ]

    operations = [
        migrations.CreateModel(
            name='UsageEventKey',
            fields=[
                ('pk', models.CompositePrimaryKey('book', 'idempotency_key', blank=True, editable=False,
                                                  primary_key=True, serialize=False)),
                ('book', models.ForeignKey(db_constraint=False, db_index=False,
                                           on_delete=django.db.models.deletion.CASCADE, related_name='+',
                                           to='accounts.book')),
                ('idempotency_key', models.CharField(max_length=255)),
                ('event_id', models.UUIDField()),
                ('usage_date', models.DateTimeField()),
            ],
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name='usageevent', name='usage_event_idem_uniq'),
            ],
        ),
    ]
