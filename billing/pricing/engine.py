"""The pricing engine: what a subscription's strategies charge for one billing period.

Pure (STYLE.md §6): frozen dataclasses and `Decimal` in, exact `Decimal` out; no ORM, no clock, no
settings, never float. Amounts stay exact (800 significant digits; a line that divides divides once, last) until
an invoice line is written; `invoice_totals` rounds each line once, half-up (contract: Rounding). The rules and
worked examples are in docs/decisions/pricing.md.
"""
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Context, Decimal, InvalidOperation, localcontext
from typing import Callable, Iterable, Mapping, Sequence

from billing.pricing.periods import first_uncovered_day, local_date
from core.money import ZERO, to_cents

USAGE, RECURRING, ONETIME, SEAT_BASED = "usage", "recurring", "onetime", "seat_based"
PRORATED = "prorated"  # the line that carries a subscription's proratedAmount
# A fee's billingFrequency and a subscription's billingCycle, in months.
MONTHS = {"monthly": 1, "yearly": 12}
DAYS_PER_YEAR = Decimal(365)  # a custom cycle bills fees by the day at 1/365 of the yearly fee
HUNDRED = Decimal(100)
# Pricing a quantity multiplies and adds without rounding: a period's quantity keeps every digit its events
# carry (340 decimal places each, up to 309 integer digits each and a dozen more summed, core/money.py SUMS: about
# 660 digits) and a rate or tier bound up to 356 (core/money.py EXACT_IN_DIGITS), so a product holds under 1,020
# significant digits, inside this precision. The line is rounded once, to cents, when it is written.
QUANTITY_ARITHMETIC = Context(prec=1100)
# A derived figure's quotient that does not terminate (a prorated fee, a share of a period's earnings in a revenue
# figure) is answered at 28 significant digits (docs/decisions/numbers.md); every other amount whole.
ANSWERED_QUOTIENT = Context(prec=28)


def answered(amount: Decimal) -> Decimal:
    """An amount as revenue and MRR answer it: a quotient that did not terminate (it fills QUANTITY_ARITHMETIC's
    precision) cut to 28 significant digits, anything else (a product, a sum) with every digit."""
    if len(amount.as_tuple().digits) >= QUANTITY_ARITHMETIC.prec:
        return ANSWERED_QUOTIENT.plus(amount)
    return amount


@dataclass(frozen=True)
class Tier:
    """A quantity `q` falls in the tier with `lower < q <= upper` (the first tier also holds 0)."""

    lower: Decimal
    upper: Decimal | None  # None: open-ended
    rate: Decimal


# --------------------------------------------------------------------------- pricing models
# Tiers are contiguous from 0 with an open last tier (StrategyTerms.from_values makes it so).

def flat(quantity: Decimal, rate: Decimal) -> Decimal:
    return quantity * rate


def graduated(quantity: Decimal, tiers: Sequence[Tier]) -> Decimal:
    total = Decimal(0)
    for tier in tiers:
        if quantity <= tier.lower:
            break
        top = quantity if tier.upper is None else min(quantity, tier.upper)
        total += (top - tier.lower) * tier.rate
    return total


def volume_tier(quantity: Decimal, tiers: Sequence[Tier]) -> Tier:
    """The tier a volume total falls in, whose rate prices every unit."""
    return next((t for t in tiers if t.upper is None or quantity <= t.upper), tiers[-1])


def volume(quantity: Decimal, tiers: Sequence[Tier]) -> Decimal:
    """The rate of the tier the total falls in prices every unit."""
    return quantity * volume_tier(quantity, tiers).rate


