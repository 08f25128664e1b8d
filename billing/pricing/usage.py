"""The billable usage of claims (`attribution.Claim`) in a window, straight from the ledger.

A usage strategy bills the window's TOTAL `quantity` of the events its subscription claims on its signal
(contract: "Signal types bill alike": a `volume` and a `usage` signal both bill the sum of the recorded
quantity; 0.5 bills 0.5, 0 bills 0). One statement for any number of claims: each event matches at most
one claim, since claims are disjoint per customer, agent and signal, so each claim's sum is an aggregate filtered
by its condition (`labelled_event_sums`): an invoice bills the events themselves, never the derived rollup.
"""
from collections.abc import Iterable
from datetime import datetime
from decimal import Decimal
from functools import reduce
from operator import or_
from uuid import UUID

from django.db.models import Q

from billing.models import Subscription
from billing.pricing.attribution import Claim, billing_claims
from billing.pricing.terms import TermsTimeline, terms_timelines
from core.scoping import owned
from customers.models import UsageEvent
from customers.usage_sums import labelled_event_sums


def _matching(claim: Claim, start: datetime, end: datetime) -> Q | None:
    window = claim.clip(start, end)
    if window is None:
        return None
    return Q(customer_id=claim.customer_id, agent_id=claim.agent_id, signal_id=claim.signal_id,
             usage_date__gte=window[0], usage_date__lt=window[1])


def claimed_quantities(*, book, claims: Iterable[Claim], start: datetime, end: datetime,
                       recorded_by: datetime | None = None) -> dict[tuple, Decimal]:
    """(subscription id, signal id) -> the quantity of the claimed events in `[start, end)` (missing: 0); with
    `recorded_by`, of those recorded by then only (what a settlement written at that instant read)."""
    by_key: dict[tuple, list[Q]] = {}
    for claim in claims:
        condition = _matching(claim, start, end)
        if condition is not None:
            by_key.setdefault((claim.subscription_id, claim.signal_id), []).append(condition)
    if not by_key:
        return {}
    # One label per (subscription, signal): a subscription's claims on one signal in several windows add up.
    labels = {key: reduce(or_, conditions) for key, conditions in by_key.items()}
    events = owned(UsageEvent, book).filter(reduce(or_, labels.values()))
    if recorded_by is not None:
        events = events.filter(created_at__lte=recorded_by)
    return {row.key[0]: row.quantity for row in labelled_event_sums(events, labels, measures=("quantity",))}


def customer_timelines(*, book, subscriptions) -> dict[UUID, TermsTimeline]:
    """The terms timelines of every subscription of these subscriptions' customers: what settling their claims
    needs. Three reads."""
    pairs = owned(Subscription, book).filter(customer_id__in={s.customer_id for s in subscriptions})
    return terms_timelines(book=book, subscriptions=pairs)


def billed_usage(*, book, windows: dict[Subscription, tuple],
                 timelines: dict[UUID, TermsTimeline] | None = None,
                 recorded_by: datetime | None = None) -> dict[tuple, Decimal]:
    """(subscription id, signal id) -> what each subscription bills of the ledger in its own window
    (`windows`: subscription -> (start, end)), its claims settled against every other subscription of its
    customer (`timelines`: their `customer_timelines`, when the caller read them already); with `recorded_by`,
    of the events recorded by then only. Four reads whatever the number of subscriptions."""
    if not windows:
        return {}
    return claims_usage(book=book, claims=window_claims(book=book, windows=windows, timelines=timelines),
                        recorded_by=recorded_by)


def window_claims(*, book, windows: dict[Subscription, tuple],
                  timelines: dict[UUID, TermsTimeline] | None = None) -> list[Claim]:
    """The claims of each subscription clipped to its own window (`windows`: subscription -> (start, end)), settled
    against every other subscription of its customer. Three reads."""
    if timelines is None:
        timelines = customer_timelines(book=book, subscriptions=list(windows))
    claims = billing_claims(timelines)
    clipped = []
    for subscription, (start, end) in windows.items():
        for claim in claims.get(subscription.pk, ()):
            window = claim.clip(start, end)
            if window is not None:
                clipped.append(Claim(claim.subscription_id, claim.customer_id, claim.agent_id, claim.signal_id,
                                     *window))
    return clipped


def claims_usage(*, book, claims: list[Claim], recorded_by: datetime | None = None) -> dict[tuple, Decimal]:
    """(subscription id, signal id) -> the quantity of the events of these (clipped) claims. One read."""
    if not claims:
        return {}
    return claimed_quantities(book=book, claims=claims, start=min(claim.start for claim in claims),
                              end=max(claim.end for claim in claims), recorded_by=recorded_by)
