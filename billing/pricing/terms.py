"""The terms in force: what prices a subscription in each of its periods.

A subscription is priced by its plan's live strategies for its agent, as they are now, in every period
that has no invoice yet. An invoice captures those terms when it is first generated (`PlanTerms`, kept
as a JSON document on the invoice) and is priced with them from then on: regenerating refreshes the
usage, never the terms, and revenue reads price an invoiced period with its invoice's terms (contract:
"Invoices keep what was reviewed"). A void invoice captures nothing: its period is priced as if it had
no invoice.

This is the one adapter from strategy rows to the engine's `StrategyTerms`, with one error policy: a
stored strategy that cannot be priced (the strategy API refuses such terms, so only data written around
it) is a 422 naming the strategy, raised where something prices it; which signals a subscription bills
needs only its charge type and signal, so attribution and credit balances still read.

It is also the one adapter from a subscription row to the period calendar (`schedule_of`) and to the
engine (`subscription_terms`).
"""
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from uuid import UUID

from billing.models import ChargeType, Invoice, InvoiceStatus, PricingStrategy, Subscription
from billing.pricing.engine import StrategyTerms, SubscriptionTerms
from billing.pricing.periods import (Period, Schedule, cycle_containing, first_uncovered_day, local_date, local_midnight,
                                     period_as_of, period_containing)
from core.errors import Unprocessable
from core.money import ZERO
from core.scoping import owned
from core.serialization import decimal_text


@dataclass(frozen=True)
class PricedStrategy:
    """One strategy as it prices: the engine's terms plus what lines and reports name it by. The attribute
    names follow `PricingStrategy`, so either can stand where a strategy is shown."""

    id: UUID
    name: str
    plan_id: UUID
    agent_id: UUID
    signal_id: UUID | None
    signal_name: str
    charge_type: str
    pricing_model: str | None
    priced_terms: StrategyTerms | None  # None: stored terms that cannot be priced (`problem` says why)
    problem: str = ""

    @property
    def terms(self) -> StrategyTerms:
        if self.priced_terms is None:
            raise Unprocessable([f"pricing strategy {self.id} ('{self.name}'): {self.problem}"])
        return self.priced_terms

    @property
    def is_usage(self) -> bool:
        return self.charge_type == ChargeType.USAGE

    def document(self) -> dict:
        """The strategy as an invoice keeps it: numbers as exact decimal text."""
        terms = self.terms
        return {
            "id": str(self.id), "name": self.name, "planId": str(self.plan_id), "agentId": str(self.agent_id),
            "signalId": None if self.signal_id is None else str(self.signal_id), "signalName": self.signal_name,
            "chargeType": terms.charge_type, "pricingModel": terms.pricing_model,
            "billingFrequency": terms.billing_frequency, "rate": decimal_text(terms.rate),
            "tiers": [{"lower": decimal_text(tier.lower), "upper": decimal_text(tier.upper),
                       "rate": decimal_text(tier.rate)} for tier in terms.tiers],
            "minimumCommitment": decimal_text(terms.minimum_commitment),
        }

    @classmethod
    def from_document(cls, document: dict) -> "PricedStrategy":
        signal_id = document.get("signalId")
        terms = StrategyTerms.from_values(
            charge_type=document["chargeType"], pricing_model=document.get("pricingModel"),
            rate=document.get("rate"), tiers=document.get("tiers") or (),
            minimum_commitment=document.get("minimumCommitment"),
            billing_frequency=document.get("billingFrequency"), strategy_id=document["id"])
        return cls(UUID(document["id"]), document["name"], UUID(document["planId"]), UUID(document["agentId"]),
                   None if signal_id is None else UUID(signal_id), document.get("signalName") or "",
                   terms.charge_type, terms.pricing_model, terms)


