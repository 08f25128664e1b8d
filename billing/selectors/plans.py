from django.db.models import Prefetch

from billing.models import PlanAgent, PricingPlan, PricingStrategy
from billing.pricing import StrategyTerms
from config.core.scoping import get_owned, owned
from customers.models import SignalType


def plan_list(*, book):
    links = Prefetch("agent_links", queryset=PlanAgent.objects.select_related("agent").order_by("created_at"))
    return owned(PricingPlan, book).prefetch_related(links).order_by("-created_at", "id")


def plan_get(*, book, plan_id) -> PricingPlan:
    return get_owned(PricingPlan, book, plan_id, queryset=plan_list(book=book))


def strategy_list(*, book, plan_id):
    """The plan's current strategies (soft-deleted ones are left out), oldest first."""
    plan = get_owned(PricingPlan, book, plan_id)
    return owned(PricingStrategy, book).filter(plan=plan, deleted_at__isnull=True).order_by("created_at", "id")


def strategy_get(*, book, plan_id, strategy_id) -> PricingStrategy:
    """One strategy of the plan, soft-deleted ones included (they show `deletedAt`)."""
    plan = get_owned(PricingPlan, book, plan_id)
    return get_owned(PricingStrategy, book, strategy_id, queryset=owned(PricingStrategy, book).filter(plan=plan))


def strategy_terms(strategy: PricingStrategy) -> StrategyTerms:
    """A stored strategy as the pricing engine takes it (the strategy API only stores priceable terms)."""
    return StrategyTerms.from_values(charge_type=strategy.charge_type, pricing_model=strategy.pricing_model,
                                     rate=strategy.rate, tiers=strategy.tiers,
                                     minimum_commitment=strategy.minimum_commitment,
                                     billing_frequency=strategy.billing_frequency, strategy_id=str(strategy.id))


def billable_units(strategy: PricingStrategy, quantity, attempts):
    """What a usage strategy bills of its signal's events (spec §2 signal types): a `usage` (outcome)
    signal their quantity; a `volume` (activity) signal every event as at least one attempt."""
    return attempts if strategy.signal.type == SignalType.VOLUME else quantity


def strategies_pricing(*, book, plan_ids) -> dict:
    """(plan id, agent id) -> the current, active strategies pricing subscriptions of that plan and agent,
    oldest first."""
    pricing: dict = {}
    strategies = (owned(PricingStrategy, book).filter(plan_id__in=plan_ids, deleted_at__isnull=True, active=True)
                  .select_related("signal").order_by("created_at", "id"))
    for strategy in strategies:
        pricing.setdefault((strategy.plan_id, strategy.agent_id), []).append(strategy)
    return pricing
