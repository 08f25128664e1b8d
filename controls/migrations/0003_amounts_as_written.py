# Operator-written values keep every digit they are written with (docs/decisions/numbers.md): numeric(28, 12)
# becomes unconstrained numeric, which PostgreSQL treats as binary compatible (no row is rewritten).

import core.money
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('controls', '0002_spend_cap_alert_once_per_window_end'),
    ]

    operations = [
        migrations.AlterField(
            model_name='customeralert',
            name='threshold_usd',
            field=core.money.UnboundedDecimalField(),
        ),
        migrations.AlterField(
            model_name='customeralertfiring',
            name='threshold_usd',
            field=core.money.UnboundedDecimalField(),
        ),
        migrations.AlterField(
            model_name='spendcap',
            name='amount_usd',
            field=core.money.UnboundedDecimalField(),
        ),
        migrations.AlterField(
            model_name='spendcapalert',
            name='amount_usd',
            field=core.money.UnboundedDecimalField(help_text='The cap amount when the threshold was crossed.'),
        ),
    ]