@dataclass(frozen=True)
class PlanTerms:
    """Everything that prices one subscription for one period: its strategies in the plan's order, the
    seats and the proratedAmount it had."""

    strategies: tuple[PricedStrategy, ...]
    seats_count: Decimal = ZERO
    prorated_amount: Decimal | None = None

    @property
    def billed_signals(self) -> frozenset:
        """The signals this subscription bills usage of (an active usage strategy on them)."""
        return frozenset(self.billed_agents)

    @property
    def billed_agents(self) -> dict:
        """Signal id -> the agent whose events on it these terms bill: the agent the strategy was written for,
        which for captured terms is the agent the subscription had when they were captured."""
        return {s.signal_id: s.agent_id for s in self.strategies if s.is_usage and s.signal_id is not None}

    def document(self) -> dict:
        return {"strategies": [strategy.document() for strategy in self.strategies],
                "seatsCount": decimal_text(self.seats_count), "proratedAmount": decimal_text(self.prorated_amount)}

    @classmethod
    def from_document(cls, document: dict) -> "PlanTerms":
        prorated = document.get("proratedAmount")
        return cls(tuple(PricedStrategy.from_document(entry) for entry in document.get("strategies", ())),
                   Decimal(document.get("seatsCount") or 0), None if prorated is None else Decimal(prorated))


def priced_strategy(strategy: PricingStrategy) -> PricedStrategy:
    """A stored strategy as it prices (needs `signal` loaded when it has one)."""
    terms, problem = None, ""
    try:
        terms = StrategyTerms.from_values(
            charge_type=strategy.charge_type, pricing_model=strategy.pricing_model, rate=strategy.rate,
            tiers=strategy.tiers, minimum_commitment=strategy.minimum_commitment,
            billing_frequency=strategy.billing_frequency, strategy_id=str(strategy.pk))
    except (TypeError, ValueError, AttributeError) as exc:
        problem = str(exc)
    return PricedStrategy(strategy.pk, strategy.name, strategy.plan_id, strategy.agent_id, strategy.signal_id,
                          strategy.signal.name if strategy.signal_id else "", strategy.charge_type,
                          strategy.pricing_model, terms, problem)


def live_strategies(*, book, plan_ids) -> dict[tuple, tuple[PricedStrategy, ...]]:
    """(plan id, agent id) -> the plan's active, not deleted strategies for that agent, oldest first."""
    found = defaultdict(list)
    rows = (owned(PricingStrategy, book).filter(plan_id__in=list(plan_ids), active=True, deleted_at__isnull=True)
            .select_related("signal").order_by("created_at", "id"))
    for strategy in rows:
        found[(strategy.plan_id, strategy.agent_id)].append(priced_strategy(strategy))
    return {pair: tuple(strategies) for pair, strategies in found.items()}


def current_terms(subscription: Subscription, strategies: dict | None = None) -> PlanTerms:
    """The terms an invoice generated now would capture for the subscription."""
    if strategies is None:
        strategies = live_strategies(book=subscription.book_id, plan_ids=[subscription.plan_id])
    return PlanTerms(strategies.get((subscription.plan_id, subscription.agent_id), ()),
                     Decimal(subscription.seats_count), subscription.prorated_amount)


@dataclass(frozen=True)
class TermsPiece:
    """A stretch `[start, end)` of a subscription's life (end None: open) and the terms in force on it;
    `invoice_id` is the invoice whose captured terms these are (None: the current terms)."""

    start: datetime
    end: datetime | None
    terms: PlanTerms
    invoice_id: UUID | None = None
    # What a final invoice (issued or later) billed, as it stored it: ((agent id, signal id, start, end), ...); those
    # events stay its own. None: a draft, current terms, or a final invoice stored before it kept its claims.
    billed: tuple | None = None


@dataclass(frozen=True)
class TermsTimeline:
    """A subscription's life cut into the stretches its invoices captured and the rest (current terms)."""

    subscription: Subscription
    pieces: tuple[TermsPiece, ...]  # empty for a subscription that ends before it starts
    current: PlanTerms

    def within(self, start: datetime, end: datetime | None) -> list[TermsPiece]:
        """The pieces clipped to `[start, end)`."""
        clipped = []
        for piece in self.pieces:
            lo = max(piece.start, start)
            hi = piece.end if end is None else (end if piece.end is None else min(piece.end, end))
            if hi is None or lo < hi:
                clipped.append(TermsPiece(lo, hi, piece.terms, piece.invoice_id, piece.billed))
        return clipped


