"""Which subscription an event belongs to: the one rule cost-by-plan, MRR usage and revenue share.

An event belongs to the subscription of its customer and agent whose life `[startDate, endDate)` (open
when `isForever` or without an end) holds its `usageDate`, whatever the subscription's status. Where
lives of one customer and agent overlap (two plans for the same agent), the subscription that started
first (then the one created first) takes the overlap. An event no subscription covers is an orphan.

The rule is turned into disjoint segments per subscription, which `ledger.ledger_sums` sums exactly.
"""
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from billing.models import Subscription
from billing.selectors.analytics.ledger import Segment
from billing.selectors.subscriptions import effective_end
from config.core.scoping import owned


def _uncovered(start: datetime, end: datetime | None, covered: list[tuple[datetime, datetime | None]]):
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


def segments_of(subscriptions: Iterable[Subscription]) -> dict:
    """Subscription id -> its disjoint segments, for subscriptions given with every other subscription
    of the same customer and agent (so overlaps are settled)."""
    by_pair = defaultdict(list)
    for subscription in subscriptions:
        by_pair[(subscription.customer_id, subscription.agent_id)].append(subscription)
    segments: dict = {}
    for (customer_id, agent_id), group in by_pair.items():
        covered: list[tuple[datetime, datetime | None]] = []
        for subscription in sorted(group, key=lambda s: (s.start_date, s.created_at, s.id)):
            end = effective_end(subscription)
            if end is not None and end <= subscription.start_date:
                segments[subscription.id] = []
                continue
            pieces = _uncovered(subscription.start_date, end, covered)
            segments[subscription.id] = [Segment(customer_id, agent_id, lo, hi, str(subscription.id))
                                         for lo, hi in pieces]
            covered = sorted([*covered, *pieces], key=lambda interval: interval[0])
    return segments


def book_segments(*, book, customer_id=None) -> dict:
    """Segments of every subscription of the book (or of one customer)."""
    subscriptions = owned(Subscription, book).only("id", "customer_id", "agent_id", "start_date", "end_date",
                                                  "is_forever", "created_at")
    if customer_id is not None:
        subscriptions = subscriptions.filter(customer_id=customer_id)
    return segments_of(subscriptions)
