"""Usage events for the matters tests, written as the usage recording path writes them: the ledger rows
first, then the ingestion seam in the same transaction."""
from decimal import Decimal

import pytest
from django.db import transaction

from core import clock
from customers.models import Agent, Customer, EventStatus, RollupBacklog, Signal, UsageEvent
from matters.ingestion import matters_attribute_new_events


def usage_event(book, *, customer="cust-1", agent="agent-1", signal="reports", cost="1.25", tag=None,
                metadata=None, usage_date=None, quantity="1") -> UsageEvent:
    """A ledger row, not yet attributed to any matter; `cost=None` is an unresolved cost."""
    customer_row, _ = Customer.objects.get_or_create(book=book, external_id=customer, defaults={"name": customer})
    agent_row, _ = Agent.objects.get_or_create(book=book, agent_code=agent, defaults={"name": f"{agent} name"})
    signal_row, _ = Signal.objects.get_or_create(book=book, agent=agent_row, name=signal,
                                                 defaults={"short_name": signal})
    metadata = dict(metadata or {}, **({"matterId": tag} if tag is not None else {}))
    event = UsageEvent.objects.create(
        book=book, customer=customer_row, agent=agent_row, signal=signal_row, customer_external_id=customer,
        agent_code=agent, signal_name=signal, quantity=Decimal(quantity),
        usage_cost=None if cost is None else Decimal(cost),
        event_status=EventStatus.NEEDS_COST_BACKFILL if cost is None else EventStatus.PROCESSED,
        usage_date=usage_date or clock.now(), metadata=metadata)
    RollupBacklog.objects.create(event_id=event.pk, book_id=book.pk, usage_date=event.usage_date)  # as recorded
    return event


@pytest.fixture
def record(book):
    """record(**usage_event kwargs) -> UsageEvent, attributed at record time through the seam."""
    def make(*, into=None, **fields) -> UsageEvent:
        target = into or book
        with transaction.atomic():
            event = usage_event(target, **fields)
            matters_attribute_new_events(book=target, events=[event])
        return event
    return make


@pytest.fixture
def unattributed(book):
    """unattributed(**usage_event kwargs) -> UsageEvent recorded before any matter or rule existed."""
    def make(**fields) -> UsageEvent:
        return usage_event(book, **fields)
    return make