def credit_pool(quantity: Decimal, tiers: Sequence[Tier], share: tuple[int, int] | None = None) -> Decimal:
    """Tier 1: the pool (upper = pool size, rate = the pool's flat price); tier 2 rate: per unit beyond.
    The pool price is billed even with no usage.

    `share`: (covered days, days in the period) of one side of a plan change (contract: "Plan changes"), whose
    pool units and pool price are x covered / days, units exact (not rounded to whole units), beyond them the
    side's own overage rate. Computed over the period's days with one division, last: prorated units taken
    first (1,000 x 2 / 30 = 66.666...) left an exact half cent a hair below it, and the line rounded it down."""
    pool, overage = tiers[0], tiers[1]
    if share is None:
        return pool.rate + max(quantity - pool.upper, ZERO) * overage.rate
    covered, days = share
    return (pool.rate * covered + max(quantity * days - pool.upper * covered, ZERO) * overage.rate) / days


PRICING_MODELS: dict[str, Callable[[Decimal, "StrategyTerms"], Decimal]] = {
    "flat": lambda quantity, terms: flat(quantity, terms.rate),
    "graduated": lambda quantity, terms: graduated(quantity, terms.tiers),
    "volume": lambda quantity, terms: volume(quantity, terms.tiers),
    "credit_pool": lambda quantity, terms: credit_pool(quantity, terms.tiers, terms.pool_share),
}


# --------------------------------------------------------------------------- inputs

def _exact(value, field: str) -> Decimal:
    """A plain value (Decimal, int or decimal string) as an exact Decimal; floats are refused."""
    if isinstance(value, (float, bool)) or not isinstance(value, (Decimal, int, str)):
        raise TypeError(f"{field}: expected Decimal, int or a decimal string, got {type(value).__name__}.")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{field}: {value!r} is not a number.") from None
    if not number.is_finite():
        raise ValueError(f"{field}: must be a finite number.")
    return number


def _tier(value, index: int) -> Tier:
    if isinstance(value, Tier):
        return value
    upper = value.get("upper")
    return Tier(_exact(value.get("lower", 0), f"tiers[{index}].lower"),
                None if upper is None else _exact(upper, f"tiers[{index}].upper"),
                _exact(value.get("rate"), f"tiers[{index}].rate"))


def tier_errors(pricing_model: str | None, tiers: Sequence[Tier]) -> list[str]:
    """Why a tier list cannot be priced (empty when it can), as `field: message` strings.

    Tiers start at 0, each starts where the previous one ends, rates are not negative; only the last
    may be open. A credit pool has exactly two tiers: [0, pool size] and [pool size, open)."""
    errors = []
    for index, tier in enumerate(tiers):
        if tier.rate < 0:
            errors.append(f"tiers[{index}].rate: Must not be negative.")
        expected_lower = ZERO if index == 0 else tiers[index - 1].upper
        if expected_lower is not None and tier.lower != expected_lower:
            errors.append(f"tiers[{index}].lower: Must be {expected_lower} (tiers are contiguous from 0).")
        if tier.upper is not None and tier.upper <= tier.lower:
            errors.append(f"tiers[{index}].upper: Must be greater than lower.")
        if tier.upper is None and index < len(tiers) - 1:
            errors.append(f"tiers[{index}].upper: Only the last tier may be open-ended.")
    if pricing_model == "credit_pool" and (len(tiers) != 2 or tiers[0].upper is None or tiers[0].upper <= 0):
        errors.append("tiers: A credit pool has two tiers: the pool [0, pool size] and the overage [pool size, null].")
    return errors


