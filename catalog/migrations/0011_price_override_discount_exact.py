# A price override's discountPercent keeps every digit it was written with (contract.md "Exact numbers in"), as
# every other percent an operator writes: it was numeric(9, 6), so 33.333333333333336 was a 400.

import core.money
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('catalog', '0010_price_override_every_date'),
    ]

    operations = [
        migrations.AlterField(
            model_name='priceoverride',
            name='discount_percent',
            field=core.money.UnboundedDecimalField(blank=True, null=True),
        ),
    ]
