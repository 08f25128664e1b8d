"""The Revenue label of one customer, for callers outside analytics (customer alerts' revenue watches)."""
from datetime import datetime
from decimal import Decimal

from billing.selectors.analytics.ledger import Window
from billing.selectors.analytics.revenue import revenue_metrics


def customer_revenue_total(*, book, customer, start: datetime, end: datetime) -> Decimal:
    """Revenue (spec §1: Agent-Earned plus prorated recurring, seat and one-time fees) of one customer over
    `[start, end)`, as `GET /v1/customers/{id}/revenue` reports it; 0 for an internal customer."""
    return revenue_metrics(book=book, window=Window(start, end), customer=customer).revenue
