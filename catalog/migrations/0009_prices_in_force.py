"""Model aliases and price overrides move their book's prices as well as its generation, under the book's
exclusive price lock (accounts/migrations/0005_prices_in_force.py)."""
from django.db import migrations

BOOK_TABLES = ("catalog_modelalias", "catalog_priceoverride")
TRANSITION = {"insert": "NEW", "update": "OLD", "delete": "OLD"}


def _triggers(table: str, function: str) -> str:
    return "".join(f"""
DROP TRIGGER {table}_generation_{event} ON {table};
CREATE TRIGGER {table}_generation_{event} AFTER {event.upper()} ON {table}
    REFERENCING {rows} TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}();
""" for event, rows in TRANSITION.items())


class Migration(migrations.Migration):

    dependencies = [
        ("catalog", "0008_catalog_generations"),
        ("accounts", "0005_prices_in_force"),
    ]

    operations = [migrations.RunSQL(_triggers(table, "accounts_book_prices_move"),
                                    _triggers(table, "accounts_book_generation_move")) for table in BOOK_TABLES]
