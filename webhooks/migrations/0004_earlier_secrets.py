# A second rotation within the 24 hours keeps the first replaced secret signing until its own expiry.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('webhooks', '0003_subscription_deleted_event'),
    ]

    operations = [
        migrations.AddField(
            model_name='webhookendpoint',
            name='earlier_secrets',
            field=models.JSONField(blank=True, default=list),
        ),
    ]
