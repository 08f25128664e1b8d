"""Invoice lines: a subscription's terms for a period and the usage it claims become the engine's exact
lines, rounded to cents once each.

This is where the period calendar's instants (`periods.py`, boundaries at local midnight) meet the
engine's local calendar days (`engine.DaySpan`, `SubscriptionTerms`).
"""
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from uuid import UUID

from billing.models import ChargeType, Invoice, InvoiceLine, PricingStrategy, Subscription
from billing.pricing import engine
from billing.pricing.attribution import Claim
from billing.pricing.periods import first_uncovered_day, local_date
from billing.pricing.terms import (PlanTerms, PricedStrategy, captured_terms, current_terms, effective_end, grid_cycle,
                                   subscription_terms, terms_timelines)
from billing.pricing.usage import claims_usage, window_claims
from core import display
from core.money import to_cents, to_exact
from core.scoping import owned
from core.serialization import decimal_text


@dataclass(frozen=True)
class BillingWindow:
    """The instants usage is summed over, `[start, end)`, and the local days fees are measured against."""

    start: datetime
    end: datetime
    fee_period: engine.DaySpan
    timezone: str  # the one its days are counted in


def billing_window(subscription: Subscription, start: datetime, end: datetime) -> BillingWindow:
    """Fees are measured against the whole billing cycle when `[start, end)` is one of the subscription's
    periods (a first or last period cut by startDate or endDate is prorated against its cycle); any other
    window the operator asks for is measured against itself."""
    # A period before a billingDay or timezone change keeps its grid; the first one after it starts where the last
    # one under the old rules ended.
    cycle_start, cycle_end, timezone = grid_cycle(subscription, start)
    is_schedule_period = (start in (cycle_start, subscription.start_date)
                          and end in (cycle_end, effective_end(subscription)) and end <= cycle_end)
    span_start, span_end = (cycle_start, cycle_end) if is_schedule_period else (start, end)
    return BillingWindow(start, end, engine.DaySpan(local_date(span_start, timezone),
                                                    first_uncovered_day(span_end, timezone)), timezone)


def pool_units(subscription: Subscription, start: datetime, end: datetime, pool_size: Decimal) -> Decimal:
    """The units a credit pool grants in the subscription's period `[start, end)`: the pool size, prorated by the
    days each side covers in a period a plan change splits (exact, as the invoice bills it)."""
    window = billing_window(subscription, start, end)
    period, terms = window.fee_period, subscription_terms(subscription, window.timezone)
    if not terms.split_by_change(period):
        return pool_size
    # A share is a division, rarely finite: kept to the 12 places a grant's units always were.
    return to_exact(pool_size * engine.covered_days(terms, period) / period.days)


def invoice_terms(invoice: Invoice) -> PlanTerms:
    """The terms an invoice is priced with: those it captured, or (first generation) the current ones."""
    return captured_terms(invoice, current_terms(invoice.subscription))


def period_claims(subscription: Subscription, window: BillingWindow) -> list[Claim]:
    """What the subscription bills in the window: its claims (attribution.py) among the events of its customer,
    settled against every other subscription of the customer, clipped to the window."""
    return window_claims(book=subscription.book_id, windows={subscription: (window.start, window.end)})


def claims_counted_by(invoice: Invoice) -> list[Claim]:
    """The claims the invoice's lines counted when they last read the ledger (`usage_read_at`; before that field,
    when it was issued or last saved): its period's claims settled among the subscriptions of its customer that
    existed then (one created since, even backdated, took none of them). For an invoice that did not store them
    with its lines (`Invoice.billed_claims` null)."""
    moment = invoice.usage_read_at or invoice.issued_at or invoice.updated_at
    subscription = invoice.subscription
    window = billing_window(subscription, invoice.period_start, invoice.period_end)
    existing = owned(Subscription, subscription.book_id).filter(customer_id=subscription.customer_id,
                                                                created_at__lte=moment)
    timelines = terms_timelines(book=subscription.book_id, subscriptions=[*existing.exclude(pk=subscription.pk),
                                                                         subscription])
    return window_claims(book=subscription.book_id, windows={subscription: (window.start, window.end)},
                         timelines=timelines)


def claims_document(claims: list[Claim]) -> list[dict]:
    """Claims as an invoice keeps them (`Invoice.billed_claims`): agent, signal and the instants, as text."""
    return [{"agentId": str(claim.agent_id), "signalId": str(claim.signal_id), "start": claim.start.isoformat(),
             "end": claim.end.isoformat()} for claim in claims]


