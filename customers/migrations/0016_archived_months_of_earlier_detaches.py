"""Months detached before `ArchivedMonth` existed (customers 0015) left only their archive tables: record each
table still in the database, so the ledger verifier compares no figure of its month. A table already dropped
cannot be found again: `manage.py ledger_partitions mark-archived YYYY-MM` records its month."""
import re
from datetime import UTC, datetime

from django.db import migrations

ARCHIVE = re.compile(r"customers_usageevent_archived_(\d{4})_(\d{2})")


def record_archived_tables(apps, schema_editor):
    ArchivedMonth = apps.get_model("customers", "ArchivedMonth")
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE %s",
                       ["customers_usageevent_archived_%"])
        for (name,) in cursor.fetchall():
            match = ARCHIVE.fullmatch(name)
            if match is None:
                continue
            cursor.execute(f'SELECT count(*) FROM "{name}"')
            month = datetime(int(match[1]), int(match[2]), 1, tzinfo=UTC)
            ArchivedMonth.objects.get_or_create(month=month, defaults={
                "archive": name, "rows": cursor.fetchone()[0], "detached_at": datetime.now(UTC)})


class Migration(migrations.Migration):

    dependencies = [
        ('customers', '0015_archived_months'),
    ]

    operations = [
        migrations.RunPython(record_archived_tables, migrations.RunPython.noop),
    ]
