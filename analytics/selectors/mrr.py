"""Monthly recurring revenue (spec §4, `GET /v1/analytics/mrr`): the runRate and committed variants.

Per subscription active now (its status as the scheduled job makes it; internal customers left out), each as a
month's worth:
- recurring: every recurring fee, yearly ones divided by 12;
- seatBased: the seat strategy's pricing model on max(seatsCount, minimumCommitment) seats, likewise
  monthly-normalized;
- usage, runRate: the pricing model on the actual usage of the last 30 days `[now - 30 days, now)` as it is
  (contract: MRR runRate), no minimum (Agent-Earned of those 30 days);
- usage, committed: the pricing model on minimumCommitment units (none without a minimum: 0, but a credit pool's
  price, billed every period used or not).
One-time fees are not recurring and never count. The canonical variant is the invoices' (`invoiced.py`):
`{mrr, arr}` with arr = 12 x mrr; `all` is the three together.
"""
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Q

from analytics.selectors.coverage import signal_quantities
from analytics.selectors.invoiced import canonical_mrr
from billing.models import Subscription, SubscriptionStatus
from billing.pricing.attribution import billing_claims
from billing.pricing.engine import answered, charge_of
from billing.pricing.terms import current_terms, live_strategies, terms_timelines
from core.money import SUMS, ZERO, sum_exactly
from core.scoping import get_owned, owned
from customers.models import Customer
from customers.usage_sums import Window

CANONICAL, RUN_RATE, COMMITTED, ALL = "canonical", "runRate", "committed", "all"
RUN_RATE_DAYS = 30


@dataclass
class MrrRow:
    subscription: Subscription
    recurring: Decimal = ZERO
    seat_based: Decimal = ZERO
    usage: Decimal = ZERO

    @property
    def total(self) -> Decimal:
        return sum_exactly((self.recurring, self.seat_based, self.usage))


@dataclass
class Mrr:
    variant: str
    breakdown: list[MrrRow]

    @property
    def mrr(self) -> Decimal:
        return sum_exactly(row.total for row in self.breakdown)


# The row's column for each charge type's figure (`Charge.figure`); one-time fees are not monthly.
MRR_FIGURES = {"recurring": "recurring", "seat": "seat_based", "usage": "usage"}


@dataclass
class CanonicalMrr:
    mrr: Decimal
    variant: str = CANONICAL

    @property
    def arr(self) -> Decimal:
        return SUMS.multiply(self.mrr, 12)


@dataclass
class AllMrr:
    canonical: CanonicalMrr
    run_rate: Mrr
    committed: Mrr
    variant: str = ALL


def mrr_report(*, book, variant: str, now: datetime, customer_id=None,
               subscription_id=None) -> Mrr | CanonicalMrr | AllMrr:
    """MRR of one variant, optionally of one customer or one subscription (an id that is not a record of
    the book is a 404, as in the other analytics filters)."""
    if customer_id is not None:
        customer_id = get_owned(Customer, book, customer_id).pk
    if subscription_id is not None:
        subscription_id = get_owned(Subscription, book, subscription_id).pk
    scope = {"book": book, "customer_id": customer_id, "subscription_id": subscription_id}
    if variant in (RUN_RATE, COMMITTED):
        return mrr_breakdown(variant=variant, now=now, **scope)
    canonical = CanonicalMrr(canonical_mrr(now=now, **scope))
    if variant == CANONICAL:
        return canonical
    return AllMrr(canonical, mrr_breakdown(variant=RUN_RATE, now=now, **scope),
                  mrr_breakdown(variant=COMMITTED, now=now, **scope))


def mrr_breakdown(*, book, variant: str, now: datetime, customer_id=None, subscription_id=None) -> Mrr:
    """runRate or committed MRR of the book's active subscriptions (the ids already resolved), with their
    current terms; runRate usage is what each subscription bills of the last 30 days."""
    subscriptions = owned(Subscription, book).filter(_running(now), customer__is_internal=False)
    if customer_id is not None:
        subscriptions = subscriptions.filter(customer_id=customer_id)
    if subscription_id is not None:
        subscriptions = subscriptions.filter(pk=subscription_id)
    subscriptions = list(subscriptions.order_by("created_at", "id"))
    strategies = live_strategies(book=book, plan_ids={s.plan_id for s in subscriptions})
    usage = {}
    if variant == RUN_RATE and subscriptions:
        usage = _run_rate_usage(book=book, subscriptions=subscriptions, now=now)
    rows = []
    for subscription in subscriptions:
        row, terms = MrrRow(subscription), current_terms(subscription, strategies)
        for strategy in terms.strategies:
            charge = charge_of(strategy.charge_type)
            column = MRR_FIGURES.get(charge.figure)
            if column is None:
                continue
            quantity = usage.get((subscription.pk, strategy.signal_id)) if strategy.is_usage else None
            amount = answered(charge.monthly(strategy.terms, seats=terms.seats_count, run_rate_quantity=quantity,
                                             committed=variant == COMMITTED))
            setattr(row, column, SUMS.add(getattr(row, column), amount))
        rows.append(row)
    rows.sort(key=lambda row: (-row.total, str(row.subscription.id)))
    return Mrr(variant, rows)


def _running(now: datetime) -> Q:
    """The subscriptions active at `now`, as the scheduled job (`subscriptions_advance`) makes their status once it
    runs: stored `active`, or `upcoming` with its startDate reached; neither once its end has passed. Between two
    runs of the job the stored status lags behind an end or a start; MRR does not."""
    started = Q(status=SubscriptionStatus.ACTIVE) | Q(status=SubscriptionStatus.UPCOMING, start_date__lte=now)
    return started & ~Q(is_forever=False, end_date__lte=now)


def _run_rate_usage(*, book, subscriptions: list[Subscription], now: datetime) -> dict[tuple, Decimal]:
    """(subscription id, signal id) -> what the subscription bills of `[now - 30 days, now)`, its claims
    settled against every subscription of its customer (`billing.pricing.attribution`)."""
    pairs = owned(Subscription, book).filter(customer_id__in={s.customer_id for s in subscriptions})
    claims = billing_claims(terms_timelines(book=book, subscriptions=pairs))
    billed = [((claim.subscription_id, claim.signal_id), claim.customer_id, claim.agent_id, claim.start,
               claim.end, claim.signal_id) for s in subscriptions for claim in claims.get(s.pk, ())]
    return signal_quantities(book=book, window=Window(now - timedelta(days=RUN_RATE_DAYS), now), billed=billed)
