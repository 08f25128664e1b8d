"""Creating a matter moves its book's generation, and emptying the table the catalog's (accounts/book_generations.py):
recording skips matter routing for a book its process has seen without matters at the key's generation
(matters/ingestion.py). Only inserts: a book known to have matters reads its rules every batch anyway."""
from django.db import migrations

SQL = """
CREATE TRIGGER matters_matter_generation_insert AFTER INSERT ON matters_matter
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION accounts_book_generation_move();
CREATE TRIGGER matters_matter_generation_truncate AFTER TRUNCATE ON matters_matter
    FOR EACH STATEMENT EXECUTE FUNCTION accounts_catalog_generation_move();
"""

REVERSE = """
DROP TRIGGER matters_matter_generation_insert ON matters_matter;
DROP TRIGGER matters_matter_generation_truncate ON matters_matter;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("matters", "0002_attribution_event_without_fk"),
        ("accounts", "0004_book_generations"),
    ]

    operations = [migrations.RunSQL(SQL, REVERSE)]
