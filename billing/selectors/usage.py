"""The billable quantity of a usage strategy in a window: the one definition that invoices and credit pools share.

A subscription's usage strategy counts the events of the strategy's signal that the subscription's customer
generated with the subscription's agent, `usage_date` in the half-open window `[start, end)`; the quantity is the
sum of their `quantity` (contract: a usage strategy bills on the window's TOTAL quantity). The index
`usage_event_pool_draw` (customer, agent, signal, usage_date) INCLUDE (quantity) answers it from the index alone.
"""
from datetime import datetime
from decimal import Decimal

from django.db.models import OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from config.core.money import ZERO, ExactField
from config.core.scoping import owned
from customers.models import UsageEvent

def strategy_usage_events(*, book, customer_id, agent_id, signal_id, start: datetime, end: datetime) -> QuerySet:
    """The events a usage strategy bills in `[start, end)`."""
    return owned(UsageEvent, book).filter(customer_id=customer_id, agent_id=agent_id, signal_id=signal_id,
                                          usage_date__gte=start, usage_date__lt=end)


def billable_quantity(*, book, customer_id, agent_id, signal_id, start: datetime, end: datetime) -> Decimal:
    """The total quantity a usage strategy bills in `[start, end)` (0 without events)."""
    events = strategy_usage_events(book=book, customer_id=customer_id, agent_id=agent_id, signal_id=signal_id,
                                   start=start, end=end)
    return events.aggregate(total=Sum("quantity"))["total"] or ZERO


def billable_quantity_subquery(*, signal: str, start: str, end: str, customer: str = "customer_id",
                               agent: str = "agent_id"):
    """The same total as a correlated subquery of an outer queryset that has a `book`; the arguments name the
    outer columns or annotations holding the customer, agent, signal and window."""
    events = (UsageEvent.objects.filter(book=OuterRef("book"), customer_id=OuterRef(customer),
                                        agent_id=OuterRef(agent), signal_id=OuterRef(signal),
                                        usage_date__gte=OuterRef(start), usage_date__lt=OuterRef(end))
              .order_by().values("customer_id").annotate(total=Sum("quantity")).values("total"))
    return Coalesce(Subquery(events, output_field=ExactField()), Value(ZERO), output_field=ExactField())
