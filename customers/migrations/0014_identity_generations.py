"""Customers, agents and signals move their book's generation when changed or deleted, and the catalog's when
emptied (accounts/book_generations.py: what the API's per-process identity cache trusts). Inserts move nothing."""
from django.db import migrations

TABLES = ("customers_customer", "customers_agent", "customers_signal")


def _sql(table: str) -> str:
    return f"""
CREATE TRIGGER {table}_generation_update AFTER UPDATE ON {table}
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION accounts_book_generation_move();
CREATE TRIGGER {table}_generation_delete AFTER DELETE ON {table}
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION accounts_book_generation_move();
CREATE TRIGGER {table}_generation_truncate AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION accounts_catalog_generation_move();
"""


def _reverse(table: str) -> str:
    return "".join(f"DROP TRIGGER {table}_generation_{event} ON {table};\n"
                   for event in ("update", "delete", "truncate"))


class Migration(migrations.Migration):

    dependencies = [
        ("customers", "0013_usage_event_1h_cache_writes_service_tier"),
        ("accounts", "0004_book_generations"),
    ]

    operations = [migrations.RunSQL(_sql(table), _reverse(table)) for table in TABLES]
