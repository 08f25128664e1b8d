"""Pricing plans and their agent links."""
from decimal import Decimal
from uuid import UUID

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.db.models.deletion import RestrictedError

from billing.models import PlanAgent, PricingPlan, PricingStrategy, Subscription, SubscriptionStatus
from core.errors import BadRequest, Conflict, NotFound
from core.ids import uuid_or_none
from billing.pricing.engine import QUANTITY_ARITHMETIC
from core.money import EXACT_IN_PLACES, quantized
from core.scoping import existing_row_save, get_owned, owned
from core.serialization import decimal_text
from customers.models import Agent

HUNDRED = Decimal(100)
EXACT_IN_QUANTUM = Decimal(1).scaleb(-EXACT_IN_PLACES)
LIVE_STATUSES = (SubscriptionStatus.UPCOMING, SubscriptionStatus.ACTIVE)


@transaction.atomic
def plan_create(*, book, name: str, description: str = "", features_list: dict | None = None,
                is_active: bool = True, agent_id: UUID | None = None) -> PricingPlan:
    """A plan, linked to `agent_id` when given (404 for an agent outside the book)."""
    agent = get_owned(Agent, book, agent_id) if agent_id else None
    plan = PricingPlan.objects.create(book=book, name=name, description=description,
                                      features_list=features_list or {}, is_active=is_active)
    if agent is not None:
        PlanAgent.objects.create(book=book, plan=plan, agent=agent)
    return plan


@transaction.atomic
def plan_update(*, book, plan_id, **fields) -> PricingPlan:
    """Change the fields given. A plan deleted meanwhile is a 404, never recreated: the row is held until commit
    (a concurrent delete waits, or committed first and this reads nothing) and saved with an UPDATE only."""
    # FOR NO KEY UPDATE, the lock the UPDATE takes anyway: subscriptions and strategies created meanwhile (FOR KEY
    # SHARE, their foreign key) do not wait for it; a delete (FOR UPDATE) does.
    plan = get_owned(PricingPlan, book, plan_id, queryset=owned(PricingPlan, book).select_for_update(no_key=True))
    for field, value in fields.items():
        setattr(plan, field, value)
    existing_row_save(plan)
    return plan


def plan_agent_link(*, book, plan_id, agent_id: UUID) -> PricingPlan:
    """Link one more agent; the `plan_agent_uniq` constraint turns a second link into a 409."""
    plan = get_owned(PricingPlan, book, plan_id)
    agent = get_owned(Agent, book, agent_id)
    try:
        with transaction.atomic():
            PlanAgent.objects.create(book=book, plan=plan, agent=agent)
    except IntegrityError:
        raise Conflict(["agentId: The plan is already linked to this agent."])
    return plan


@transaction.atomic
def plan_agent_unlink(*, book, plan_id, agent_id) -> None:
    """Unlink an agent. Refused while upcoming or active subscriptions use the pair (400, spec section 4) and
    while the plan still prices this agent (409: delete those strategies first, nothing is removed silently).
    The link row is locked so a concurrent subscription create or strategy create sees the outcome."""
    plan = get_owned(PricingPlan, book, plan_id)
    link = owned(PlanAgent, book).select_for_update().filter(plan=plan, agent_id=uuid_or_none(agent_id)).first()
    if link is None:
        raise NotFound("Agent is not linked to this plan")
    live = owned(Subscription, book).filter(plan=plan, agent_id=link.agent_id, status__in=LIVE_STATUSES).count()
    if live:
        raise BadRequest([f"agentId: {live} upcoming or active subscription(s) use this plan with this agent; "
                          "end them before unlinking."])
    strategies = owned(PricingStrategy, book).filter(plan=plan, agent_id=link.agent_id, deleted_at__isnull=True)
    if strategies.exists():
        raise Conflict([f"agentId: The plan still has {strategies.count()} pricing strategy(ies) for this agent; "
                        "delete them before unlinking."])
    link.delete()


def plan_subscriptions(*, book, plan) -> tuple[int, int]:
    """(upcoming or active, all) subscriptions of the plan: a plan with any of them is not deleted."""
    subscriptions = owned(Subscription, book).filter(plan=plan)
    return subscriptions.filter(status__in=LIVE_STATUSES).count(), subscriptions.count()


@transaction.atomic
def plan_delete(*, book, plan_id) -> None:
    """Permanent delete, with its strategies and links. Refused (409) while any subscription uses the plan:
    live ones are billed by it, ended ones keep it for their history and invoices (retire it with isActive)."""
    plan = get_owned(PricingPlan, book, plan_id, queryset=owned(PricingPlan, book).select_for_update())
    live, used = plan_subscriptions(book=book, plan=plan)
    if live:
        raise Conflict(f"The plan has {live} upcoming or active subscription(s); end them before deleting it.")
    if used:
        raise Conflict("Ended subscriptions keep this plan for their history and invoices; "
                       "set isActive to false to retire it instead.")
    try:
        with transaction.atomic():
            plan.delete()
    except (ProtectedError, RestrictedError, IntegrityError):  # a subscription created meanwhile
        raise Conflict("The plan gained a subscription while being deleted; it was kept.")


@transaction.atomic
def plan_copy(*, book, plan_id, new_name: str | None = None, discount: Decimal = Decimal(0)) -> PricingPlan:
    """A new plan with the source's fields, agent links and current (not deleted) strategies.

    `discount` is a percent taken off every rate and tier rate of the copy (pool price and overage rate of a
    credit pool included), kept exact; tier bounds and minimum commitments are unchanged."""
    source = get_owned(PricingPlan, book, plan_id)
    factor = QUANTITY_ARITHMETIC.divide(QUANTITY_ARITHMETIC.subtract(HUNDRED, discount), HUNDRED)  # exact
    copy = PricingPlan.objects.create(book=book, name=new_name or f"{source.name} (copy)"[:255],
                                      description=source.description, features_list=source.features_list,
                                      is_active=source.is_active)
    PlanAgent.objects.bulk_create([PlanAgent(book=book, plan=copy, agent_id=link.agent_id)
                                   for link in source.agent_links.all()])
    strategies = owned(PricingStrategy, book).filter(plan=source, deleted_at__isnull=True).order_by("created_at")
    PricingStrategy.objects.bulk_create([
        PricingStrategy(
            book=book, plan=copy, agent_id=strategy.agent_id, name=strategy.name, charge_type=strategy.charge_type,
            signal_id=strategy.signal_id, pricing_model=strategy.pricing_model,
            billing_frequency=strategy.billing_frequency, minimum_commitment=strategy.minimum_commitment,
            active=strategy.active, tags=strategy.tags,
            rate=None if strategy.rate is None else _discounted(strategy.rate, factor),
            tiers=[{**tier, "rate": _discounted_text(tier["rate"], factor)} for tier in strategy.tiers],
        )
        for strategy in strategies
    ])
    return copy


def _discounted(rate: Decimal, factor: Decimal) -> Decimal:
    """The rate times the factor, every digit kept up to the places a written rate may have (a rate and a discount of
    many places each could have more; only then is the last place rounded)."""
    product = QUANTITY_ARITHMETIC.multiply(rate, factor)
    return product if -product.as_tuple().exponent <= EXACT_IN_PLACES else quantized(product, EXACT_IN_QUANTUM)


def _discounted_text(rate_text: str, factor: Decimal) -> str:
    return decimal_text(_discounted(Decimal(rate_text), factor))


