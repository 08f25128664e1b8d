"""Credit pools: the live countdown of every subscription whose plan sells a pool (spec §2 "Credit balance row").

A pool is the plan's active credit-pool strategy for the subscription's agent (the oldest if there are several);
a period whose invoice captured its terms has the pool those terms sell (`period_pool`), as its invoice bills it.
Each billing period (the subscription's stored current period) refills it with `poolSizeUnits`. Usage of the
strategy's signal draws from it: the current period's grant first, then top-ups, which never expire.

    consumedUnits          = what the subscription bills of the current period (`billing.pricing.usage`, as the
                             invoice: the quantity of the events it claims on the pool's signal)
    remainingUnits         = poolSizeUnits + top-up balance - consumedUnits           (negative when overdrawn)
    overageInProgressUnits = max(billed quantity - poolSizeUnits, 0)                   (the invoice's own math)
    top-up balance         = all top-up units - units beyond the pool that ended periods took from top-ups

An ended period takes `min(max(consumed - pool, 0), top-up units granted before its end not yet drawn)` from
top-ups. The number is settled once on the period's grant (`CreditGrant.topup_units_drawn`, written by
`credit_pool_sync`); until then reads compute it the same way. Reads therefore touch one period of the ledger.
"""
import hashlib
import time
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from uuid import UUID, uuid4

from django.conf import settings
from django.core.cache import cache
from django.db.models import Exists, OuterRef, Q, QuerySet, Subquery, Sum, Value
from django.db.models.functions import Coalesce

from billing.models import ChargeType, CreditGrant, Invoice, InvoiceStatus, PricingModel, PricingStrategy, Subscription
from billing.pricing.engine import StrategyTerms, billed_quantity
from billing.pricing.lines import pool_units
from billing.pricing.terms import (PlanTerms, PricedStrategy, TermsTimeline, periods_from, priced_strategy,
                                   terms_timelines)
from billing.pricing.usage import billed_usage, customer_timelines
from core.errors import NotFound
from core.money import SUMS, ZERO, ExactField, decimal_or_none, quantized, sum_exactly
from core.scoping import not_found, owned
from customers.usage_sums import ledger_snapshot

HUNDRED = Decimal(100)
PERCENT_PLACES = Decimal("0.01")
# The console's "near empty": a pool with this percent or less left (its dashboard figure and its list filter).
NEAR_EMPTY_PERCENT = Decimal(20)
CACHE_SECONDS = 30  # spec §8: credit balance reads may be cached up to 30 seconds, privately
PERIOD, TOPUP = CreditGrant.Kind.PERIOD, CreditGrant.Kind.TOPUP
# A credit-pool strategy in an invoice's captured terms (`PlanTerms` documents, billing/pricing/terms.py).
CAPTURED_POOL = {"chargeType": ChargeType.USAGE.value, "pricingModel": PricingModel.CREDIT_POOL.value}


@dataclass(frozen=True)
class Pool:
    """What a subscription's credit-pool strategy sells."""

    strategy_id: UUID
    signal_id: UUID | None
    size: Decimal  # units per billing period (tier 1's upper)
    overage_rate: Decimal | None  # tier 2's rate; None when the tiers cannot say
    terms: StrategyTerms | None  # None when the tiers cannot be priced

    def overage_units(self, consumed: Decimal) -> Decimal:
        """Units the period's invoice bills beyond the pool (after minimumCommitment), whatever the top-ups."""
        billed = billed_quantity(consumed, self.terms) if self.terms is not None else consumed
        return max(SUMS.subtract(billed, self.size), ZERO)


def _tier_value(tiers, index: int, key: str) -> Decimal | None:
    if not isinstance(tiers, list) or len(tiers) <= index or not isinstance(tiers[index], dict):
        return None
    return decimal_or_none(tiers[index].get(key))


def _priced_pool(strategy: PricedStrategy) -> Pool:
    terms = strategy.priced_terms
    return Pool(strategy.id, strategy.signal_id, terms.tiers[0].upper, terms.tiers[1].rate, terms)


