"""The generations of each book's rarely changing records, and of the catalog (accounts/book_generations.py).

A table of one row per book whose identities, aliases or price overrides ever changed (and one for the catalog),
set from one sequence by the two trigger functions the customers and catalog migrations attach to their tables.
Not a Django model: a test database's flush must not empty it (a generation must never come back)."""
from django.db import migrations

SQL = """
CREATE SEQUENCE accounts_book_generation_seq;
CREATE TABLE accounts_book_generation (book_id uuid PRIMARY KEY, generation bigint NOT NULL);

-- For AFTER ... FOR EACH STATEMENT triggers whose transition table is `changed_rows` (with a book_id): the
-- books of the changed rows get a new generation, in book order (two transactions lock the rows in one order).
CREATE FUNCTION accounts_book_generation_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO accounts_book_generation AS g (book_id, generation)
    SELECT book_id, nextval('accounts_book_generation_seq')
    FROM (SELECT DISTINCT book_id FROM changed_rows ORDER BY book_id) AS books
    ON CONFLICT (book_id) DO UPDATE SET generation = EXCLUDED.generation;
    RETURN NULL;
END $$;

-- The catalog's generation: any write of the catalog, and a TRUNCATE of any table with a trigger above.
CREATE FUNCTION accounts_catalog_generation_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO accounts_book_generation AS g (book_id, generation)
    VALUES ('00000000-0000-0000-0000-000000000000', nextval('accounts_book_generation_seq'))
    ON CONFLICT (book_id) DO UPDATE SET generation = EXCLUDED.generation;
    RETURN NULL;
END $$;
"""

REVERSE = """
DROP FUNCTION accounts_catalog_generation_move();
DROP FUNCTION accounts_book_generation_move();
DROP TABLE accounts_book_generation;
DROP SEQUENCE accounts_book_generation_seq;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0003_organization_billing_profile"),
    ]

    operations = [migrations.RunSQL(SQL, REVERSE)]
