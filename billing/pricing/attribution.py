"""Which subscription an event belongs to.

Billing (contract: "One subscription bills an event"): an event is billed at most once, by the
earliest-started subscription of its customer and agent that runs at its `usageDate` and whose plan has
an active usage strategy on its signal (ties: lowest id), except that the events a final invoice billed stay
with that invoice's subscription, as it stored them (`Invoice.billed_claims`; contract: "Invoices keep what was
reviewed": a subscription created later with an earlier start, or a strategy added later, would otherwise bill
them again). "Has" is read with the terms in force at that
instant (`terms.py`): an invoiced period's captured terms, the current strategies elsewhere; the agent is
the one those terms were written for (an invoice keeps the agent it priced after a PATCH of agentId). Invoices,
revenue labels, MRR and credit pools all sum the claims this module computes, so no event is billed by
two subscriptions and no report gives it to another one than its invoice does.

Cost: an event's cost belongs to the earliest-started subscription (ties: lowest id) of its customer and
agent whose life holds its `usageDate`, whatever the signal: cost events are usually recorded under
signals no strategy bills, and a subscription's margin must still carry them. An event no subscription
covers is an orphan.

Both rules come out as disjoint intervals per (customer, agent[, signal]), so sums over them are exact.
"""
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from billing.models import Subscription
from billing.pricing.terms import TermsTimeline, life_of


@dataclass(frozen=True)
class Claim:
    """The events of one customer, agent and signal in `[start, end)` (end None: open) that one
    subscription bills."""

    subscription_id: UUID
    customer_id: UUID
    agent_id: UUID
    signal_id: UUID
    start: datetime
    end: datetime | None

    def clip(self, start: datetime, end: datetime) -> tuple[datetime, datetime] | None:
        lo, hi = max(self.start, start), end if self.end is None else min(self.end, end)
        return (lo, hi) if lo < hi else None


def priority(subscription: Subscription) -> tuple:
    """Earliest-started first; ties: lowest id."""
    return subscription.start_date, str(subscription.pk)


def uncovered(start: datetime, end: datetime | None, covered: list[tuple[datetime, datetime | None]]):
    """The parts of [start, end) outside the `covered` intervals (sorted by start, disjoint)."""
    pieces, cursor = [], start
    for lo, hi in covered:
        if end is not None and lo >= end:
            break
        if hi is not None and hi <= cursor:
            continue
        if lo > cursor:
            pieces.append((cursor, lo if end is None else min(lo, end)))
        if hi is None:
            return pieces
        cursor = max(cursor, hi)
    if end is None or cursor < end:
        pieces.append((cursor, end))
    return pieces


def _by_pair(subscriptions: Iterable[Subscription]) -> dict:
    pairs = defaultdict(list)
    for subscription in subscriptions:
        pairs[(subscription.customer_id, subscription.agent_id)].append(subscription)
    return {pair: sorted(group, key=priority) for pair, group in pairs.items()}


def billing_claims(timelines: dict[UUID, TermsTimeline]) -> dict[UUID, list[Claim]]:
    """Subscription id -> the events it bills, for timelines given with every other subscription of the
    same customer (so overlaps are settled).

    A piece of a timeline bills the agent its terms were written for: the subscription's agent for current
    terms, the agent it had when an invoice captured them for that invoice's period (a subscription whose
    agentId changed keeps billing the old agent's usage in the periods its invoices priced that way)."""
    by_customer = defaultdict(list)
    for timeline in timelines.values():
        by_customer[timeline.subscription.customer_id].append(timeline.subscription)
    claims: dict[UUID, list[Claim]] = {}
    for customer_id, group in by_customer.items():
        covered: dict[tuple, list] = defaultdict(list)  # (agent id, signal id) -> intervals already claimed
        ordered = sorted(group, key=priority)

        def claim(subscription, agent_id, signal_id, start, end):
            key = (agent_id, signal_id)
            pieces = uncovered(start, end, covered[key])
            claims[subscription.pk].extend(Claim(subscription.pk, customer_id, agent_id, signal_id, lo, hi)
                                           for lo, hi in pieces)
            covered[key] = sorted([*covered[key], *pieces], key=lambda interval: interval[0])

        for subscription in ordered:
            claims[subscription.pk] = []
        # First what final invoices billed, as they stored it: those events stay theirs, also when a subscription
        # created later starts earlier (a backdated one) or a strategy is added later, either of which would
        # otherwise bill them a second time. A final invoice claims nothing beyond what it billed.
        for subscription in ordered:
            for piece in timelines[subscription.pk].pieces:
                for agent_id, signal_id, start, end in piece.billed or ():
                    claim(subscription, agent_id, signal_id, start, end)
        for subscription in ordered:
            for piece in timelines[subscription.pk].pieces:
                if piece.billed is not None:
                    continue
                billed = piece.terms.billed_agents
                for signal_id in sorted(billed, key=str):
                    claim(subscription, billed[signal_id], signal_id, piece.start, piece.end)
        for subscription in ordered:
            claims[subscription.pk].sort(key=lambda found: found.start)
    return claims


def cost_intervals(subscriptions: Iterable[Subscription]) -> dict[UUID, list[tuple]]:
    """Subscription id -> the disjoint `(customer id, agent id, start, end)` intervals whose events' cost it
    carries, for subscriptions given with every other subscription of the same customer and agent."""
    intervals: dict = {}
    for (customer_id, agent_id), group in _by_pair(subscriptions).items():
        covered: list[tuple[datetime, datetime | None]] = []
        for subscription in group:
            start, end = life_of(subscription)
            if end is not None and end <= start:
                intervals[subscription.pk] = []
                continue
            pieces = uncovered(start, end, covered)
            intervals[subscription.pk] = [(customer_id, agent_id, lo, hi) for lo, hi in pieces]
            covered = sorted([*covered, *pieces], key=lambda interval: interval[0])
    return intervals
