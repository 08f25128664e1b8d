"""Work of the customers app that runs at a moment of a lower app (registered in config/hooks.py)."""
from accounts.models import Book
from customers.backfill import books_with_unpriced_events, events_reprice_start


def reprice_unpriced_events_after_catalog_load(*, result, started_jobs: list | None = None) -> None:
    """catalog's `catalog_loaded`: each book with unpriced events gets a job pricing those the loaded catalog
    can price (appended to `started_jobs`, which `load_catalog` follows)."""
    for book in Book.objects.filter(pk__in=books_with_unpriced_events()).order_by("pk"):
        job = events_reprice_start(book=book, created_by="catalog load")
        if started_jobs is not None:
            started_jobs.append(job)
