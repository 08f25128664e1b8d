"""The generation of what prices a book's usage, and the guard a batch of usage passes before it is stored
(accounts/book_generations.py: "Prices in force").

`prices` moves, with `generation`, on every write of the book's model aliases or price overrides (the book's row)
and of the catalog (the catalog's row); identities and matters move `generation` only. Each such write takes an
exclusive transaction-level advisory lock on what it changed (the book's key, the catalog's key); a batch takes
both keys shared, then reads the two `prices` in force, in `accounts_prices_in_force`. So a batch priced before a
price change either stores nothing (it reads the new `prices`, since it reads after the change committed) or is
committed before the change's transaction is: a re-pricing run after that commit sees its events. A price change
takes its lock before it writes the generation's row, so a batch writes that row (identity updates) only after
its statement took the locks (billing/recording.py), never before: the two would wait for each other."""
from django.db import migrations

LOCKS = 7302  # the advisory-lock namespace; the second key: 0 for the catalog, hashtext(book id) for a book
CATALOG_ROW = "00000000-0000-0000-0000-000000000000"
LOCK_TIMEOUT = "10s"  # how long a batch waits for a price change to commit

SQL = f"""
ALTER TABLE accounts_book_generation ADD COLUMN prices bigint NOT NULL DEFAULT 0;

CREATE FUNCTION accounts_book_prices_move() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    changed uuid;
BEGIN
    -- In the order of the keys (two writers of several books take them in one order).
    FOR changed IN SELECT book_id FROM (SELECT DISTINCT book_id FROM changed_rows) AS books
                   ORDER BY hashtext(book_id::text), book_id LOOP
        PERFORM pg_advisory_xact_lock({LOCKS}, hashtext(changed::text));
    END LOOP;
    WITH moved AS MATERIALIZED (
        SELECT book_id, nextval('accounts_book_generation_seq') AS n
        FROM (SELECT DISTINCT book_id FROM changed_rows ORDER BY book_id) AS books)
    INSERT INTO accounts_book_generation AS g (book_id, generation, prices)
    SELECT book_id, n, n FROM moved
    ON CONFLICT (book_id) DO UPDATE SET generation = EXCLUDED.generation, prices = EXCLUDED.prices;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION accounts_catalog_generation_move() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    PERFORM pg_advisory_xact_lock({LOCKS}, 0);
    n := nextval('accounts_book_generation_seq');
    INSERT INTO accounts_book_generation AS g (book_id, generation, prices)
    VALUES ('{CATALOG_ROW}', n, n)
    ON CONFLICT (book_id) DO UPDATE SET generation = EXCLUDED.generation, prices = EXCLUDED.prices;
    RETURN NULL;
END $$;

-- The book's and the catalog's generations and prices, read after taking both keys shared (held until the
-- transaction ends): {{book generation, catalog generation, book prices, catalog prices}}. Each statement of a
-- volatile function reads with a snapshot of its own, so these read whatever committed before the locks.
-- A price change that does not commit within the lock timeout (a session left open in a transaction) makes the
-- batch fail with lock_not_available, answered 503 with Retry-After and nothing stored, rather than hold its web
-- worker until the request times out.
CREATE FUNCTION accounts_prices_in_force(book uuid) RETURNS bigint[] LANGUAGE plpgsql VOLATILE
SET lock_timeout = '{LOCK_TIMEOUT}' AS $$
DECLARE
    found bigint[];
BEGIN
    PERFORM pg_advisory_xact_lock_shared({LOCKS}, 0);
    PERFORM pg_advisory_xact_lock_shared({LOCKS}, hashtext(book::text));
    SELECT ARRAY[coalesce(max(generation) FILTER (WHERE book_id = book), 0),
                 coalesce(max(generation) FILTER (WHERE book_id = '{CATALOG_ROW}'), 0),
                 coalesce(max(prices) FILTER (WHERE book_id = book), 0),
                 coalesce(max(prices) FILTER (WHERE book_id = '{CATALOG_ROW}'), 0)]
    INTO found FROM accounts_book_generation WHERE book_id IN (book, '{CATALOG_ROW}');
    RETURN found;
END $$;
"""

REVERSE = f"""
DROP FUNCTION accounts_prices_in_force(uuid);
CREATE OR REPLACE FUNCTION accounts_catalog_generation_move() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO accounts_book_generation AS g (book_id, generation)
    VALUES ('{CATALOG_ROW}', nextval('accounts_book_generation_seq'))
    ON CONFLICT (book_id) DO UPDATE SET generation = EXCLUDED.generation;
    RETURN NULL;
END $$;
DROP FUNCTION accounts_book_prices_move();
ALTER TABLE accounts_book_generation DROP COLUMN prices;
"""


class Migration(migrations.Migration):

    dependencies = [
        ("accounts", "0004_book_generations"),
    ]

    operations = [migrations.RunSQL(SQL, REVERSE)]