@dataclass(frozen=True)
class StrategyTerms:
    """A pricing strategy reduced to what prices it. Build with `from_values`, which validates and
    resolves the spec's fallbacks: `rate` is the flat rate or the fee; `tiers` the tier models' tiers."""

    charge_type: str
    pricing_model: str | None
    rate: Decimal | None
    tiers: tuple[Tier, ...]
    minimum_commitment: Decimal
    billing_frequency: str
    strategy_id: str = ""
    # A credit pool billed by one side of a plan change: (covered days, days in the period); see `credit_pool`.
    pool_share: tuple[int, int] | None = None

    @classmethod
    def from_values(cls, *, charge_type: str, pricing_model: str | None = None, rate=None, tiers=(),
                    minimum_commitment=None, billing_frequency: str | None = "monthly",
                    strategy_id: str = "") -> "StrategyTerms":
        """Raises ValueError (TypeError for a float) on terms that cannot be priced; the strategy API
        rejects those before they are stored."""
        if charge_type not in CHARGES:
            raise ValueError(f"chargeType: Unknown charge type {charge_type!r}.")
        billing_frequency = billing_frequency or "monthly"
        if billing_frequency not in MONTHS:
            raise ValueError(f"billingFrequency: Unknown billing frequency {billing_frequency!r}.")
        rate = None if rate is None else _exact(rate, "rate")
        tiers = tuple(_tier(tier, index) for index, tier in enumerate(tiers or ()))
        minimum = ZERO if minimum_commitment is None else _exact(minimum_commitment, "minimumCommitment")
        if minimum < 0 or (rate is not None and rate < 0):
            raise ValueError("rate, minimumCommitment: Must not be negative.")
        if charge_type in (USAGE, SEAT_BASED):
            if pricing_model not in PRICING_MODELS:
                raise ValueError(f"pricingModel: Required for {charge_type}; one of {', '.join(PRICING_MODELS)}.")
            rate, tiers = cls._resolve_model(pricing_model, rate, tiers)
        elif rate is None:
            raise ValueError(f"rate: Required for {charge_type} (the fee).")
        return cls(charge_type, pricing_model, rate, tiers, minimum, billing_frequency, strategy_id)

    def unit_rate(self, quantity: Decimal) -> Decimal | None:
        """What each unit of `quantity` costs when one rate prices them all (flat; volume, at the rate of the tier
        the total falls in), None when tiers price units differently (graduated, a credit pool's pool and
        overage). A line prorated by days keeps its unit rate: the proration is the line's, not the unit's."""
        if self.pricing_model == "flat":
            return self.rate
        if self.pricing_model == "volume" and self.tiers:
            return volume_tier(quantity, self.tiers).rate
        return None

    @staticmethod
    def _resolve_model(pricing_model: str, rate: Decimal | None, tiers: tuple[Tier, ...]):
        # Spec: `rate` is used when the model is flat or there are no tiers. A flat strategy given only
        # tiers is priced at its first tier's rate.
        if pricing_model == "flat":
            if rate is None and not tiers:
                raise ValueError("rate: A flat strategy needs a rate (or tiers, whose first rate is used).")
            return (tiers[0].rate if rate is None else rate), ()
        if not tiers and rate is not None and pricing_model != "credit_pool":
            tiers = (Tier(ZERO, None, rate),)
        errors = tier_errors(pricing_model, tiers) or ([] if tiers else ["tiers: Required for this pricing model."])
        if errors:
            raise ValueError(" ".join(errors))
        if pricing_model != "credit_pool" and tiers[-1].upper is not None:
            # Units above a closed last tier bill at its rate rather than for free.
            tiers = (*tiers[:-1], Tier(tiers[-1].lower, None, tiers[-1].rate))
        return rate, tiers


@dataclass(frozen=True)
class DaySpan:
    """A billing period as local calendar days of the subscription's timezone, half-open [start, end).
    It is the whole billing cycle even when the subscription covers only part of it."""

    start: date
    end: date

    @property
    def days(self) -> int:
        return (self.end - self.start).days

    @classmethod
    def from_instants(cls, start: datetime, end: datetime, timezone: str) -> "DaySpan":
        """Boundaries at local midnight become the local days they fall on."""
        return cls(local_date(start, timezone), local_date(end, timezone))


