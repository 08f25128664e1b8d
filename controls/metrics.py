"""The one place a watch's metric is measured: a customer's cost or revenue in a window."""
from datetime import datetime
from decimal import Decimal

from analytics.selectors.revenue import customer_revenue_total
from accounts.models import Book
from core.scoping import owned
from controls.models import AlertMetric
from customers.models import Customer, UsageEvent
from customers.usage_sums import event_sums


def customer_metric_value(*, book: Book, customer: Customer, metric: str, start: datetime, end: datetime) -> Decimal:
    """The customer's `cost` (summed event cost; unpriced events add nothing) or `revenue` (the spec's Revenue
    label: Agent-Earned plus prorated fees, computed by analytics) over the half-open window [start, end)."""
    if metric == AlertMetric.COST:
        events = owned(UsageEvent, book).filter(customer=customer, usage_date__gte=start, usage_date__lt=end)
        [total] = event_sums(events, measures=("cost",))
        return total.cost
    if metric == AlertMetric.REVENUE:
        return customer_revenue_total(book=book, customer=customer, start=start, end=end)
    raise ValueError(f"Unknown watch metric {metric!r}")
