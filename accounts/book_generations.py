"""Per-process caches of a book's rarely changing records, which the database invalidates.

Every batch of usage names customers, agents and signals and prices its models from the catalog, the book's
model aliases and its price overrides. These change rarely, yet reading them took two of a batch's statements
and a fifth of its Python (docs/performance.md). Each web process keeps what it read, for each book, under the
**generation** it was read at:

- the database moves a book's generation on every UPDATE or DELETE of its customers, agents or signals,
  every write of its model aliases or price overrides and every matter created in it, and the catalog's
  generation on every write of the catalog and every TRUNCATE of any of these tables (triggers,
  accounts/migrations/0004 and the customers, catalog and matters migrations that attach them). Inserting an
  identity moves nothing: a new row changes no entry a cache holds, and a name a cache lacks is read from the
  database;
- the API key statement, which every request runs, reads both generations with the key (`GENERATION_COLUMNS`)
  and stamps them on the key (`stamp`). Recording a batch, which reads these records before it writes any of
  them, passes the key's generations to its lookups; a cache answers only for exactly those generations, so a
  change committed before the request's key was read is never answered from an older entry. Nothing else
  passes a generation: a request that changes these records and then reads them (a model mapped and its
  events priced again, in one request) always reads the database;
- entries are added only once the transaction that read them has committed (`transaction.on_commit`): a row
  inserted by a transaction that rolled back never enters a cache;
- generations are values of one sequence, never handed out twice, so a change that rolled back cannot bring back
  a number with other rows behind it.

A lookup without a generation (every caller but recording: the portal, the console, jobs, re-pricing) reads
the database. Nothing is cached across processes.

**Prices in force.** A batch is priced before its transaction, from a cache or a read; a price change (an
override, a model alias, the catalog) re-prices the events it touches once it has committed. A batch priced
before the change and committed after that re-pricing read the ledger would keep the old cost. So each book's row
also holds `prices`, which only those writes move, under an exclusive advisory lock on what they changed (the
book, the catalog) held until they commit (accounts/migrations/0005_prices_in_force.py). The statement that
stores a batch first calls `accounts_prices_in_force`, which takes both locks shared and reads the prices in
force, and stores nothing unless they are the ones the batch was priced at (customers/ledger.py). Either the
batch reads a change that committed before it (and is priced again: recording retries with what it read), or the
change waits for the batch to commit, and its re-pricing reads the batch's events.
"""
from typing import NamedTuple

from django.db import connection, transaction

from core.database import advisory_xact_lock

TABLE = "accounts_book_generation"
# The catalog's own generation, a row that no book has: the catalog is shared by every book.
CATALOG_ROW = "00000000-0000-0000-0000-000000000000"
# The two generations for a statement that has the book's id in `k.book_id` (the API key statement).
GENERATION_COLUMNS = ", ".join(f"coalesce((SELECT {column} FROM {TABLE} WHERE book_id = {row}), 0)"
                               for column in ("generation", "prices") for row in ("k.book_id", f"'{CATALOG_ROW}'::uuid"))


# The advisory-lock namespace of "Prices in force" (accounts/migrations/0005_prices_in_force.py): a batch holds its
# book's key shared from the statement that stores it until it commits; a price change holds it exclusively.
PRICE_LOCKS = 7302


def batches_in_flight_wait(book_id) -> None:
    """Wait until every batch of the book that has begun storing its events has committed or rolled back (the
    book's key held exclusively for a moment, in a transaction of its own), so that a read of the ledger after it
    sees those batches. For the jobs that close a period (issuing its invoices, settling its credit pools): a batch
    dated in the period, still committing when the job read the ledger, was left out of what it closed. Inside
    another transaction it does nothing: the key would be held to that transaction's end, and the book's
    recording with it."""
    if connection.in_atomic_block:
        return
    with transaction.atomic():
        advisory_xact_lock(PRICE_LOCKS, str(book_id))


class Generation(NamedTuple):
    """The book's and the catalog's generations, and their prices (what a batch priced at them must find in
    force when it is stored)."""

    book: int
    catalog: int
    book_prices: int
    catalog_prices: int

    @property
    def prices(self) -> list[int]:
        return [self.book_prices, self.catalog_prices]

    def not_older_than(self, other: "Generation") -> bool:
        return self.book >= other.book and self.catalog >= other.catalog


def generation_now(book) -> Generation:
    """The book's generations as they are now (for a caller that has no key's: recording outside a request)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {GENERATION_COLUMNS} FROM (SELECT %s::uuid AS book_id) k", [str(book.pk)])
        return Generation(*cursor.fetchone())


def stamp(key, generation: Generation) -> None:
    """The generations of the key's book, read in the statement that read the key."""
    key.read_at_generation = generation


def generation_of(key) -> Generation | None:
    """What `stamp` put on the key; None for a key read any other way."""
    return getattr(key, "read_at_generation", None)


class BookCache:
    """One kind of record, for each book a map valid at one generation. Bounded: at most `max_books` books and
    `max_entries` entries in all (a few hundred bytes each); past either it starts again empty (a cache, not a
    store)."""

    def __init__(self, *, max_books: int = 1_000, max_entries: int = 50_000):
        self.max_books = max_books
        self.max_entries = max_entries
        self._books: dict = {}  # book id -> (Generation, {key: value})

    def entries(self, book, generation: Generation | None) -> dict:
        """What this process holds for the book at exactly this generation (empty: nothing, or no generation).
        Read only: the map is shared by every request of the process."""
        held = self._books.get(book.pk) if generation is not None else None
        return held[1] if held is not None and held[0] == generation else {}

    def remember(self, book, generation: Generation | None, entries: dict) -> None:
        """Add entries read from the database at this generation, once the current transaction commits (at once
        outside one). Without a generation, nothing."""
        if generation is None or not entries:
            return
        book_id = book.pk
        transaction.on_commit(lambda: self._add(book_id, generation, entries))

    def _add(self, book_id, generation: Generation, entries: dict) -> None:
        held = self._books.get(book_id)
        if held is not None and held[0] != generation and not generation.not_older_than(held[0]):
            return  # a request that read an older generation finished late: keep the newer map
        current = held[1] if held is not None and held[0] == generation else {}
        others = sum(len(book_entries) for book, (_, book_entries) in self._books.items() if book != book_id)
        if ((held is None and len(self._books) >= self.max_books)
                or others + len(current) + len(entries) > self.max_entries):
            self._books.clear()
            current = {}
        current.update(entries)
        self._books[book_id] = (generation, current)

    def clear(self) -> None:
        self._books.clear()


CACHES: list[BookCache] = []


def book_cache(**bounds) -> BookCache:
    """A new cache of this process, known to `clear_all`."""
    cache = BookCache(**bounds)
    CACHES.append(cache)
    return cache


def clear_all() -> None:
    """Forget everything every cache holds (tests that reuse a book's id across rolled-back transactions)."""
    for cache in CACHES:
        cache.clear()