@dataclass(frozen=True)
class SubscriptionTerms:
    """What of a subscription pricing needs. `start` is the first covered local day, `end` the first
    local day no longer covered (None: forever). `starts_by_change` / `ends_by_change`: the subscription
    starts (ends) by a plan change, which splits that period's money between the two sides (contract: "Plan
    changes")."""

    start: date
    end: date | None = None
    billing_cycle: str = "monthly"
    seats_count: Decimal = ZERO
    prorated_amount: Decimal | None = None
    starts_by_change: bool = False
    ends_by_change: bool = False
    # The first instant is after the first day's local midnight (a plan change at 10:00): the old side holds that
    # day's instants before it, so a period starting that day is shared although the day is this side's.
    starts_inside_day: bool = False

    @classmethod
    def from_values(cls, *, start_date: datetime, end_date: datetime | None = None, is_forever: bool = False,
                    timezone: str = "UTC", billing_cycle: str = "monthly", seats_count=0,
                    prorated_amount=None) -> "SubscriptionTerms":
        """Days are counted in the subscription's timezone; endDate is exclusive, as subscriptions store it
        (a day it reaches into counts as covered, like the start day); `isForever` ignores it."""
        if billing_cycle not in (*MONTHS, "custom"):
            raise ValueError(f"billingCycle: Unknown billing cycle {billing_cycle!r}.")
        end = None if is_forever or end_date is None else first_uncovered_day(end_date, timezone)
        return cls(local_date(start_date, timezone), end, billing_cycle, _exact(seats_count, "seatsCount"),
                   None if prorated_amount is None else _exact(prorated_amount, "proratedAmount"))

    def starts_in(self, period: DaySpan) -> bool:
        return period.start <= self.start < period.end

    def ends_in(self, period: DaySpan) -> bool:
        return self.end is not None and period.start < self.end <= period.end

    def split_by_change(self, period: DaySpan) -> bool:
        """The period is one a plan change falls inside, shared by the two sides, and this side covers only part
        of it. The change's local day belongs to the new side. The old side's period is split when that day falls
        in it (on its first day after midnight: that day's instants before the change and none of its days, a share
        of 0 days); a change at the period's end, or later on the next day, falls in the next period. The new side's
        period is split when the change falls after the period's first instant. A period a side covers in part for
        another reason alone (the subscription started inside it, or ends inside it) is not split: its pool is
        whole, as in any such period."""
        ended_by_change = self.ends_by_change and self.end is not None and period.start <= self.end < period.end
        started_by_change = self.starts_by_change and period.start <= self.start < period.end and (
            period.start < self.start or self.starts_inside_day)
        return (ended_by_change or started_by_change) and covered_days(self, period) < period.days


@dataclass(frozen=True)
class Line:
    """One charge of one period, exact. `quantity` is the units or seats billed (after the minimum
    commitment), 1 for a fee; `prorated_days` is (covered days, days in the period) when prorated."""

    charge_type: str
    strategy_id: str | None
    quantity: Decimal
    amount: Decimal
    prorated_days: tuple[int, int] | None = None


@dataclass(frozen=True)
class Discount:
    percent: Decimal = ZERO  # of the rounded subtotal, 0-100
    amount: Decimal = ZERO  # fixed USD


@dataclass(frozen=True)
class Totals:
    subtotal: Decimal
    discount: Decimal
    tax: Decimal
    total: Decimal


# --------------------------------------------------------------------------- charges

def billed_quantity(quantity: Decimal, terms: StrategyTerms) -> Decimal:
    """`minimumCommitment` raises the quantity (units or seats) before it goes through the tiers."""
    return max(quantity, terms.minimum_commitment)


def price_quantity(quantity: Decimal, terms: StrategyTerms) -> Decimal:
    """A usage strategy's charge for the period's TOTAL quantity, or a seat strategy's for its seats."""
    with localcontext(QUANTITY_ARITHMETIC):
        return PRICING_MODELS[terms.pricing_model](billed_quantity(quantity, terms), terms)


def agent_earned(quantity: Decimal, terms: StrategyTerms) -> Decimal:
    """Agent-Earned (spec §1) of a usage strategy over a window: its pricing model on the window's actual
    total; no minimum commitment, and nothing without events (a pool price alone is not earned)."""
    if quantity == 0:
        return ZERO
    with localcontext(QUANTITY_ARITHMETIC):
        return PRICING_MODELS[terms.pricing_model](quantity, terms)