MICROSECOND = timedelta(microseconds=1)


# --------------------------------------------------------------------------- a subscription for calendar and engine

def effective_end(subscription: Subscription):
    """The exclusive end of the subscription's life; None while it runs on (isForever ignores endDate)."""
    return None if subscription.is_forever else subscription.end_date


def period_end_grown_back(subscription: Subscription, period_start: datetime) -> datetime:
    """Where a period starting at `period_start` that an earlier end had cut ends now that the subscription's end
    moved later: its cycle's end, or the subscription's new end when that comes first."""
    cycle_end = cycle_containing(schedule_of(subscription, at=period_start), period_start)[1]
    end = effective_end(subscription)
    return cycle_end if end is None else min(cycle_end, end)


@dataclass(frozen=True)
class PeriodRules:
    """The billingDay and timezone in force for a period, and where they took effect (None: the subscription's
    start)."""

    billing_day: int | None
    timezone: str
    since: datetime | None


def rules_at(subscription: Subscription, moment: datetime) -> PeriodRules:
    """The rules the period holding `moment` is billed on: a billingDay or timezone change takes effect at the end
    of the period it was made in, and the periods before keep the rules they had (`earlier_period_rules`)."""
    for earlier in subscription.earlier_period_rules:
        if moment < datetime.fromisoformat(earlier["until"]):
            since = earlier["since"]
            return PeriodRules(earlier["billingDay"], earlier["timezone"],
                               datetime.fromisoformat(since) if since else None)
    since = subscription.period_rules_since
    return PeriodRules(subscription.billing_day, subscription.timezone,
                       since if since is not None and since <= moment else None)


def _schedule(subscription: Subscription, rules: PeriodRules) -> Schedule:
    return Schedule(anchor=subscription.start_date, cycle=subscription.billing_cycle,
                    timezone=rules.timezone, billing_day=rules.billing_day,
                    custom_cycle_days=subscription.custom_cycle_days, end=effective_end(subscription),
                    origin=subscription.cycle_anchor)


def schedule_of(subscription: Subscription, at: datetime | None = None) -> Schedule:
    """The billing rules of a subscription, as the pure period engine takes them: those in force now, or those of
    the period holding `at`."""
    rules = rules_at(subscription, at) if at is not None else PeriodRules(subscription.billing_day,
                                                                          subscription.timezone, None)
    return _schedule(subscription, rules)


def period_holding(subscription: Subscription, moment: datetime) -> Period | None:
    """The billing period that holds `moment` (`period_containing`) on the rules in force for it."""
    rules = rules_at(subscription, moment)
    return period_containing(_schedule(subscription, rules), moment, since=rules.since)


def stored_period_cycle_end(subscription: Subscription) -> datetime | None:
    """Where the stored current period's cycle ends on its grid: the next period's start, also when an end cut the
    period short (a plan change scheduled inside it, which a new change replaces)."""
    start = subscription.current_period_start
    if start is None:
        return None
    return cycle_containing(schedule_of(subscription, at=start), start)[1]


def periods_from(subscription: Subscription, moment: datetime) -> Iterator[Period]:
    """The subscription's periods from `moment` on (the first one starting there), each on the rules in force for
    it: a billingDay or timezone change may lie between two of them. Ends with the subscription's life."""
    while (period := period_containing(schedule_of(subscription, at=moment), moment, since=moment)) is not None \
            and period.end > period.start:
        yield period
        moment = period.end


