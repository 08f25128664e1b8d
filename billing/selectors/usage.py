"""The billable quantity of a usage strategy in a window: the one definition that invoices and credit pools share.

A subscription's usage strategy counts the events of the strategy's signal that the subscription's customer
generated with the subscription's agent, `usage_date` in the half-open window `[start, end)`, and bills the
window's TOTAL (contract: Tiers). Per event:
- a `usage` (outcome) signal counts `quantity`; an attempt that delivered no outcome is recorded with
  quantity 0 and bills nothing;
- a `volume` (activity) signal counts every event as at least one attempt: `max(quantity, 1)`.
Both are `max(quantity, floor)` with floor 0 or 1, which also works as a correlated subquery. The index
`usage_event_cust_agent_date` (customer, agent, usage_date) narrows the scan to the window.
"""
from datetime import datetime
from decimal import Decimal

from django.db.models import OuterRef, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce, Greatest

from config.core.money import ZERO, ExactField
from config.core.scoping import owned
from customers.models import SignalType, UsageEvent


def attempt_floor(signal_type: str) -> Decimal:
    """The least an event of this signal type counts: one attempt for `volume`, nothing for `usage`."""
    return Decimal(1) if signal_type == SignalType.VOLUME else ZERO


def _billable_units(floor):
    return Sum(Greatest("quantity", floor, output_field=ExactField()))


def strategy_usage_events(*, book, customer_id, agent_id, signal_id, start: datetime, end: datetime) -> QuerySet:
    """The events a usage strategy bills in `[start, end)`."""
    return owned(UsageEvent, book).filter(customer_id=customer_id, agent_id=agent_id, signal_id=signal_id,
                                          usage_date__gte=start, usage_date__lt=end)


def billable_quantity(*, book, customer_id, agent_id, signal_id, signal_type: str, start: datetime,
                      end: datetime) -> Decimal:
    """The total quantity a usage strategy bills in `[start, end)` (0 without events)."""
    events = strategy_usage_events(book=book, customer_id=customer_id, agent_id=agent_id, signal_id=signal_id,
                                   start=start, end=end)
    floor = Value(attempt_floor(signal_type), output_field=ExactField())
    return events.aggregate(total=_billable_units(floor))["total"] or ZERO


def billable_quantity_subquery(*, signal: str, signal_floor: str, start: str, end: str,
                               customer: str = "customer_id", agent: str = "agent_id"):
    """The same total as a correlated subquery of an outer queryset that has a `book`; the arguments name the
    outer columns or annotations holding the customer, agent, signal, its `attempt_floor` and the window."""
    events = (UsageEvent.objects.filter(book=OuterRef("book"), customer_id=OuterRef(customer),
                                        agent_id=OuterRef(agent), signal_id=OuterRef(signal),
                                        usage_date__gte=OuterRef(start), usage_date__lt=OuterRef(end))
              .order_by().values("customer_id").annotate(total=_billable_units(OuterRef(signal_floor)))
              .values("total"))
    return Coalesce(Subquery(events, output_field=ExactField()), Value(ZERO), output_field=ExactField())
