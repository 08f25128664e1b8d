"""Model aliases and price overrides move their book's generation on every write; the catalog moves its own
(accounts/book_generations.py: what the API's per-process price cache trusts)."""
from django.db import migrations

BOOK_TABLES = ("catalog_modelalias", "catalog_priceoverride")
CATALOG = "catalog_serviceentry"
TRANSITION = {"insert": "NEW", "update": "OLD", "delete": "OLD"}


def _book_sql(table: str) -> str:
    return "".join(f"""
CREATE TRIGGER {table}_generation_{event} AFTER {event.upper()} ON {table}
    REFERENCING {rows} TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION accounts_book_generation_move();
""" for event, rows in TRANSITION.items()) + f"""
CREATE TRIGGER {table}_generation_truncate AFTER TRUNCATE ON {table}
    FOR EACH STATEMENT EXECUTE FUNCTION accounts_catalog_generation_move();
"""


CATALOG_SQL = f"""
CREATE TRIGGER {CATALOG}_generation AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON {CATALOG}
    FOR EACH STATEMENT EXECUTE FUNCTION accounts_catalog_generation_move();
"""


def _reverse(table: str, events) -> str:
    return "".join(f"DROP TRIGGER {table}_generation{event} ON {table};\n" for event in events)


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0007_reload_catalog_tiers_corrections"),
        ("accounts", "0004_book_generations"),
    ]

    operations = [
        *(migrations.RunSQL(_book_sql(table), _reverse(table, ("_insert", "_update", "_delete", "_truncate")))
          for table in BOOK_TABLES),
        migrations.RunSQL(CATALOG_SQL, _reverse(CATALOG, ("",))),
    ]