def period_in_force(subscription: Subscription, moment: datetime) -> Period | None:
    """The billing period in force at `moment` (`period_as_of`: the first one before the subscription starts, the
    last one after it ends), on the rules in force for it: a billingDay or timezone change still pending (it takes
    effect at the end of the period it was made in) leaves the period on the grid it had, also for the successor a
    plan change makes meanwhile, which carries the rules."""
    end = effective_end(subscription)
    at = max(moment, subscription.start_date)
    if end is not None and at >= end:
        at = max(end - MICROSECOND, subscription.start_date)
    rules = rules_at(subscription, at)
    # `at`, not `moment`: before the start, the period holding the start. A successor of a plan change carries rules
    # that may have taken effect before it starts, and the period as of that instant was one it does not run in.
    return period_as_of(_schedule(subscription, rules), at, since=rules.since)


def period_timezone(subscription: Subscription, period_start: datetime) -> str:
    """The timezone the days of the period starting at `period_start` are counted and shown in: the one in force
    for it (a timezone change takes effect from the next period)."""
    return rules_at(subscription, period_start).timezone


def day_instant(subscription: Subscription, value: date | datetime, *, ends_window: bool = False) -> datetime:
    """The instant a bare date names for this subscription (a timestamp is taken as given): local midnight in the
    timezone of the period the day falls in, as a timezone change takes effect from the next period (January's days
    stay UTC days after a change to Tokyo). Read in today's timezone first and then in the one of the period that
    lands in. A date that ends a window (`ends_window`) is read in the timezone of the period it closes: the first
    of the timezones in force over the life whose midnight closes a period counted in it, so `2025-02-01` ends
    January's UTC period after a change to Los Angeles, not the short period the change left before February's
    Los Angeles midnight."""
    if isinstance(value, datetime):
        return value
    if ends_window:
        zones = [rules["timezone"] for rules in subscription.earlier_period_rules] + [subscription.timezone]
        for zone in dict.fromkeys(zones):
            instant = local_midnight(value, zone)
            if rules_at(subscription, instant - MICROSECOND).timezone == zone:
                return instant
    return local_midnight(value, period_timezone(subscription, local_midnight(value, subscription.timezone)))


def life_timezones(subscription: Subscription) -> tuple[str, str]:
    """The timezones the first and the last day of the subscription's life are counted in: each its period's."""
    end = effective_end(subscription)
    last = subscription.start_date if end is None else max(end - MICROSECOND, subscription.start_date)
    return period_timezone(subscription, subscription.start_date), period_timezone(subscription, last)


def grid_cycle(subscription: Subscription, moment: datetime) -> tuple[datetime, datetime, str]:
    """The billing cycle `[start, end)` that holds `moment` on the grid of the rules in force for it, starting no
    earlier than where those rules took effect (the period after a billingDay change runs from there to the new
    grid's first turn), and the timezone its days are counted in."""
    rules = rules_at(subscription, moment)
    start, end = cycle_containing(_schedule(subscription, rules), moment)
    return (start if rules.since is None else max(start, rules.since)), end, rules.timezone


def rules_since(subscription: Subscription, moment: datetime) -> datetime | None:
    """Where the billing rules in force at `moment` took effect, for the period engine's `since`: after a billingDay or
    timezone change, the end of the period they were changed in (the next period starts there, not on the new
    rules' grid); None (the subscription's start) without such a change."""
    return rules_at(subscription, moment).since


def ends_by_change(subscription: Subscription) -> bool:
    """The subscription ends where a plan change starts its successor."""
    return subscription.next_subscription_id is not None and effective_end(subscription) is not None


def subscription_terms(subscription: Subscription, period_zone: str | None = None) -> SubscriptionTerms:
    """The subscription as the pricing engine takes it: the local days it covers, `[startDate's day,
    endDate)`. The end is exclusive as stored (docs/decisions/plans-and-subscriptions.md); an end inside a
    day covers that day, as a start inside a day does, except the end of a plan change: the day the change
    takes effect belongs to the new side only (contract: "Plan changes"). `period_zone`: the timezone of the
    period being priced, which its end day is counted in (after a timezone change the last period's zone would
    put a change made after an earlier period's end on that period's last day, and prorate it)."""
    end = effective_end(subscription)
    changed_out = ends_by_change(subscription)
    start_zone, end_zone = life_timezones(subscription)  # each day in its period's (a change applies from the next)
    end_zone = period_zone or end_zone
    if end is None:
        end_day = None
    else:
        end_day = local_date(end, end_zone) if changed_out else first_uncovered_day(end, end_zone)
    start_day = local_date(subscription.start_date, start_zone)
    return SubscriptionTerms(start=start_day, end=end_day,
                             billing_cycle=subscription.billing_cycle, seats_count=Decimal(subscription.seats_count),
                             prorated_amount=subscription.prorated_amount,
                             starts_by_change=subscription.previous_subscription_id is not None,
                             ends_by_change=changed_out,
                             starts_inside_day=subscription.start_date != local_midnight(start_day, start_zone))


