from celery import shared_task

from billing.followup import usage_followup_take
from billing.selectors.credit_pools import balance_cache_refresh, pool_subscription_ids
from billing.services.credit_pools import credit_pool_alerts_evaluate
from accounts.models import Book
from core import clock
from customers.rollup import analytics_rollup_catch_up


@shared_task(name="billing.evaluate_credit_pool_alerts", acks_late=True)
def evaluate_credit_pool_alerts_task(book_id: str, subscription_ids: list[str] | None = None,
                                     customer_ids: list[str] | None = None) -> int:
    """Settle the book's credit pools and send the alert emails now due: all pools, the listed subscriptions',
    or the pools of the listed customers (what usage recording enqueues on commit, so that finding them is
    not ingestion's work). Idempotent: a stage is emailed once per period."""
    book = Book.objects.select_related("organization").filter(pk=book_id).first()
    if book is None:  # the organization went away meanwhile
        return 0
    if customer_ids is not None:
        subscription_ids = pool_subscription_ids(book=book, customer_ids=customer_ids)
        if not subscription_ids:
            return 0
    return credit_pool_alerts_evaluate(book=book, now=clock.now(), subscription_ids=subscription_ids)


@shared_task(name="billing.usage_followup", acks_late=True)
def usage_followup_task(book_id: str, customer_ids: list[str] | None = None, *, unless_busy: bool = False
                        ) -> int | None:
    """After usage was recorded (billing/followup.py: one run for the batches of a few seconds): let the
    next credit balance read compute (the batches' usage shows within seconds, not when a cached answer expires),
    add the book's pending events to the analytics rollup, then settle the credit pools of the customers
    the batches named. Idempotent: each pending event is added once, each pool stage emailed once."""
    customer_ids = sorted({*(customer_ids or ()), *usage_followup_take(book_id=book_id)})
    balance_cache_refresh(book_id=book_id)  # first: one cache write, whatever the catch-up takes or raises
    added = analytics_rollup_catch_up(book_id=book_id, unless_busy=unless_busy)
    if customer_ids:
        evaluate_credit_pool_alerts_task(book_id, customer_ids=customer_ids)
    return added
