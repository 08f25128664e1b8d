"""Reads of customers, agents and signals, always within the caller's book."""
from django.db.models import QuerySet

from core.filtering import filtered
from core.scoping import get_owned, owned
from customers.filters import AgentFilter, CustomerFilter, SignalFilter, UsageEventFilter
from customers.models import Agent, Customer, EventStatus, Signal, UsageEvent, UsageEventKey


def customers_live(*, book) -> QuerySet:
    """The book's customers that are not soft-deleted: a deleted customer is unlisted and reads as 404."""
    return owned(Customer, book).filter(deleted_at__isnull=True)


def customer_get(*, book, customer_id) -> Customer:
    return get_owned(Customer, book, customer_id, queryset=customers_live(book=book))


def customer_list(*, book, params) -> QuerySet:
    return filtered(CustomerFilter, params, customers_live(book=book)).order_by("-created_at", "-id")


def agent_get(*, book, agent_id) -> Agent:
    return get_owned(Agent, book, agent_id)


def agent_list(*, book, params) -> QuerySet:
    return filtered(AgentFilter, params, owned(Agent, book)).order_by("-created_at", "-id")


def signal_get(*, book, signal_id) -> Signal:
    return get_owned(Signal, book, signal_id)


def signal_list(*, book, params) -> QuerySet:
    return filtered(SignalFilter, params, owned(Signal, book)).order_by("-created_at", "-id")


def usage_event_list(*, book, params) -> QuerySet:
    """The book's events, newest first, narrowed by the documented filters."""
    events = filtered(UsageEventFilter, params, owned(UsageEvent, book))
    if params.get("idempotencyKey"):
        # The key's event by its id from the keys' table: the partitioned ledger has no index of keys.
        holders = owned(UsageEventKey, book).filter(idempotency_key=params["idempotencyKey"])
        events = events.filter(id__in=holders.values("event_id"))
    return events.order_by("-usage_date", "-id")


def unpriced_event_count(*, book) -> int:
    """Events waiting for a cost (NEEDS_COST_BACKFILL: their model is not in the catalog); read through the
    partial index `usage_event_unpriced` (cost null), whatever the size of the ledger."""
    return owned(UsageEvent, book).filter(usage_cost__isnull=True, event_status=EventStatus.NEEDS_COST_BACKFILL).count()
