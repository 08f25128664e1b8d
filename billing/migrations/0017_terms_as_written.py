# Operator-written values keep every digit they are written with (docs/decisions/numbers.md): numeric(28, 12)
# becomes unconstrained numeric, which PostgreSQL treats as binary compatible (no row is rewritten).

import core.money
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('billing', '0016_strategy_choice_labels'),
    ]

    operations = [
        migrations.AlterField(
            model_name='creditgrant',
            name='units',
            field=core.money.UnboundedDecimalField(),
        ),
        migrations.AlterField(
            model_name='invoice',
            name='discount_percent',
            field=core.money.UnboundedDecimalField(default=0),
        ),
        migrations.AlterField(
            model_name='invoice',
            name='tax_percent',
            field=core.money.UnboundedDecimalField(default=0),
        ),
        migrations.AlterField(
            model_name='pricingstrategy',
            name='minimum_commitment',
            field=core.money.UnboundedDecimalField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='pricingstrategy',
            name='rate',
            field=core.money.UnboundedDecimalField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name='subscription',
            name='prorated_amount',
            field=core.money.UnboundedDecimalField(blank=True, null=True),
        ),
    ]