def agent_earned_within(quantity: Decimal, terms: StrategyTerms, *, period_quantity: Decimal) -> Decimal:
    """Agent-Earned of the `quantity` a window holds of a billing period it cuts, whose total is
    `period_quantity`: the period's earnings shared by quantity. Tiers and a credit pool's price apply per period,
    as on the invoices; pricing each part on its own would earn a pool's price once for every window that meets
    the period, and months would not add up to the periods they hold."""
    if quantity == 0:
        return ZERO
    with localcontext(QUANTITY_ARITHMETIC):
        return agent_earned(period_quantity, terms) * quantity / period_quantity


def fee_for_period(fee: Decimal, *, frequency: str, billing_cycle: str, period_days: int,
                   covered: int | None = None) -> Decimal:
    """A fee stated per `frequency` (monthly, yearly) for one whole period of the billing cycle: a yearly fee
    is a twelfth on a monthly cycle, a monthly one x12 on a yearly cycle, and a custom cycle pays by the day
    (1/365 of the yearly amount per day). With `covered` days fewer than the period's, that fee prorated
    (contract: "fee x covered days / days in the period"); a period covered whole bills the whole fee.

    One division, last: an amount whose exact value ends in a half cent keeps it, and the line rounds it up (a
    yearly 121.00 for 9 of June's 30 days is 3.025; a twelfth taken first made it 3.0249999... and 3.02)."""
    if billing_cycle == "custom":
        numerator, denominator = 12 * period_days, MONTHS[frequency] * DAYS_PER_YEAR
    else:
        numerator, denominator = MONTHS[billing_cycle], MONTHS[frequency]
    if covered is not None and covered < period_days:
        numerator, denominator = numerator * max(covered, 0), denominator * period_days
    with localcontext(QUANTITY_ARITHMETIC):
        return fee * numerator / denominator


def covered_days(subscription: SubscriptionTerms, period: DaySpan) -> int:
    start = max(period.start, subscription.start)
    end = period.end if subscription.end is None else min(period.end, subscription.end)
    return max((end - start).days, 0)


def side_terms(terms: StrategyTerms, *, subscription: SubscriptionTerms, period: DaySpan) -> StrategyTerms:
    """A usage strategy as one side of a plan change bills it in `period`: a credit pool's units and price
    prorated by the days the side covers (contract: "Plan changes"); any other strategy, or a period no change
    splits, as it is (usage minimums and tier bounds are never prorated)."""
    if terms.charge_type != USAGE or terms.pricing_model != "credit_pool" or not subscription.split_by_change(period):
        return terms
    return replace(terms, pool_share=(covered_days(subscription, period), period.days))


# --------------------------------------------------------------------------- charge types