def pool_of(strategy: PricingStrategy) -> Pool | None:
    """The pool a credit-pool strategy sells; None when its tiers do not even give a positive pool size."""
    priced = priced_strategy(strategy)
    if priced.priced_terms is not None:  # None: tiers stored by an older rule or by hand
        return _priced_pool(priced)
    size = _tier_value(strategy.tiers, 0, "upper")
    if size is None or size <= 0:
        return None
    return Pool(strategy.pk, strategy.signal_id, size, _tier_value(strategy.tiers, 1, "rate"), None)


def pool_strategies(*, book) -> QuerySet:
    """Strategies that sell a pool: usage, credit_pool, active, not deleted; the oldest one counts."""
    return owned(PricingStrategy, book).filter(
        charge_type=ChargeType.USAGE, pricing_model=PricingModel.CREDIT_POOL, active=True, deleted_at__isnull=True,
    ).select_related("signal").order_by("created_at", "id")


def pool_for(subscription: Subscription) -> Pool | None:
    """The pool the subscription's plan sells to its agent, or None."""
    strategy = pool_strategies(book=subscription.book_id).filter(plan_id=subscription.plan_id,
                                                                 agent_id=subscription.agent_id).first()
    return pool_of(strategy) if strategy is not None else None


def pool_in(terms: PlanTerms) -> Pool | None:
    """The pool these terms sell: their oldest credit-pool usage strategy (terms keep the plan's order)."""
    for strategy in terms.strategies:
        if strategy.is_usage and strategy.pricing_model == PricingModel.CREDIT_POOL and strategy.priced_terms:
            return _priced_pool(strategy)
    return None


def period_pool(timeline: TermsTimeline, start: datetime, plan_pool: Pool | None) -> Pool | None:
    """The pool of the subscription's period that starts at `start`: the one its invoice captured, so that what
    the period drew agrees with the overage that invoice bills (an invoice keeps what was reviewed, also after
    a PATCH of agentId or a new pool size), else the plan's pool as it is now (`plan_pool`), as a period with
    no invoice yet is priced."""
    for piece in timeline.pieces:
        if piece.invoice_id is not None and piece.start <= start and (piece.end is None or start < piece.end):
            return pool_in(piece.terms) or plan_pool
    return plan_pool


def timeline_of(subscription: Subscription) -> TermsTimeline:
    return terms_timelines(book=subscription.book_id, subscriptions=[subscription])[subscription.pk]


def pool_subscription_ids(*, book, customer_ids) -> list[str]:
    """Ids of these customers' subscriptions whose plan sells a pool: what usage recording asks the alert task
    (`billing.evaluate_credit_pool_alerts`) to evaluate after a batch."""
    subscriptions = owned(Subscription, book).filter(customer_id__in=list(customer_ids),
                                                     plan__strategies__in=pool_strategies(book=book))
    return [str(pk) for pk in subscriptions.values_list("pk", flat=True).distinct()]


def has_active_period(subscription: Subscription, now: datetime) -> bool:
    """A pool draws from the first moment of its stored current period (contract.md) until that period ends."""
    start, end = subscription.current_period_start, subscription.current_period_end
    return start is not None and end is not None and start <= now < end


# --------------------------------------------------------------------------- settling ended periods

@dataclass(frozen=True)
class Settlement:
    """What one ended billing period drew: its consumption and the part of it beyond the pool paid by top-ups."""

    start: datetime
    end: datetime
    pool_size: Decimal
    consumed: Decimal
    topup_drawn: Decimal
    grant_id: UUID | None  # None: no grant row exists for this period yet (a period the rollover skipped)
    pool: Pool | None = None  # the period's pool, its size the period's share
    remaining: Decimal = ZERO  # what the period closed with: its pool and the top-ups it could draw, less its use


def topup_draw(*, consumed: Decimal, pool_size: Decimal, available: Decimal) -> Decimal:
    """The period grant is drawn first: only units beyond the pool come out of top-ups, as far as they reach."""
    return max(min(SUMS.subtract(consumed, pool_size), available), ZERO)


