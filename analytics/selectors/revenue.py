"""RevenueMetrics (spec §1, §2, §4): Agent-Earned and Revenue over a window, against cost.

- Agent-Earned: for each billing period of a subscription that the window meets (an invoiced period as
  its invoice has it), each usage strategy's pricing model on the period's total of the events the
  subscription bills on the strategy's signal (`billing.pricing.attribution`); no minimum commitment, no
  fees, no proration (`engine.agent_earned`). A period the window cuts earns its share by quantity of what
  the whole period earns (`engine.agent_earned_within`), so that windows add up to periods. Every period
  is priced with the terms in force for it (`billing.pricing.terms`): its invoice's captured terms where
  one exists, the current strategies otherwise, never today's for an invoiced period.
- Revenue: Agent-Earned plus the recurring and seat fees recognized over the window, plus one-time fees
  of subscriptions that start in it. A fee is recognized evenly over the local days its billing period
  has (contract: Proration): a window holding d of a period's D days recognizes fee x d / D, where days
  a subscription does not cover count for nothing. Window edges inside a day count that day's fraction.
- Cost: the events of the scope in the window (orphans included at the top level; a subscription's row
  has the events attributed to it). Margin is label minus cost.

- Billed and Collected: from the invoices dated in the window (`invoiced.py`), where invoices exist.

Internal coding-agent usage never counts: internal customers' events and subscriptions are left out.
"""
import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from functools import lru_cache

from analytics.selectors.coverage import book_segments, signal_quantities
from analytics.selectors.invoiced import Invoiced, invoiced_by_subscription
from billing.models import BillingCycle, Subscription
from billing.pricing.attribution import Claim, billing_claims
from billing.pricing.engine import DaySpan, answered, charge_of, fee_for_period, side_terms
from billing.pricing.periods import local_date, local_midnight
from billing.pricing.terms import (PlanTerms, PricedStrategy, TermsTimeline, grid_cycle, life_of, life_timezones,
                                   subscription_terms, terms_timelines)
from billing.selectors.subscriptions import subscription_get
from core.errors import Unprocessable
from core.money import SUMS, ZERO, sum_exactly
from core.scoping import owned
from customers.models import Customer
from customers.selectors import customer_get
from customers.usage_sums import Scope, Sums, Window, grand_total, ledger_reads, rollup_sums

HUNDRED = Decimal(100)
FEE_AND_USAGE = ("usage", "recurring", "seat", "onetime")
COST_MEASURES = ("event_count", "unpriced_count", "cost")
MICROSECOND = timedelta(microseconds=1)


def percent_of(part: Decimal, whole: Decimal) -> Decimal | None:
    return None if whole == 0 else part * HUNDRED / whole


@dataclass
class RevenueFigures:
    """One scope's labels. `usage` is Agent-Earned; Revenue adds the fees."""

    usage: Decimal = ZERO
    recurring: Decimal = ZERO
    seat: Decimal = ZERO
    onetime: Decimal = ZERO
    cost: Decimal = ZERO
    event_count: int = 0
    unpriced_count: int = 0
    # From invoices (invoiced.py).
    billed: Decimal = ZERO
    collected: Decimal = ZERO

    @property
    def agent_earned(self) -> Decimal:
        return self.usage

    @property
    def revenue(self) -> Decimal:
        return sum_exactly((self.usage, self.recurring, self.seat, self.onetime))

    @property
    def agent_earned_margin(self) -> Decimal:
        return SUMS.subtract(self.agent_earned, self.cost)

    @property
    def agent_earned_margin_percent(self) -> Decimal | None:
        return percent_of(self.agent_earned_margin, self.agent_earned)

    @property
    def margin(self) -> Decimal:
        return SUMS.subtract(self.revenue, self.cost)

    @property
    def margin_percent(self) -> Decimal | None:
        return percent_of(self.margin, self.revenue)

    @property
    def billed_margin(self) -> Decimal:
        return SUMS.subtract(self.billed, self.cost)

    @property
    def billed_margin_percent(self) -> Decimal | None:
        return percent_of(self.billed_margin, self.billed)

    @property
    def collected_margin(self) -> Decimal:
        return SUMS.subtract(self.collected, self.cost)

    @property
    def collected_margin_percent(self) -> Decimal | None:
        return percent_of(self.collected_margin, self.collected)

    def add_sums(self, sums: Sums) -> None:
        self.cost = SUMS.add(self.cost, sums.cost)
        self.event_count += sums.event_count
        self.unpriced_count += sums.unpriced_count


