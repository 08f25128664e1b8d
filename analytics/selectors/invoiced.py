"""What invoices say (spec §1, §3, §4): canonical MRR, and the Billed and Collected revenue labels.

An invoice is dated by `issued_at`, set once when it is finalized.

- Billed: the totals of invoices dated in the window with status `issued` or `overdue`.
- Collected: what was collected, net of refunds (`amount_paid`), on invoices dated in the window with
  status `paid`. Refunded and void invoices count in neither (spec §3).
- Canonical MRR: the totals of the non-draft invoices dated in the last complete UTC calendar month,
  void and refunded ones left out (treated like void for revenue recognition, spec §3).
Internal customers' invoices (they are never billed) never count.
"""
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from uuid import UUID

from django.db.models import Q, Sum
from django.db.models.functions import Least

from billing.models import Invoice
from core.clock import month_window
from core.money import ZERO
from core.scoping import owned
from customers.usage_sums import Window

BILLED = ("issued", "overdue")
COLLECTED = ("paid",)
IN_MRR = ("pending", "issued", "overdue", "paid")


def _invoices(*, book, window: Window, customer_id=None, subscription_id=None):
    invoices = owned(Invoice, book).filter(issued_at__gte=window.start, issued_at__lt=window.end,
                                                          customer__is_internal=False)
    if customer_id is not None:
        invoices = invoices.filter(customer_id=customer_id)
    if subscription_id is not None:
        invoices = invoices.filter(subscription_id=subscription_id)
    return invoices


def last_complete_month(now: datetime) -> Window:
    this_month_start, _ = month_window(now)
    return Window(*month_window(this_month_start - timedelta(days=1)))


def canonical_mrr(*, book, now: datetime, customer_id=None, subscription_id=None) -> Decimal:
    invoices = _invoices(book=book, window=last_complete_month(now), customer_id=customer_id,
                         subscription_id=subscription_id)
    return invoices.filter(status__in=IN_MRR).aggregate(total=Sum("total"))["total"] or ZERO


@dataclass(frozen=True)
class Invoiced:
    billed: Decimal = ZERO
    collected: Decimal = ZERO


def invoiced_by_subscription(*, book, window: Window, customer_id=None,
                             subscription_id=None) -> dict[UUID, Invoiced]:
    """Subscription id -> its Billed and Collected in the window."""
    rows = (_invoices(book=book, window=window, customer_id=customer_id, subscription_id=subscription_id)
            .values("subscription_id")
            .annotate(billed=Sum("total", filter=Q(status__in=BILLED)),
                      # What was paid beyond the total is owed back to the customer, not collected.
                      collected=Sum(Least("amount_paid", "total"), filter=Q(status__in=COLLECTED))))
    return {row["subscription_id"]: Invoiced(row["billed"] or ZERO, row["collected"] or ZERO) for row in rows}