def period_grants(subscription: Subscription) -> QuerySet:
    """The subscription's period grants (not its top-ups)."""
    return owned(CreditGrant, subscription.book_id).filter(subscription=subscription, kind=PERIOD)


def _ungranted_periods(subscription: Subscription, now: datetime) -> list[tuple[datetime, datetime]]:
    """Ended periods without a grant row: those the rollover skipped between the last grant and the stored
    period (the job was not run for a while), and the stored period itself once it has ended."""
    start, end = subscription.current_period_start, subscription.current_period_end
    if start is None:
        return []
    grants = period_grants(subscription)
    missing = []
    last = grants.filter(period_start__lt=start).order_by("-period_start").first()
    if last is not None and last.period_end < start:
        for period in periods_from(subscription, last.period_end):
            if period.start >= start:
                break
            missing.append((period.start, min(period.end, start)))
    if end is not None and now >= end and not grants.filter(period_start=start).exists():
        missing.append((start, end))
    return missing


def pending_settlements(subscription: Subscription, plan_pool: Pool | None, now: datetime,
                        recorded_by: dict | None = None) -> list[Settlement]:
    """Every ended period not settled yet, oldest first, with what it draws from top-ups (each period measured
    against its own pool: `period_pool`), counting the events recorded by `now`, the instant a settlement is
    stamped with. `recorded_by`: period start -> the instant a period was settled at before, when the verifier
    settles it again; it counts the events recorded by then, as that settlement did (a settlement is final: usage
    recorded for the period later does not move it). Given `recorded_by`, only those periods are settled: a
    first settlement is the alert job's or a top-up's, which wait for the book's batches still committing (a settle
    again runs inside a caller's transaction, where it cannot wait, and would count a just-ended period without the
    batch dated in it that is committing now, for good)."""
    grants = period_grants(subscription)
    drawn = grants.filter(settled_at__isnull=False, period_end__lte=now).aggregate(
        total=Sum("topup_units_drawn"))["total"] or ZERO
    periods = [(grant.period_start, grant.period_end, grant.pk)
               for grant in grants.filter(settled_at__isnull=True, period_end__lte=now)]
    periods += [(start, end, None) for start, end in _ungranted_periods(subscription, now)]
    if recorded_by is not None:
        periods = [period for period in periods if period[0] in recorded_by]
    topups = list(owned(CreditGrant, subscription.book_id).filter(subscription=subscription, kind=TOPUP)
                  .values_list("granted_at", "units"))
    settlements = []
    # Read once for every period: the pools in force and the claims of the customer's subscriptions.
    timelines = customer_timelines(book=subscription.book_id, subscriptions=[subscription]) if periods else {}
    for start, end, grant_id in sorted(periods, key=lambda period: period[0]):
        pool = period_pool(timelines[subscription.pk], start, plan_pool)
        if pool is None:  # a period of no pool (the plan sells none now, and no invoice of it captured one)
            continue
        # Counted as recorded by the instant the settlement is stamped with (`now` for a first one), which is what
        # the verifier compares it with: a batch recorded after the job's clock read, committed before its read of
        # the ledger, is late usage for it as for the verifier.
        consumed = billed_usage(book=subscription.book_id, windows={subscription: (start, end)}, timelines=timelines,
                                recorded_by=(recorded_by or {}).get(start, now)).get((subscription.pk, pool.signal_id),
                                                                                      ZERO)
        available = SUMS.subtract(sum_exactly(units for granted_at, units in topups if granted_at < end), drawn)
        size = pool_units(subscription, start, end, pool.size)
        taken = topup_draw(consumed=consumed, pool_size=size, available=available)
        drawn = SUMS.add(drawn, taken)
        settlements.append(Settlement(start, end, size, consumed, taken, grant_id, replace(pool, size=size),
                                      SUMS.subtract(SUMS.add(size, available), consumed)))
    return settlements


# --------------------------------------------------------------------------- balance rows

