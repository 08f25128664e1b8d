"""RevenueMetrics (spec §1, §2, §4): Agent-Earned and Revenue over a window, against cost.

- Agent-Earned: for each usage strategy of a subscription, its pricing model on the window's total
  quantity of the strategy's signal among the events attributed to the subscription (`coverage.py`);
  no minimum commitment, no fees, no proration (`pricing.agent_earned`).
- Revenue: Agent-Earned plus the recurring and seat fees recognized over the window, plus one-time fees
  of subscriptions that start in it. A fee is recognized evenly over the local days its billing period
  has (contract: Proration): a window holding d of a period's D days recognizes fee x d / D, where days
  a subscription does not cover count for nothing. Window edges inside a day count that day's fraction.
- Cost: the events of the scope in the window (orphans included at the top level; a subscription's row
  has the events attributed to it). Margin is label minus cost.

- Billed and Collected: from the invoices dated in the window (`invoiced.py`), where invoices exist.

Internal coding-agent usage never counts: internal customers' events and subscriptions are left out.
"""
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from itertools import groupby
from uuid import UUID

from billing.models import ChargeType, PricingStrategy, Subscription
from billing.periods import cycle_containing, local_date, local_midnight
from billing.pricing import Period, StrategyTerms, agent_earned, fee_for_period, price_quantity
from billing.selectors.analytics.coverage import book_segments
from billing.selectors.analytics.invoiced import Invoiced, invoiced_by_subscription
from billing.selectors.analytics.ledger import Scope, Sums, Window, combined, grand_total, ledger_sums
from billing.selectors.plans import billable_units, strategies_pricing, strategy_terms
from billing.selectors.subscriptions import schedule_of, subscription_get, subscription_terms
from config.core.money import ZERO
from config.core.scoping import owned
from customers.models import Customer
from customers.selectors import customer_get

HUNDRED = Decimal(100)
FEE_AND_USAGE = ("usage", "recurring", "seat", "onetime")
FIGURE_MEASURES = ("event_count", "unpriced_count", "quantity", "cost", "attempts")
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
        return self.usage + self.recurring + self.seat + self.onetime

    @property
    def agent_earned_margin(self) -> Decimal:
        return self.agent_earned - self.cost

    @property
    def agent_earned_margin_percent(self) -> Decimal | None:
        return percent_of(self.agent_earned_margin, self.agent_earned)

    @property
    def margin(self) -> Decimal:
        return self.revenue - self.cost

    @property
    def margin_percent(self) -> Decimal | None:
        return percent_of(self.margin, self.revenue)

    @property
    def billed_margin(self) -> Decimal:
        return self.billed - self.cost

    @property
    def billed_margin_percent(self) -> Decimal | None:
        return percent_of(self.billed_margin, self.billed)

    @property
    def collected_margin(self) -> Decimal:
        return self.collected - self.cost

    @property
    def collected_margin_percent(self) -> Decimal | None:
        return percent_of(self.collected_margin, self.collected)

    def add_sums(self, sums: Sums) -> None:
        self.cost += sums.cost
        self.event_count += sums.event_count
        self.unpriced_count += sums.unpriced_count


@dataclass
class StrategyRevenue:
    strategy: PricingStrategy
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
    terms, timezone = subscription_terms(subscription), subscription.timezone
    return window.clip(local_midnight(terms.start, timezone),
                       None if terms.end is None else local_midnight(terms.end, timezone))


def _fee_share(subscription: Subscription, span: Window) -> list[tuple[int, Decimal]]:
    """(days in the billing period, days of it recognized) for each billing period `span` meets."""
    timezone = subscription.timezone
    schedule, shares, moment = schedule_of(subscription), [], span.start
    while moment < span.end:
        cycle_start, cycle_end = cycle_containing(schedule, moment)
        period = Period.from_instants(cycle_start, cycle_end, timezone)
        recognized = _day_position(min(span.end, cycle_end), timezone) - _day_position(moment, timezone)
        shares.append((period.days, recognized))
        moment = cycle_end
    return shares


def _fee_revenue(stated_fee: Decimal, frequency: str, subscription: Subscription,
                 shares: list[tuple[int, Decimal]]) -> Decimal:
    return sum((fee_for_period(stated_fee, frequency=frequency, billing_cycle=subscription.billing_cycle,
                               period_days=days) * recognized / days for days, recognized in shares), ZERO)


