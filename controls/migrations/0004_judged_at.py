# When an evaluation last judged a spend cap's ladder or a customer watch. Rows that exist are judged as of now: a
# window that ended before this migration was judged by the runs of then (or no longer can be), and must not alert
# late because the field is new.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('controls', '0003_amounts_as_written'),
    ]

    operations = [
        migrations.AddField(
            model_name='customeralert',
            name='judged_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='spendcap',
            name='judged_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunSQL(["UPDATE controls_spendcap SET judged_at = now()",
                           "UPDATE controls_customeralert SET judged_at = now()"], migrations.RunSQL.noop),
    ]
