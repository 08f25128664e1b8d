"""Ledger segments for the analytics reads, from the pricing seam's attribution rules
(`billing.pricing.attribution`): cost segments (an event's cost belongs to the subscription whose life
holds it) and billing segments (the events a subscription bills, per signal and terms piece)."""
from collections.abc import Iterable

from billing.models import Subscription
from billing.pricing.attribution import cost_intervals
from core.money import SUMS, ZERO
from core.scoping import owned
from customers.models import Signal
from customers.usage_sums import Scope, Segment, Window, rollup_sums


def book_segments(*, book, customer_id=None) -> dict:
    """Subscription id -> the cost segments of every subscription of the book (or of one customer), each
    labelled with the subscription's id."""
    subscriptions = owned(Subscription, book).only("id", "customer_id", "agent_id", "start_date", "end_date",
                                                  "is_forever")
    if customer_id is not None:
        subscriptions = subscriptions.filter(customer_id=customer_id)
    return {subscription_id: [Segment(customer_id, agent_id, lo, hi, str(subscription_id))
                              for customer_id, agent_id, lo, hi in intervals]
            for subscription_id, intervals in cost_intervals(subscriptions).items()}


def signal_quantities(*, book, window: Window, billed: Iterable[tuple], scope: Scope | None = None) -> dict:
    """Key -> the quantity of the events each `(key, customer id, agent id, start, end, signal id)` of `billed`
    bills: that customer and agent, inside `[start, end)` (end None: open) and the window, of that signal.
    Keys are the caller's (any hashable); a key named by several entries adds them up.

    A subscription bills each of its signals over the same spans, so entries share their (customer, agent,
    span): each distinct span is read once, summed per signal, rather than once per signal, which read every
    event of the span as often as the plan has signals (the partial days at a window's edges are events,
    not rollup rows)."""
    pieces: dict[tuple, str] = {}
    keys: dict[tuple, list] = {}
    for key, customer_id, agent_id, start, end, signal_id in billed:
        piece = pieces.setdefault((customer_id, agent_id, start, end), str(len(pieces)))
        keys.setdefault((piece, signal_id), []).append(key)
    if not pieces:
        return {}
    rows = rollup_sums(book=book, window=window, scope=scope or Scope(), groups={"usage": ("label", "signal")},
                       measures=("quantity",),
                       segments=[Segment(customer_id, agent_id, start, end, piece)
                                 for (customer_id, agent_id, start, end), piece in pieces.items()])["usage"]
    # A deleted signal's id stays in the rollup while its events are orphaned (the ledger's SET_NULL): its rows
    # count for no terms, as the partial days read from the events do not (terms captured before the delete name it).
    existing = set(owned(Signal, book).filter(pk__in={row.key[1] for row in rows if row.key[1] is not None})
                   .values_list("pk", flat=True))
    quantities: dict = {}
    for row in rows:
        if row.key[1] not in existing:
            continue
        for key in keys.get((row.key[0], row.key[1]), ()):  # signal ids are UUIDs on both sides
            quantities[key] = SUMS.add(quantities.get(key, ZERO), row.quantity)
    return quantities
