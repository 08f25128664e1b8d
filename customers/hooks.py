"""Work of the customers app that runs at a moment of a lower app (registered in config/hooks.py)."""
from customers.backfill import books_with_unpriced_events
from customers.tasks import reprice_unpriced_events_task


def reprice_unpriced_events_after_catalog_load(*, result) -> None:
    """catalog's `catalog_loaded`: each book with unpriced events gets a task pricing those the loaded catalog
    can price."""
    for book_id in books_with_unpriced_events():
        reprice_unpriced_events_task.delay(str(book_id))