@dataclass
class StrategyRevenue:
    strategy: PricedStrategy
    quantity: Decimal | None = None  # usage units (usage) or billed seats (seat_based) in the window
    agent_earned: Decimal = ZERO
    revenue: Decimal = ZERO


@dataclass
class SubscriptionRevenue(RevenueFigures):
    subscription: Subscription | None = None


@dataclass
class RevenueMetrics(RevenueFigures):
    window: Window | None = None
    subscriptions: list[SubscriptionRevenue] = field(default_factory=list)
    strategies: list[StrategyRevenue] = field(default_factory=list)


@lru_cache(maxsize=4096)  # windows and period turns repeat across a book's subscriptions
def _day_position(moment: datetime, timezone: str) -> Decimal:
    """Where an instant falls on the local calendar, in days: the day's ordinal plus the elapsed fraction
    of that local day (a DST day has 23 or 25 hours)."""
    day = local_date(moment, timezone)
    start, end = local_midnight(day, timezone), local_midnight(day + timedelta(days=1), timezone)
    return Decimal(day.toordinal()) + Decimal((moment - start) // MICROSECOND) / Decimal((end - start) // MICROSECOND)


def _covered_span(subscription: Subscription, window: Window) -> Window | None:
    """The part of the window on the local days the subscription covers (its start day counts; its end is
    exclusive); None when they do not meet. Event attribution (instants) lies inside it."""
    terms, (start_zone, end_zone) = subscription_terms(subscription), life_timezones(subscription)
    end = None if terms.end is None else local_midnight(terms.end, end_zone)
    if end is not None and terms.ends_by_change:
        # The change's day is the new side's, but never a day of an earlier period: after a timezone change that
        # local day can begin before the period the change falls in (a change at 03:00 UTC on February 1 is still
        # January 31 in Los Angeles), and January, in UTC, stays the old side's whole.
        end = max(end, grid_cycle(subscription, life_of(subscription)[1])[0])
    return window.clip(local_midnight(terms.start, start_zone), end)


def _meets(subscription: Subscription, window: Window) -> bool:
    """Whether the subscription reports in the window: its life (instants: where its usage is billed) or the local
    days it covers (where its fees are recognized) meets it. A subscription a plan change ends at 14:00 covers no
    day of the change (the new side has it) yet bills that day's usage until 14:00."""
    start, end = life_of(subscription)
    return (start < window.end and (end is None or window.start < end)) or _covered_span(subscription, window) is not None


def _terms_at(timeline: TermsTimeline, moment: datetime) -> PlanTerms:
    """The terms in force at `moment` (before the life: the first piece's; after it: the last one's)."""
    pieces = timeline.pieces
    if not pieces:
        return timeline.current
    return next((piece.terms for piece in pieces if piece.end is None or moment < piece.end), pieces[-1].terms)


@dataclass(frozen=True)
class PricingUnit:
    """A stretch whose usage is priced as a whole (`whole_start`, `whole_end`: a billing period, or an invoice's
    period), and the part of it the window holds (`start`, `end`)."""

    start: datetime
    end: datetime
    terms: PlanTerms
    whole_start: datetime
    whole_end: datetime

    @property
    def is_cut(self) -> bool:
        return (self.start, self.end) != (self.whole_start, self.whole_end)


def _pricing_units(timeline: TermsTimeline, window: Window) -> list[PricingUnit]:
    """The stretches that usage is priced over as a whole: an invoice's period (its captured terms), and
    elsewhere each billing period of the schedule (the current terms), each with its part within the window.
    Tiers apply per billing period, as on the invoices."""
    subscription, units = timeline.subscription, []
    for piece in timeline.pieces:
        if piece.start >= window.end or (piece.end is not None and piece.end <= window.start):
            continue
        if piece.invoice_id is not None:
            units.append(PricingUnit(max(piece.start, window.start), min(piece.end, window.end), piece.terms,
                                     piece.start, piece.end))
            continue
        moment = max(piece.start, window.start)
        while moment < window.end and (piece.end is None or moment < piece.end):
            cycle_start, cycle_end, _ = grid_cycle(subscription, moment)
            whole_start = max(cycle_start, piece.start)
            whole_end = cycle_end if piece.end is None else min(cycle_end, piece.end)
            units.append(PricingUnit(max(whole_start, window.start), min(whole_end, window.end), piece.terms,
                                     whole_start, whole_end))
            moment = whole_end
    return units


def _fee_shares(timeline: TermsTimeline, span: Window) -> list[tuple[PlanTerms, int, Decimal]]:
    """(terms in force, days in the billing period, days of it recognized) for each billing period `span`
    meets."""
    subscription = timeline.subscription
    shares, moment = [], span.start
    while moment < span.end:
        # On the grid each period was billed on (a billingDay or timezone change takes effect from the next period).
        cycle_start, cycle_end, timezone = grid_cycle(subscription, moment)
        period = DaySpan.from_instants(cycle_start, cycle_end, timezone)
        # A period's own bounds are its whole local days, as its invoice counts them: the first period after a
        # timezone change starts mid-day in the new timezone (Feb 1 00:00 UTC is 09:00 in Tokyo) and is billed
        # that whole day.
        started = Decimal(period.start.toordinal()) if moment == cycle_start else _day_position(moment, timezone)
        ended = Decimal(period.end.toordinal()) if span.end >= cycle_end else _day_position(span.end, timezone)
        recognized = ended - started
        shares.append((_terms_at(timeline, max(moment, subscription.start_date)), period.days, recognized))
        moment = cycle_end
    return shares


def _unit_key(subscription_id, index: int, signal_id, *, whole: bool = False) -> tuple:
    return subscription_id, index, signal_id, whole


def _billing_segments(timeline: TermsTimeline, claims: list[Claim], window: Window) -> tuple[list, list, list]:
    """The units, what the subscription bills of the ledger in the window, one entry per claim and pricing
    unit, keyed by both (`signal_quantities`' entries), and the same over the whole of each unit the window cuts
    (at most the first and the last) for the signals whose pricing earns per period (tiers, a pool's price):
    the total the part is priced against.

    The units follow each other in time, and so do the claims of one agent and signal (each event is claimed
    once: they never overlap), so each unit is compared with the claims of each signal from where the unit before
    it left off, not with all of them: a subscription with thousands of invoiced periods has as many claims and
    units, and comparing every pair cost their product."""
    units, segments, whole_segments = _pricing_units(timeline, window), [], []
    by_signal: dict[tuple, list[Claim]] = {}
    for claim in claims:  # sorted by start
        by_signal.setdefault((claim.agent_id, claim.signal_id), []).append(claim)
    for index, unit in enumerate(units):
        if not unit.is_cut:
            continue
        per_period = {strategy.signal_id for strategy in unit.terms.strategies
                      if strategy.is_usage and charge_of(strategy.charge_type).earns_per_period(strategy.terms)}
        for (_, signal_id), signal_claims in by_signal.items():
            if signal_id not in per_period:
                continue
            for claim in signal_claims:
                piece = claim.clip(unit.whole_start, unit.whole_end)
                if piece is not None:
                    whole_segments.append((_unit_key(claim.subscription_id, index, signal_id, whole=True),
                                           claim.customer_id, claim.agent_id, *piece, signal_id))
    next_of = dict.fromkeys(by_signal, 0)  # per signal, its first claim that may still meet a unit
    for index, unit in enumerate(units):
        start, end, billed = unit.start, unit.end, unit.terms.billed_signals
        for key, signal_claims in by_signal.items():
            first = next_of[key]
            while first < len(signal_claims) and signal_claims[first].end is not None \
                    and signal_claims[first].end <= start:
                first += 1
            next_of[key] = first
            if key[1] not in billed:
                continue
            for position in range(first, len(signal_claims)):
                claim = signal_claims[position]
                if claim.start >= end:
                    break
                piece = claim.clip(start, end)
                if piece is not None:
                    segments.append((_unit_key(claim.subscription_id, index, claim.signal_id), claim.customer_id,
                                     claim.agent_id, *piece, claim.signal_id))
    return units, segments, whole_segments


def _price_subscription(timeline: TermsTimeline, units: list, quantities: dict, window: Window,
                        figures: SubscriptionRevenue, by_strategy: dict) -> None:
    """Fill the subscription's figures and add to the per-strategy rows. Agent-Earned: each pricing unit's
    usage strategies on the unit's own total (no minimum commitment); fees: recognized by the day."""
    subscription = timeline.subscription

    def row(strategy: PricedStrategy) -> StrategyRevenue:
        return by_strategy.setdefault(strategy.id, StrategyRevenue(strategy))

    for index, unit in enumerate(units):
        # A period a plan change splits prices a credit pool at this side's share (units and price), as billed.
        cycle_start, cycle_end, timezone = grid_cycle(subscription, unit.start)
        period = DaySpan.from_instants(cycle_start, cycle_end, timezone)
        side = subscription_terms(subscription, timezone)  # its end day counted in this period's timezone
        for strategy in unit.terms.strategies:
            if not strategy.is_usage:
                continue
            charge = charge_of(strategy.charge_type)
            quantity = quantities.get(_unit_key(subscription.pk, index, strategy.signal_id), ZERO)
            terms = side_terms(strategy.terms, subscription=side, period=period)
            if unit.is_cut and charge.earns_per_period(terms):  # its part of the whole, so windows add up
                whole = quantities.get(_unit_key(subscription.pk, index, strategy.signal_id, whole=True), ZERO)
                earned = answered(charge.earned_within(quantity, terms, period_quantity=whole))
            else:
                earned = answered(charge.earned(quantity, terms))
            _add(figures, charge.figure, earned)
            line = row(strategy)
            line.quantity = SUMS.add(line.quantity or ZERO, quantity)
            line.agent_earned = SUMS.add(line.agent_earned, earned)
            line.revenue = SUMS.add(line.revenue, earned)
    span = _covered_span(subscription, window)
    # What a subscription's start charges once; never for one a plan change started (contract: "Plan changes").
    if window.start <= subscription.start_date < window.end and subscription.previous_subscription_id is None:
        for strategy in _terms_at(timeline, subscription.start_date).strategies:
            charge = charge_of(strategy.charge_type)
            fee = charge.opening_fee(strategy.terms)
            if fee is not None:
                _add(figures, charge.figure, fee)
                row(strategy).revenue = SUMS.add(row(strategy).revenue, fee)
    counted_units = {}
    for terms, days, recognized in _fee_shares(timeline, span) if span is not None else ():
        for strategy in terms.strategies:
            charge = charge_of(strategy.charge_type)
            fee = charge.periodic_fee(strategy.terms, seats=terms.seats_count)
            if fee is None:
                continue
            units = charge.periodic_units(strategy.terms, seats=terms.seats_count)
            if units is not None:
                counted_units[strategy.id] = (strategy, units)
            amount = answered(fee_for_period(fee, frequency=strategy.terms.billing_frequency,
                                             billing_cycle=subscription.billing_cycle, period_days=days,
                                             covered=recognized))
            row(strategy).revenue = SUMS.add(row(strategy).revenue, amount)
            _add(figures, charge.figure, amount)
    for strategy, units in counted_units.values():
        line = row(strategy)
        line.quantity = SUMS.add(line.quantity or ZERO, units)


def _add(figures: SubscriptionRevenue, figure: str, amount: Decimal) -> None:
    """Add to the figure a charge type names (`Charge.figure`: recurring, seat, onetime, usage)."""
    setattr(figures, figure, SUMS.add(getattr(figures, figure), amount))


# The billing periods one revenue read prices at most. Fees and usage are priced period by period in Python (tens
# of microseconds a period, for each): 200,000 is ten years of 1,500 monthly subscriptions, while millennia of a
# one-day cycle held a web worker for minutes (docs/decisions/analytics.md).
MAX_PERIODS_PER_READ = 200_000
_SHORTEST_CYCLE_DAYS = {BillingCycle.MONTHLY: 28, BillingCycle.YEARLY: 365}


def _periods_at_most(subscription: Subscription, window: Window) -> int:
    """At most how many billing periods of `subscription` meet the part of `window` its life meets (a day either
    side, for the local days of its edges): each is priced for fees and for usage."""
    start, end = life_of(subscription)
    low = max(window.start, start - timedelta(days=1))
    high = window.end if end is None else min(window.end, end + timedelta(days=1))
    if high <= low:
        return 0
    cycle_days = (subscription.custom_cycle_days if subscription.billing_cycle == BillingCycle.CUSTOM
                  else _SHORTEST_CYCLE_DAYS[subscription.billing_cycle])
    return math.ceil((high - low) / timedelta(days=max(cycle_days or 1, 1))) + 1


def _check_read_size(subscriptions: list[Subscription], window: Window, limit: int) -> None:
    """A 422 for a window too long for the read to price, before any of it is priced."""
    periods = sum(_periods_at_most(subscription, window) for subscription in subscriptions)
    if periods > limit:
        raise Unprocessable([f"endDate: From startDate to endDate the subscriptions reported have up to {periods:,} "
                             f"billing periods to price, more than the {limit:,} one revenue read prices; ask for a "
                             f"shorter window."])


def revenue_metrics(*, book, window: Window, customer: Customer | None = None,
                    subscription: Subscription | None = None,
                    period_limit: int | None = MAX_PERIODS_PER_READ) -> RevenueMetrics:
    """RevenueMetrics of the book, one customer or one subscription over `window`; a 422 when pricing it would walk
    more than `period_limit` billing periods (None: no limit). Its reads (subscriptions, cost segments, the
    quantities each subscription bills, the total, the invoices) share one snapshot of the ledger: read one by one,
    a batch committed between them was in the window's quantity of a pool and not in its period's, and Agent-Earned
    fell below what either moment gives."""
    with ledger_reads(book):
        return _revenue_metrics(book=book, window=window, customer=customer, subscription=subscription,
                                period_limit=period_limit)


def _revenue_metrics(*, book, window: Window, customer: Customer | None, subscription: Subscription | None,
                     period_limit: int | None) -> RevenueMetrics:
    customer_id = subscription.customer_id if subscription is not None else (customer.pk if customer else None)
    scoped = owned(Subscription, book).filter(customer__is_internal=False).order_by("created_at", "id")
    if customer_id is not None:
        scoped = scoped.filter(customer_id=customer_id)
    # Every subscription of the customers in scope settles which one bills an event; those in the window report.
    timelines = terms_timelines(book=book, subscriptions=scoped, recognizing_revenue=True)
    claims = billing_claims(timelines)
    invoiced = invoiced_by_subscription(book=book, window=window, customer_id=customer_id,
                                        subscription_id=subscription.pk if subscription is not None else None)
    # A subscription reports where it runs, and where an invoice of it is dated: its last invoice is often issued
    # after it ended, and without its row the rows' Billed and Collected fell short of the totals.
    subscriptions = [s for s in (t.subscription for t in timelines.values())
                     if (subscription is None or s.pk == subscription.pk)
                     and (_meets(s, window) or invoiced.get(s.pk, Invoiced()) != Invoiced())]
    if period_limit is not None:
        _check_read_size(subscriptions, window, period_limit)
    segments = book_segments(book=book, customer_id=customer_id)
    # Cost and events: each subscription's cost segments.
    cost_rows = rollup_sums(book=book, window=window, scope=Scope(external_only=True),
                            groups={"cost": ("label",)}, measures=COST_MEASURES,
                            segments=[segment for s in subscriptions for segment in segments[s.id]])["cost"]
    costs = {row.key[0]: row for row in cost_rows}
    # Usage: the events each subscription bills, per pricing unit and signal.
    units, billing_segments, whole_segments = {}, [], []
    for s in subscriptions:
        units[s.pk], pieces, whole_pieces = _billing_segments(timelines[s.pk], claims.get(s.pk, []), window)
        billing_segments.extend(pieces)
        whole_segments.extend(whole_pieces)
    quantities = signal_quantities(book=book, window=window, scope=Scope(external_only=True), billed=billing_segments)
    if whole_segments:  # the periods the window cuts, read whole
        around = Window(min(segment[3] for segment in whole_segments),
                        max(segment[4] or window.end for segment in whole_segments))
        quantities.update(signal_quantities(book=book, window=around, scope=Scope(external_only=True),
                                            billed=whole_segments))
    metrics, by_strategy = RevenueMetrics(window=window), {}
    for s in subscriptions:
        row = SubscriptionRevenue(subscription=s)
        row.add_sums(costs.get(str(s.id), Sums(())))
        _price_subscription(timelines[s.pk], units[s.pk], quantities, window, row, by_strategy)
        for name in FEE_AND_USAGE:
            setattr(metrics, name, SUMS.add(getattr(metrics, name), getattr(row, name)))
        metrics.subscriptions.append(row)
    for row in metrics.subscriptions:
        figures = invoiced.get(row.subscription.id, Invoiced())
        row.billed, row.collected = figures.billed, figures.collected
    metrics.billed = sum_exactly(figures.billed for figures in invoiced.values())
    metrics.collected = sum_exactly(figures.collected for figures in invoiced.values())
    if subscription is not None:
        metrics.add_sums(costs.get(str(subscription.id), Sums(())))
    else:
        total = rollup_sums(book=book, window=window, groups={"total": ()}, measures=COST_MEASURES,
                            scope=Scope(customer_id=customer_id, external_only=True))["total"]
        metrics.add_sums(grand_total(total))
    metrics.subscriptions.sort(key=lambda row: (-row.revenue, str(row.subscription.id)))
    metrics.strategies = sorted(by_strategy.values(), key=lambda line: (-line.revenue, str(line.strategy.id)))
    return metrics


def customer_revenue(*, book, customer_id, window: Window) -> RevenueMetrics:
    """RevenueMetrics of one customer (a deleted or foreign customer is a 404, as on its own route)."""
    return revenue_metrics(book=book, window=window, customer=customer_get(book=book, customer_id=customer_id))


def customer_revenue_total(*, book, customer: Customer, start: datetime, end: datetime) -> Decimal:
    """Revenue (spec §1: Agent-Earned plus prorated recurring, seat and one-time fees) of one customer over
    `[start, end)`, as `GET /v1/customers/{id}/revenue` reports it; 0 for an internal customer. Customer
    alerts' revenue watches read it, up to now: a scheduled job with no one to answer, so without the read limit."""
    return revenue_metrics(book=book, window=Window(start, end), customer=customer, period_limit=None).revenue


def subscription_revenue(*, book, subscription_id, window: Window) -> RevenueMetrics:
    return revenue_metrics(book=book, window=window,
                           subscription=subscription_get(book=book, subscription_id=subscription_id))
