from django.db.models import Prefetch

from billing.models import PlanAgent, PricingPlan, PricingStrategy
from core.scoping import get_owned, owned


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