@dataclass(frozen=True)
class CreditBalance:
    subscription: Subscription
    pool: Pool  # the running period's pool, its size the period's share (`pool_units`)
    # The pool the plan sells today, whole: what a sync of the subscription starts from; None when it sells none
    # and the row is the pool of the running period's invoice, which captured one.
    plan_pool: Pool | None
    period_start: datetime | None
    period_end: datetime | None
    consumed_units: Decimal
    remaining_units: Decimal
    overage_in_progress_units: Decimal
    remaining_percent: Decimal
    no_active_period: bool
    implicit_full_pool: bool
    needs_settling: bool  # an ended period's draw on top-ups is not written down yet


def remaining_percent(remaining: Decimal, pool_size: Decimal) -> Decimal:
    """remainingUnits as a percent of the pool, to two places (half-up); negative when overdrawn. A pool share of
    0 units (the old side of a plan change on the day its period started) is empty."""
    if pool_size <= 0:
        return ZERO
    return quantized(SUMS.divide(SUMS.multiply(remaining, HUNDRED), pool_size), PERCENT_PLACES)


def _below(balance: CreditBalance, percent: Decimal) -> bool:
    """Whether the balance is at or below `percent` of its pool, exactly: the shown remainingPercent is rounded to
    two places, so 40 units left of a million read 0.00 and `belowPercent=0` ("at or past zero") listed them. A
    pool share of 0 units is at zero, or past it by what it used."""
    remaining, size = balance.remaining_units, balance.pool.size
    if size <= 0:
        return remaining <= 0 if percent >= 0 else remaining < 0
    return SUMS.multiply(remaining, HUNDRED) <= SUMS.multiply(percent, size)


def _annotated(book, now: datetime) -> QuerySet:
    """Subscriptions that have a pool, with what a balance row needs, each a correlated subquery on an index: the
    plan sells one, or the invoice of the stored period captured terms that sell one (its strategy replaced since:
    the period is measured against the pool its invoice bills)."""
    strategy = pool_strategies(book=book).filter(plan=OuterRef("plan"), agent=OuterRef("agent"))
    captured = (owned(Invoice, book).filter(subscription=OuterRef("pk"), period_start__lte=OuterRef("current_period_start"),
                                            period_end__gt=OuterRef("current_period_start"),
                                            pricing_terms__strategies__contains=[CAPTURED_POOL])
                .exclude(status=InvoiceStatus.VOID))
    period_grants = CreditGrant.objects.filter(subscription=OuterRef("pk"), kind=PERIOD)
    per_subscription = CreditGrant.objects.filter(subscription=OuterRef("pk")).order_by().values("subscription")
    return (owned(Subscription, book).select_related("customer", "plan")
            .annotate(pool_strategy_id=Subquery(strategy.values("pk")[:1]), pool_captured=Exists(captured))
            .filter(Q(pool_strategy_id__isnull=False) | Q(pool_captured=True))
            .annotate(
                topup_units=Coalesce(Subquery(per_subscription.filter(kind=TOPUP).annotate(total=Sum("units"))
                                              .values("total"), output_field=ExactField()), Value(ZERO)),
                settled_topup_draw=Coalesce(Subquery(
                    per_subscription.filter(kind=PERIOD, settled_at__isnull=False, period_end__lte=now)
                    .annotate(total=Sum("topup_units_drawn")).values("total"), output_field=ExactField()),
                    Value(ZERO)),
                unsettled_ended=Exists(period_grants.filter(settled_at__isnull=True, period_end__lte=now)),
                has_current_grant=Exists(period_grants.filter(period_start=OuterRef("current_period_start"))),
                current_grant_open=Exists(period_grants.filter(period_start=OuterRef("current_period_start"),
                                                               settled_at__isnull=True)),
                last_grant_end=Subquery(period_grants.filter(period_start__lt=OuterRef("current_period_start"))
                                        .order_by("-period_start").values("period_end")[:1]),
            ))


