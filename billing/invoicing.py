"""Adapter from rows to the pricing engine: a subscription, its strategies and the ledger become the pure
inputs of `billing.pricing`, and the engine's exact lines come back as invoice lines rounded to cents.

This is the one place where the period engine's instants (`billing.periods`, boundaries at local midnight)
meet the pricing engine's local calendar days (`billing.pricing.Period`, `SubscriptionTerms`).
"""
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal


from billing import pricing
from billing.models import ChargeType, InvoiceLine, PricingStrategy, Subscription
from billing.periods import cycle_containing, local_date
from billing.selectors.usage import billable_quantity
from billing.selectors.subscriptions import effective_end, schedule_of, subscription_terms
from billing.services.changelog import pricing_terms
from config.core.errors import Unprocessable
from config.core.money import to_cents
from config.core.scoping import owned
from config.core.serialization import decimal_number, decimal_text


@dataclass(frozen=True)
class BillingWindow:
    """The instants usage is summed over, `[start, end)`, and the local days fees are measured against."""

    start: datetime
    end: datetime
    fee_period: pricing.Period


def billing_window(subscription: Subscription, start: datetime, end: datetime) -> BillingWindow:
    """Fees are measured against the whole billing cycle when `[start, end)` is one of the subscription's
    periods (a first or last period cut by startDate or endDate is prorated against its cycle); any other
    window the operator asks for is measured against itself."""
    schedule = schedule_of(subscription)
    cycle_start, cycle_end = cycle_containing(schedule, start)
    is_schedule_period = (start in (cycle_start, subscription.start_date)
                          and end in (cycle_end, effective_end(subscription)) and end <= cycle_end)
    span_start, span_end = (cycle_start, cycle_end) if is_schedule_period else (start, end)
    timezone = subscription.timezone
    return BillingWindow(start, end, pricing.Period(local_date(span_start, timezone),
                                                    pricing.first_uncovered_day(span_end, timezone)))


def strategy_terms(strategy: PricingStrategy) -> pricing.StrategyTerms:
    try:
        return pricing.StrategyTerms.from_values(
            charge_type=strategy.charge_type, pricing_model=strategy.pricing_model, rate=strategy.rate,
            tiers=strategy.tiers, minimum_commitment=strategy.minimum_commitment,
            billing_frequency=strategy.billing_frequency, strategy_id=str(strategy.pk))
    except (TypeError, ValueError) as exc:
        raise Unprocessable([f"pricing strategy {strategy.pk} ('{strategy.name}'): {exc}"])


def billed_strategies(subscription: Subscription) -> list[PricingStrategy]:
    """The plan's live strategies for the subscription's agent, in the plan's order."""
    return list(owned(PricingStrategy, subscription.book_id)
                .filter(plan_id=subscription.plan_id, agent_id=subscription.agent_id, active=True,
                        deleted_at__isnull=True)
                .select_related("signal", "agent").order_by("created_at", "id"))


def usage_totals(subscription: Subscription, strategies: list[PricingStrategy], window: BillingWindow
                 ) -> dict[str, Decimal]:
    """strategy id -> the period's billable total for its agent and signal (billing.selectors.usage: the
    definition credit pools share)."""
    return {str(strategy.pk): billable_quantity(book=subscription.book_id, customer_id=subscription.customer_id,
                                                agent_id=strategy.agent_id, signal_id=strategy.signal_id,
                                                signal_type=strategy.signal.type, start=window.start, end=window.end)
            for strategy in strategies if strategy.charge_type == ChargeType.USAGE}


def _description(line: pricing.Line, strategy: PricingStrategy | None, terms: pricing.StrategyTerms | None) -> str:
    if line.charge_type == pricing.PRORATED:
        text = "Prorated fees for the partial first period"
    elif line.charge_type == ChargeType.USAGE:
        text = f"{strategy.name}: {decimal_text(line.quantity)} {strategy.signal.short_name}"
    elif line.charge_type == ChargeType.SEAT_BASED:
        text = f"{strategy.name}: {decimal_text(line.quantity)} seats ({terms.billing_frequency})"
    elif line.charge_type == ChargeType.RECURRING:
        text = f"{strategy.name} ({terms.billing_frequency} fee)"
    else:
        text = f"{strategy.name} (one-time fee)"
    if line.prorated_days:
        text += f", {line.prorated_days[0]} of {line.prorated_days[1]} days"
    return text[:500]


def priced_lines(subscription: Subscription, window: BillingWindow) -> list[InvoiceLine]:
    """The invoice lines of one period (unsaved, without invoice), each amount rounded once to cents."""
    strategies = billed_strategies(subscription)
    terms = [strategy_terms(strategy) for strategy in strategies]
    usage = usage_totals(subscription, strategies, window)
    by_id = {str(strategy.pk): (strategy, term) for strategy, term in zip(strategies, terms)}
    lines = []
    for position, line in enumerate(pricing.period_lines(terms, subscription=subscription_terms(subscription),
                                                         period=window.fee_period, usage=usage)):
        strategy, term = by_id.get(line.strategy_id, (None, None))
        lines.append(InvoiceLine(
            book_id=subscription.book_id, position=position, charge_type=line.charge_type, strategy=strategy,
            agent_id=strategy.agent_id if strategy else subscription.agent_id,
            signal_id=strategy.signal_id if strategy else None,
            description=_description(line, strategy, term), quantity=line.quantity,
            used_quantity=usage.get(line.strategy_id) if line.charge_type == ChargeType.USAGE else None,
            amount=to_cents(line.amount),
            terms={"name": strategy.name, **pricing_terms(strategy)} if strategy else
            {"proratedAmount": decimal_number(subscription.prorated_amount)},
            prorated_days=line.prorated_days[0] if line.prorated_days else None,
            period_days=line.prorated_days[1] if line.prorated_days else None,
        ))
    return lines


def totals(line_amounts, *, discount_percent: Decimal, discount_fixed: Decimal, tax_percent: Decimal
           ) -> pricing.Totals:
    return pricing.invoice_totals(line_amounts, discount=pricing.Discount(discount_percent, discount_fixed),
                                  tax_percent=tax_percent)