class Charge:
    """One charge type's answers to every money question about a strategy of that type: its invoice line for a
    billing period, what revenue recognizes (a fee recognized by the day, a fee at the subscription's start,
    usage earned), and its monthly run-rate and committed figures. Invoices, revenue, MRR, credit pools, the
    portal and the console call these and only sum and label what they answer; adding a charge type is one
    subclass registered in CHARGES (docs/architecture.md, "A new charge type")."""

    charge_type: str
    figure = ""  # the revenue and MRR figure its amounts add to (`recurring`, `seat`, `onetime`, `usage`)
    # A fee billed by the period (converted by billingFrequency, prorated): a proratedAmount replaces these.
    period_fee = False

    def line(self, terms: StrategyTerms, *, subscription: SubscriptionTerms, period: DaySpan,
             quantity: Decimal) -> "Line | None":
        raise NotImplementedError

    def periodic_fee(self, terms: StrategyTerms, *, seats: Decimal) -> Decimal | None:
        """The fee as stated per `terms.billing_frequency`, recognized by the day; None: not a periodic fee."""
        return None

    def periodic_units(self, terms: StrategyTerms, *, seats: Decimal) -> Decimal | None:
        """The units a periodic fee is for, as its invoice line states them; None: not counted."""
        return None

    def opening_fee(self, terms: StrategyTerms) -> Decimal | None:
        """What the subscription's start charges once (never one started by a plan change); None: nothing."""
        return None

    def earned(self, quantity: Decimal, terms: StrategyTerms) -> Decimal | None:
        """Agent-Earned of `quantity` over a window; None: the charge does not follow usage."""
        return None

    def earned_within(self, quantity: Decimal, terms: StrategyTerms, *, period_quantity: Decimal) -> Decimal | None:
        """Agent-Earned of the `quantity` a window holds of a billing period the window cuts, whose total is
        `period_quantity`; None: the charge does not follow usage."""
        return None

    def earns_per_period(self, terms: StrategyTerms) -> bool:
        """Whether a part of a billing period earns other than it would priced alone (tiers, a pool's price):
        then `earned_within` needs the whole period's quantity."""
        return False

    def monthly(self, terms: StrategyTerms, *, seats: Decimal, run_rate_quantity: Decimal | None,
                committed: bool) -> Decimal:
        """The strategy's monthly figure: what it bills a month at the current terms, with usage at
        `run_rate_quantity` (the last 30 days; None: none billed), or when `committed`, its minimum only."""
        fee = self.periodic_fee(terms, seats=seats)
        return ZERO if fee is None else fee / MONTHS[terms.billing_frequency]

    def _fee_line(self, terms: StrategyTerms, *, subscription: SubscriptionTerms, period: DaySpan) -> "Line":
        units = self.periodic_units(terms, seats=subscription.seats_count)
        covered = covered_days(subscription, period)
        fee = fee_for_period(self.periodic_fee(terms, seats=subscription.seats_count),
                             frequency=terms.billing_frequency, billing_cycle=subscription.billing_cycle,
                             period_days=period.days, covered=covered)
        days = (covered, period.days) if covered < period.days else None
        return Line(terms.charge_type, terms.strategy_id, Decimal(1) if units is None else units, fee, days)


class UsageCharge(Charge):
    """Priced on the period's total quantity through its pricing model; never prorated, except a credit pool in
    a period a plan change splits (units and price by covered days)."""

    charge_type, figure = USAGE, "usage"

    def line(self, terms, *, subscription, period, quantity):
        side = side_terms(terms, subscription=subscription, period=period)
        days = (covered_days(subscription, period), period.days) if side is not terms else None
        return Line(USAGE, terms.strategy_id, billed_quantity(quantity, side), price_quantity(quantity, side), days)

    def earned(self, quantity, terms):
        return agent_earned(quantity, terms)

    def earned_within(self, quantity, terms, *, period_quantity):
        return agent_earned_within(quantity, terms, period_quantity=period_quantity)

    def earns_per_period(self, terms):
        return terms.pricing_model != "flat"  # flat: any part earns its rate, its share of the whole as much

    def monthly(self, terms, *, seats, run_rate_quantity, committed):
        if committed:
            # What a period bills at its minimum usage (none without a minimum): a credit pool's price is billed
            # every period, used or not (contract: "Tiers"), so it is committed; other models bill nothing at 0.
            return price_quantity(terms.minimum_commitment, terms)
        return ZERO if run_rate_quantity is None else agent_earned(run_rate_quantity, terms)


class OnetimeCharge(Charge):
    """Its rate once, in the subscription's first period; a plan change never charges the new plan's one-time
    fees (contract: "Plan changes")."""

    charge_type, figure = ONETIME, "onetime"

    def line(self, terms, *, subscription, period, quantity):
        first = subscription.starts_in(period) and not subscription.starts_by_change
        return Line(ONETIME, terms.strategy_id, Decimal(1), terms.rate) if first else None

    def opening_fee(self, terms):
        return terms.rate