def life_of(subscription: Subscription) -> tuple[datetime, datetime | None]:
    """The subscription's life `[startDate, endDate)`; open while it runs on (isForever ignores endDate)."""
    return subscription.start_date, effective_end(subscription)


def _timeline(subscription: Subscription, current: PlanTerms, invoiced: list[tuple]) -> TermsTimeline:
    start, end = life_of(subscription)
    pieces, cursor = [], start
    for period_start, period_end, terms, invoice_id, billed in sorted(invoiced, key=lambda row: row[0]):
        period_start, period_end = max(period_start, start), period_end if end is None else min(period_end, end)
        if period_end <= period_start:
            continue
        if cursor < period_start:
            pieces.append(TermsPiece(cursor, period_start, current))
        pieces.append(TermsPiece(max(cursor, period_start), period_end, terms, invoice_id, billed))
        cursor = max(cursor, period_end)
    if end is None or cursor < end:
        pieces.append(TermsPiece(cursor, end, current))
    return TermsTimeline(subscription, tuple(piece for piece in pieces if piece.end is None or piece.start < piece.end),
                         current)


def captured_terms(invoice: Invoice, current: PlanTerms) -> PlanTerms:
    """The invoice's captured terms (an invoice from before terms were captured has the current ones)."""
    return current if not invoice.pricing_terms else PlanTerms.from_document(invoice.pricing_terms)


def billed_claims(invoice: Invoice) -> tuple | None:
    """What a final invoice billed, as it stored it (`Invoice.billed_claims`); None for a draft, whose claims move
    with the ledger until it is issued, and for a final invoice stored before it kept them."""
    if invoice.status == InvoiceStatus.DRAFT or invoice.billed_claims is None:
        return None
    return tuple((UUID(claim["agentId"]), UUID(claim["signalId"]), datetime.fromisoformat(claim["start"]),
                  datetime.fromisoformat(claim["end"])) for claim in invoice.billed_claims)


def terms_timelines(*, book, subscriptions, recognizing_revenue: bool = False) -> dict[UUID, TermsTimeline]:
    """Subscription id -> its timeline, for these subscriptions (two reads: strategies and live invoices).
    `recognizing_revenue`: for the revenue reads, where a refunded invoice is treated like a void one (spec: "A
    `refunded` invoice ... is treated like `void` for revenue recognition"): its period is priced as if it had no
    invoice, with the current terms and the claims of the one-subscription rule."""
    subscriptions = list(subscriptions)
    strategies = live_strategies(book=book, plan_ids={s.plan_id for s in subscriptions})
    invoiced = defaultdict(list)
    ignored = (InvoiceStatus.VOID, InvoiceStatus.REFUNDED) if recognizing_revenue else (InvoiceStatus.VOID,)
    invoices = (owned(Invoice, book).filter(subscription_id__in=[s.pk for s in subscriptions])
                .exclude(status__in=ignored).only("id", "subscription_id", "period_start", "period_end",
                                                 "pricing_terms", "status", "billed_claims"))
    current = {s.pk: current_terms(s, strategies) for s in subscriptions}
    for invoice in invoices:
        invoiced[invoice.subscription_id].append(
            (invoice.period_start, invoice.period_end, captured_terms(invoice, current[invoice.subscription_id]),
             invoice.pk, billed_claims(invoice)))
    return {s.pk: _timeline(s, current[s.pk], invoiced[s.pk]) for s in subscriptions}