def _needs_settling(subscription: Subscription, now: datetime) -> bool:
    start, end = subscription.current_period_start, subscription.current_period_end
    skipped = start is not None and subscription.last_grant_end is not None and subscription.last_grant_end < start
    # The stored period ended without its settlement: no grant yet, or one written before an end cut the period.
    stored_ended = (end is not None and now >= end
                    and (not subscription.has_current_grant or subscription.current_grant_open))
    return subscription.unsettled_ended or skipped or stored_ended


def needs_settling(*, book, subscription_id, now: datetime) -> bool:
    """Whether a sync of the subscription now settles an ended period (a balance row's `needs_settling`, one read):
    what makes a writer wait for the book's batches still committing before it syncs."""
    subscription = _annotated(book, now).filter(pk=subscription_id).first()
    return subscription is not None and _needs_settling(subscription, now)


def _balance(subscription: Subscription, plan_pool: Pool | None, pool: Pool, now: datetime,
             period_consumed: Decimal) -> CreditBalance:
    """`pool`: the running period's pool (`period_pool`)."""
    active = has_active_period(subscription, now)
    if active:  # a period a plan change splits grants each side its share of the pool
        pool = replace(pool, size=pool_units(subscription, subscription.current_period_start,
                                             subscription.current_period_end, pool.size))
    # Units are added in SUMS: a record's quantity may have 649 digits, the default context keeps 28.
    topup_balance = SUMS.subtract(subscription.topup_units, subscription.settled_topup_draw)
    needs_settling = _needs_settling(subscription, now)
    if subscription.topup_units > 0 and needs_settling:
        topup_balance = SUMS.subtract(topup_balance, sum_exactly(
            s.topup_drawn for s in pending_settlements(subscription, plan_pool, now)))
    consumed = period_consumed if active else ZERO
    remaining = SUMS.subtract(SUMS.add(pool.size, topup_balance), consumed)
    return CreditBalance(
        subscription=subscription, pool=pool, plan_pool=plan_pool,
        period_start=subscription.current_period_start if active else None,
        period_end=subscription.current_period_end if active else None,
        consumed_units=consumed, remaining_units=remaining,
        overage_in_progress_units=pool.overage_units(consumed) if active else ZERO,
        remaining_percent=remaining_percent(remaining, pool.size),
        no_active_period=not active, implicit_full_pool=not (active and subscription.has_current_grant),
        needs_settling=needs_settling)


def settled_balance(subscription: Subscription, settlement: Settlement, plan_pool: Pool | None) -> CreditBalance:
    """The balance an ended period closed with, as its settlement writes it down: what the pool alerts judge of a
    period that ended before an evaluation saw its last part."""
    return CreditBalance(
        subscription=subscription, pool=settlement.pool, plan_pool=plan_pool, period_start=settlement.start,
        period_end=settlement.end, consumed_units=settlement.consumed, remaining_units=settlement.remaining,
        overage_in_progress_units=settlement.pool.overage_units(settlement.consumed),
        remaining_percent=remaining_percent(settlement.remaining, settlement.pool.size), no_active_period=False,
        implicit_full_pool=False, needs_settling=False)


def _balances(book, subscriptions: QuerySet, now: datetime) -> list[CreditBalance]:
    # One snapshot: a balance subtracts the draws of settled periods (the rows' annotations) and of periods not
    # settled yet (`pending_settlements`, later statements); a settlement committing between them was in neither.
    with ledger_snapshot():
        return _balances_in_snapshot(book, subscriptions, now)