class RecurringCharge(Charge):
    """Its rate per billing frequency, converted to the cycle and prorated by covered days."""

    charge_type, figure, period_fee = RECURRING, "recurring", True

    def line(self, terms, *, subscription, period, quantity):
        return self._fee_line(terms, subscription=subscription, period=period)

    def periodic_fee(self, terms, *, seats):
        return terms.rate


class SeatCharge(Charge):
    """The subscription's seats (at least the minimum commitment) through the pricing model, per billing
    frequency, converted to the cycle and prorated by covered days."""

    charge_type, figure, period_fee = SEAT_BASED, "seat", True

    def line(self, terms, *, subscription, period, quantity):
        return self._fee_line(terms, subscription=subscription, period=period)

    def periodic_fee(self, terms, *, seats):
        return price_quantity(seats, terms)

    def periodic_units(self, terms, *, seats):
        return billed_quantity(seats, terms)


CHARGES: dict[str, Charge] = {charge.charge_type: charge
                              for charge in (UsageCharge(), RecurringCharge(), OnetimeCharge(), SeatCharge())}


def charge_of(charge_type: str) -> Charge:
    return CHARGES[charge_type]


def strategy_line(terms: StrategyTerms, *, subscription: SubscriptionTerms, period: DaySpan,
                  quantity: Decimal = ZERO) -> Line | None:
    """One strategy's charge for one billing period; None when it has none (a one-time fee after the
    subscription's first period). `quantity` is the usage total of the period (usage strategies only)."""
    return charge_of(terms.charge_type).line(terms, subscription=subscription, period=period, quantity=quantity)


def period_lines(strategies: Sequence[StrategyTerms], *, subscription: SubscriptionTerms, period: DaySpan,
                 usage: Mapping[str, Decimal]) -> list[Line]:
    """Every charge of a subscription's strategies for one billing period, in strategy order.

    `usage` maps strategy_id to the period's total quantity (missing: 0). When the subscription has a
    `proratedAmount` and covers its first period only in part, that amount replaces the day-prorated
    recurring and seat fees of the period with one `prorated` line, placed where the first of them was; not on the
    side of a plan change that ends inside the period, whose fees the contract prorates by the days it covers
    (the amount priced the days to the period's end, which the side no longer covers)."""
    lines = [line for terms in strategies
             if (line := strategy_line(terms, subscription=subscription, period=period,
                                       quantity=usage.get(terms.strategy_id, ZERO))) is not None]
    first_fee = next((index for index, line in enumerate(lines) if charge_of(line.charge_type).period_fee), None)
    covered = covered_days(subscription, period)
    if subscription.prorated_amount is None or first_fee is None or not subscription.starts_in(period) \
            or covered >= period.days or subscription.split_by_change(period):
        return lines
    override = Line(PRORATED, None, Decimal(1), subscription.prorated_amount, (covered, period.days))
    return [*lines[:first_fee], override,
            *(line for line in lines[first_fee:] if not charge_of(line.charge_type).period_fee)]


# --------------------------------------------------------------------------- invoice totals

def invoice_totals(line_amounts: Iterable[Decimal], *, discount: Discount | None = None,
                   tax_percent: Decimal = ZERO) -> Totals:
    """Contract: each line is rounded once to cents half-up; the subtotal is the sum of rounded lines.
    The discount (percent of the subtotal plus a fixed amount, at most the subtotal) and the tax (percent
    of the subtotal after the discount) are computed from rounded amounts and rounded half-up once each."""
    subtotal = sum((to_cents(amount) for amount in line_amounts), ZERO)
    discount = discount or Discount()
    with localcontext(QUANTITY_ARITHMETIC):  # a percent may have 340 places: 28 digits could cross a half cent
        discount_amount = min(to_cents(subtotal * discount.percent / HUNDRED + discount.amount), max(subtotal, ZERO))
        tax = to_cents((subtotal - discount_amount) * tax_percent / HUNDRED)
    return Totals(subtotal, discount_amount, tax, subtotal - discount_amount + tax)
