"""Work of the customers app hooked on lower apps' signals: a catalog load prices the events it now can."""
from django.dispatch import receiver

from catalog.services import catalog_loaded
from customers.backfill import books_with_unpriced_events
from customers.tasks import reprice_unpriced_events_task


@receiver(catalog_loaded, dispatch_uid="customers.reprice_unpriced_events")
def reprice_unpriced_events_after_catalog_load(sender, **kwargs):
    """Each book with unpriced events gets a task pricing those the loaded catalog can price."""
    for book_id in books_with_unpriced_events():
        reprice_unpriced_events_task.delay(str(book_id))
