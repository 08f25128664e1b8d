from celery import shared_task

from billing.services.credit_pools import credit_pool_alerts_evaluate
from config.accounts.models import Book
from config.core import clock


@shared_task(name="billing.evaluate_credit_pool_alerts", acks_late=True)
def evaluate_credit_pool_alerts_task(book_id: str, subscription_ids: list[str] | None = None) -> int:
    """Settle the book's credit pools and send the alert emails now due (all pools, or the listed subscriptions');
    usage recording enqueues it on commit. Idempotent: a stage is emailed once per period."""
    book = Book.objects.select_related("organization").filter(pk=book_id).first()
    if book is None:  # the organization went away meanwhile
        return 0
    return credit_pool_alerts_evaluate(book=book, now=clock.now(), subscription_ids=subscription_ids)