def _price_subscription(subscription: Subscription, strategies: list[tuple[PricingStrategy, StrategyTerms]],
                        window: Window, usage_by_signal: dict[UUID, Sums], figures: SubscriptionRevenue,
                        by_strategy: dict) -> None:
    """Fill the subscription's figures and add to the per-strategy rows."""
    shares = _fee_share(subscription, _covered_span(subscription, window))
    for strategy, terms in strategies:
        line = by_strategy.setdefault(strategy.id, StrategyRevenue(strategy))
        if strategy.charge_type == ChargeType.USAGE:
            sums = usage_by_signal.get(strategy.signal_id)
            quantity = billable_units(strategy, sums.quantity, sums.attempts) if sums else ZERO
            earned = agent_earned(quantity, terms)
            figures.usage += earned
            line.quantity = (line.quantity or ZERO) + quantity
            line.agent_earned += earned
            line.revenue += earned
        elif strategy.charge_type == ChargeType.ONETIME:
            if window.start <= subscription.start_date < window.end:
                figures.onetime += terms.rate
                line.revenue += terms.rate
        elif strategy.charge_type == ChargeType.SEAT_BASED:
            amount = _fee_revenue(price_quantity(Decimal(subscription.seats_count), terms),
                                  terms.billing_frequency, subscription, shares)
            figures.seat += amount
            line.quantity = (line.quantity or ZERO) + max(Decimal(subscription.seats_count), terms.minimum_commitment)
            line.revenue += amount
        else:
            amount = _fee_revenue(terms.rate, terms.billing_frequency, subscription, shares)
            figures.recurring += amount
            line.revenue += amount


def revenue_metrics(*, book, window: Window, customer: Customer | None = None,
                    subscription: Subscription | None = None) -> RevenueMetrics:
    """RevenueMetrics of the book, one customer or one subscription over `window`."""
    customer_id = subscription.customer_id if subscription is not None else (customer.pk if customer else None)
    subscriptions = owned(Subscription, book).filter(customer__is_internal=False).order_by("created_at", "id")
    if subscription is not None:
        subscriptions = subscriptions.filter(pk=subscription.pk)
    elif customer_id is not None:
        subscriptions = subscriptions.filter(customer_id=customer_id)
    subscriptions = [s for s in subscriptions if _covered_span(s, window) is not None]
    segments = book_segments(book=book, customer_id=customer_id)
    # One read: each subscription's quantity per signal, and its cost and events summed over its signals.
    sums = ledger_sums(book=book, window=window, scope=Scope(external_only=True),
                       groups={"usage": ("label", "signal")}, measures=FIGURE_MEASURES,
                       segments=[segment for s in subscriptions for segment in segments[s.id]])["usage"]
    usage_by_signal, costs = defaultdict(dict), {}
    for row in sums:
        usage_by_signal[row.key[0]][row.key[1]] = row
    for label, rows in groupby(sorted(sums, key=lambda row: row.key[0]), key=lambda row: row.key[0]):
        costs[label] = combined(list(rows))
    plan_ids = {s.plan_id for s in subscriptions}
    pricing = {pair: [(strategy, strategy_terms(strategy)) for strategy in strategies]
               for pair, strategies in strategies_pricing(book=book, plan_ids=plan_ids).items()}
    metrics, by_strategy = RevenueMetrics(window=window), {}
    for s in subscriptions:
        row = SubscriptionRevenue(subscription=s)
        row.add_sums(costs.get(str(s.id), Sums(())))
        _price_subscription(s, pricing.get((s.plan_id, s.agent_id), []), window, usage_by_signal[str(s.id)], row,
                            by_strategy)
        for name in FEE_AND_USAGE:
            setattr(metrics, name, getattr(metrics, name) + getattr(row, name))
        metrics.subscriptions.append(row)
    invoiced = invoiced_by_subscription(book=book, window=window, customer_id=customer_id,
                                        subscription_id=subscription.pk if subscription is not None else None)
    for row in metrics.subscriptions:
        figures = invoiced.get(row.subscription.id, Invoiced())
        row.billed, row.collected = figures.billed, figures.collected
    metrics.billed = sum((figures.billed for figures in invoiced.values()), ZERO)
    metrics.collected = sum((figures.collected for figures in invoiced.values()), ZERO)
    if subscription is not None:
        metrics.add_sums(costs.get(str(subscription.id), Sums(())))
    else:
        total = ledger_sums(book=book, window=window, groups={"total": ()}, measures=FIGURE_MEASURES,
                            scope=Scope(customer_id=customer_id, external_only=True))["total"]
        metrics.add_sums(grand_total(total))
    metrics.subscriptions.sort(key=lambda row: (-row.revenue, str(row.subscription.id)))
    metrics.strategies = sorted(by_strategy.values(), key=lambda line: (-line.revenue, str(line.strategy.id)))
    return metrics


def customer_revenue(*, book, customer_id, window: Window) -> RevenueMetrics:
    """RevenueMetrics of one customer (a deleted or foreign customer is a 404, as on its own route)."""
    return revenue_metrics(book=book, window=window, customer=customer_get(book=book, customer_id=customer_id))


def subscription_revenue(*, book, subscription_id, window: Window) -> RevenueMetrics:
    return revenue_metrics(book=book, window=window,
                           subscription=subscription_get(book=book, subscription_id=subscription_id))