def _balances_in_snapshot(book, subscriptions: QuerySet, now: datetime) -> list[CreditBalance]:
    rows = list(subscriptions)
    strategies = PricingStrategy.objects.select_related("signal").in_bulk(
        {row.pool_strategy_id for row in rows if row.pool_strategy_id is not None})
    pools = {None: None, **{pk: pool_of(strategy) for pk, strategy in strategies.items()}}
    rows = [row for row in rows if pools[row.pool_strategy_id] or row.pool_captured]
    running = [row for row in rows if has_active_period(row, now)]
    timelines = customer_timelines(book=book, subscriptions=running) if running else {}
    running_pools = {row.pk: period_pool(timelines[row.pk], row.current_period_start, pools[row.pool_strategy_id])
                     for row in running}
    # A row whose pool is only its running period's invoice's has none outside that period.
    rows = [row for row in rows if pools[row.pool_strategy_id] or running_pools.get(row.pk)]
    consumed = billed_usage(book=book, windows={row: (row.current_period_start, row.current_period_end)
                                                for row in running}, timelines=timelines)
    balances = []
    for row in rows:
        plan_pool = pools[row.pool_strategy_id]
        pool = running_pools.get(row.pk, plan_pool)
        balances.append(_balance(row, plan_pool, pool, now, consumed.get((row.pk, pool.signal_id), ZERO)))
    return balances


def credit_balance_list(*, book, now: datetime, customer_id: UUID | None = None, agent_id: UUID | None = None,
                        below_percent: Decimal | None = None, subscription_ids=None) -> list[CreditBalance]:
    """One row per subscription whose plan sells a pool, emptiest first (lowest remainingPercent; then fewest
    remaining units, then oldest). `below_percent` keeps pools with that percent or less left."""
    subscriptions = _annotated(book, now)
    if subscription_ids is not None:
        subscriptions = subscriptions.filter(pk__in=list(subscription_ids))
    if customer_id is not None:
        subscriptions = subscriptions.filter(customer_id=customer_id)
    if agent_id is not None:
        subscriptions = subscriptions.filter(agent_id=agent_id)
    balances = _balances(book, subscriptions.order_by("created_at", "id"), now)
    if below_percent is not None:
        balances = [balance for balance in balances if _below(balance, below_percent)]
    return sorted(balances, key=lambda balance: (balance.remaining_percent, balance.remaining_units))


def credit_balance_get(*, book, subscription_id, now: datetime) -> CreditBalance:
    """The balance row of one subscription; 404 when it is not in the book or its plan sells no pool."""
    try:
        subscription_id = UUID(str(subscription_id))
    except ValueError:
        raise not_found(Subscription)
    balances = _balances(book, _annotated(book, now).filter(pk=subscription_id), now)
    if balances:
        return balances[0]
    if owned(Subscription, book).filter(pk=subscription_id).exists():
        raise NotFound("This subscription's plan sells no credit pool, so it has no credit balance.")
    raise not_found(Subscription)


# --------------------------------------------------------------------------- the 30-second cache

def _generation_key(book_id) -> str:
    return f"credit-balances:generation:{book_id}"


def balance_cache_refresh(*, book_id) -> None:
    """Start a new cache generation for the book: the next read computes. Top-ups and pause changes call it, so
    the caller sees them at once; so does the follow-up of recorded usage (billing/tasks.py), so a batch shows a
    few seconds after its answer rather than when a cached answer expires (contract: "Derived figures")."""
    cache.set(_generation_key(book_id), uuid4().hex, None)


def cached_read(*, book, what: str, compute) -> tuple[object, int]:
    """`compute()` (a JSON-ready answer) kept in the shared cache for 30 seconds per book and query, and how many
    whole seconds ago it was computed (the answer's HTTP `Age`: a client keeping it `max-age=30` counts from the
    computation, not from the read, so an answer is never used past 30 seconds old). Without a shared cache (no
    `REDIS_URL`: each web process has a cache of its own) every read computes: a top-up or a pause change made
    through another process shows at once, and reads never go back in time from one process to the next."""
    if not settings.CACHE_SHARED:
        return compute(), 0
    digest = hashlib.sha256(what.encode()).hexdigest()
    # v2: an answer is held with when it was computed (a deploy never reads an older entry as one).
    key = f"credit-balances:v2:{book.pk}:{cache.get(_generation_key(book.pk), '0')}:{digest}"
    held = cache.get(key)
    if held is None:
        held = (compute(), time.time())
        cache.set(key, held, CACHE_SECONDS)
    answer, computed_at = held
    return answer, min(CACHE_SECONDS, max(0, int(time.time() - computed_at)))