def claims_of_document(invoice: Invoice) -> list[Claim]:
    """The claims an invoice kept with its lines (`billed_claims`, `claims_document`), as claims again."""
    return [Claim(invoice.subscription_id, invoice.customer_id, UUID(claim["agentId"]), UUID(claim["signalId"]),
                  datetime.fromisoformat(claim["start"]), datetime.fromisoformat(claim["end"]))
            for claim in invoice.billed_claims or ()]


def _description(line: engine.Line, strategy: PricedStrategy | None) -> str:
    """The line as the customer reads it on the invoice: quantities grouped as everywhere people read them
    (`3,157 Conversations`, core/display.py); the line's `quantity` keeps the exact value."""
    if line.charge_type == engine.PRORATED:
        text = "Prorated fees for the partial first period"
    elif line.charge_type == ChargeType.USAGE:
        text = f"{strategy.name}: {display.quantity(line.quantity)}"
        unit = display.unit(strategy.signal_name)
        if unit.casefold() != strategy.name.casefold():  # not "Resolved tickets: 246 Resolved tickets"
            text += f" {unit}"
    elif line.charge_type == ChargeType.SEAT_BASED:
        text = f"{strategy.name}: {display.quantity(line.quantity)} seats ({strategy.terms.billing_frequency})"
    elif line.charge_type == ChargeType.RECURRING:
        text = f"{strategy.name} ({strategy.terms.billing_frequency} fee)"
    else:
        text = f"{strategy.name} (one-time fee)"
    if line.prorated_days:
        text += f", {line.prorated_days[0]} of {line.prorated_days[1]} days"
    return text[:500]


def priced_lines(subscription: Subscription, window: BillingWindow, terms: PlanTerms,
                 claims: list[Claim] | None = None) -> list[InvoiceLine]:
    """The invoice lines of one period under `terms` (unsaved, without invoice), each amount rounded once to
    cents. Usage lines bill what the subscription claims of the ledger in the window (`claims`: its
    `period_claims`, when the caller read them already)."""
    if claims is None:
        claims = period_claims(subscription, window)
    usage_by_signal = {signal_id: quantity for (_, signal_id), quantity in
                       claims_usage(book=subscription.book_id, claims=claims).items()}
    usage = {str(s.id): usage_by_signal.get(s.signal_id, Decimal(0)) for s in terms.strategies if s.is_usage}
    by_id = {str(strategy.id): strategy for strategy in terms.strategies}
    existing = set(owned(PricingStrategy, subscription.book_id).filter(pk__in=[s.id for s in terms.strategies])
                   .values_list("pk", flat=True))
    priced_subscription = replace(subscription_terms(subscription, window.timezone), seats_count=terms.seats_count,
                                  prorated_amount=terms.prorated_amount)
    # A line of no strategy (a proratedAmount) names the agent the terms were written for, as the usage lines do
    # (after a PATCH of agentId an invoice's captured terms keep the old agent).
    terms_agent = next((strategy.agent_id for strategy in terms.strategies), subscription.agent_id)
    lines = []
    for position, line in enumerate(engine.period_lines([s.terms for s in terms.strategies],
                                                        subscription=priced_subscription, period=window.fee_period,
                                                        usage=usage)):
        strategy = by_id.get(line.strategy_id)
        lines.append(InvoiceLine(
            book_id=subscription.book_id, position=position, charge_type=line.charge_type,
            strategy_id=strategy.id if strategy is not None and strategy.id in existing else None,
            agent_id=strategy.agent_id if strategy else terms_agent,
            signal_id=strategy.signal_id if strategy else None,
            description=_description(line, strategy), quantity=line.quantity,
            used_quantity=usage.get(line.strategy_id) if line.charge_type == ChargeType.USAGE else None,
            amount=to_cents(line.amount),
            terms=strategy.document() if strategy else {"proratedAmount": decimal_text(terms.prorated_amount)},
            prorated_days=line.prorated_days[0] if line.prorated_days else None,
            period_days=line.prorated_days[1] if line.prorated_days else None,
        ))
    return lines


def totals(line_amounts, *, discount_percent: Decimal, discount_fixed: Decimal, tax_percent: Decimal
           ) -> engine.Totals:
    return engine.invoice_totals(line_amounts, discount=engine.Discount(discount_percent, discount_fixed),
                                 tax_percent=tax_percent)
