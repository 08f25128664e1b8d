"""Pricing strategies of a plan: each checked as a whole (after merging a PATCH into the stored row), written
all-or-nothing, and every change to charging terms logged on the subscriptions it prices."""
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db import transaction

from billing.models import BillingFrequency, ChargeType, PlanAgent, PricingModel, PricingPlan, PricingStrategy
from billing.services.changelog import json_value, price_update_record, pricing_terms
from billing.services.credit_pools import plan_pools_follow, plan_pools_lock
from core.errors import BadRequest, NotFound
from core.scoping import get_owned, owned
from core.serialization import decimal_text
from customers.models import Agent, Signal

ZERO = Decimal(0)
DEFAULTS = {"signal_id": None, "pricing_model": None, "billing_frequency": BillingFrequency.MONTHLY, "tiers": [],
            "rate": None, "minimum_commitment": None, "active": True, "tags": []}
STORED_FIELDS = ("name", "agent_id", "charge_type", "signal_id", "pricing_model", "billing_frequency", "tiers",
                 "rate", "minimum_commitment", "active", "tags")
FEES = (ChargeType.RECURRING, ChargeType.ONETIME)
METERED = (ChargeType.USAGE, ChargeType.SEAT_BASED)
TIERED = (PricingModel.GRADUATED, PricingModel.VOLUME, PricingModel.CREDIT_POOL)


def tier_errors(tiers: list[dict], pricing_model: str) -> list[tuple[str, str]]:
    """Tiers ascend from 0, each lower equal to the previous upper, only the last open-ended (upper null);
    a credit pool is exactly [0, pool size] at the pool price and [pool size, null] at the overage rate."""
    if not tiers:
        return [("tiers", f"{pricing_model} pricing needs tiers.")]
    errors = []
    if pricing_model == PricingModel.CREDIT_POOL and len(tiers) != 2:
        errors.append(("tiers", "credit_pool takes exactly two tiers: {lower: 0, upper: pool size, rate: pool price} "
                                "and {lower: pool size, upper: null, rate: overage rate per unit}."))
    last = len(tiers) - 1
    for index, tier in enumerate(tiers):
        at = f"tiers[{index}]"
        previous_upper = tiers[index - 1]["upper"] if index else ZERO
        if index == 0 and tier["lower"] != ZERO:
            errors.append((f"{at}.lower", "The first tier starts at 0."))
        elif index and previous_upper is not None and tier["lower"] != previous_upper:
            errors.append((f"{at}.lower", f"Must equal the previous tier's upper ({decimal_text(previous_upper)}): "
                                          "tiers are contiguous."))
        if tier["upper"] is None and index != last:
            errors.append((f"{at}.upper", "Only the last tier is open-ended (upper null)."))
        elif tier["upper"] is not None and tier["upper"] <= tier["lower"]:
            errors.append((f"{at}.upper", "Must be greater than lower: tiers ascend."))
    if tiers[last]["upper"] is not None:
        errors.append((f"tiers[{last}].upper",
                       "The last tier is open-ended (upper null) so every quantity has a rate."))
    return errors


def strategy_term_errors(terms: dict) -> list[tuple[str, str]]:
    """The rules between fields of one strategy, as (camelCase field, message) pairs."""
    charge, model = terms["charge_type"], terms["pricing_model"]
    errors = []
    if charge == ChargeType.USAGE and terms["signal_id"] is None:
        errors.append(("signalId", "Required when chargeType is usage."))
    if charge != ChargeType.USAGE and terms["signal_id"] is not None:
        errors.append(("signalId", "Only usage strategies bill a signal; send null or leave it out."))
    if charge in FEES and terms["minimum_commitment"] is not None:
        errors.append(("minimumCommitment", "Applies to usage and seat_based strategies only."))
    if charge in METERED and model is None:
        errors.append(("pricingModel", "Required when chargeType is usage or seat_based."))
    elif charge in FEES and model not in (None, PricingModel.FLAT):
        errors.append(("pricingModel",
                       "A recurring or one-time fee is a fixed rate: leave pricingModel out or use flat."))
    elif charge == ChargeType.SEAT_BASED and model == PricingModel.CREDIT_POOL:
        errors.append(("pricingModel", "credit_pool applies to usage strategies only."))
    elif model in TIERED:
        if terms["rate"] is not None:
            errors.append(("rate", f"Not used with {model} pricing: the rates are in tiers; send null."))
        errors.extend(tier_errors(terms["tiers"], model))
    else:  # flat rate or a fee
        if terms["rate"] is None:
            errors.append(("rate", "Required for a flat rate or a fee."))
        if terms["tiers"]:
            errors.append(("tiers", "Not used with a flat rate or a fee: send an empty list."))
    return errors


@dataclass
class _Draft:
    path: str  # prefix of error fields: "[0]", "strategies.update[1]" or "" for a single strategy
    terms: dict  # every stored field, snake_case, tiers as Decimals
    strategy: PricingStrategy | None = None  # the row an update merges into

    def field(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name


def _decimal_tiers(stored: list[dict]) -> list[dict]:
    return [{"lower": Decimal(tier["lower"]), "upper": None if tier["upper"] is None else Decimal(tier["upper"]),
             "rate": Decimal(tier["rate"])} for tier in stored]


def _stored_tiers(tiers: list[dict]) -> list[dict]:
    return [{key: decimal_text(tier[key]) for key in ("lower", "upper", "rate")} for tier in tiers]


def _sent(fields: dict) -> dict:
    return {**fields, "tiers": fields["tiers"] or []} if "tiers" in fields else fields


def _new_draft(path: str, fields: dict) -> _Draft:
    return _Draft(path, {**DEFAULTS, **_sent(fields)})


def _update_draft(path: str, strategy: PricingStrategy, changes: dict) -> _Draft:
    stored = {field: getattr(strategy, field) for field in STORED_FIELDS}
    stored["tiers"] = _decimal_tiers(strategy.tiers)
    return _Draft(path, {**stored, **_sent(changes)}, strategy)


def _check(book, plan: PricingPlan, drafts: list[_Draft]) -> None:
    """404 naming each unknown agent or signal, then 400 naming every broken rule of every draft.

    The plan's agent links are locked so an unlink cannot slip between this check and the write."""
    agent_ids = {draft.terms["agent_id"] for draft in drafts}
    signal_ids = {draft.terms["signal_id"] for draft in drafts if draft.terms["signal_id"]}
    agents = set(owned(Agent, book).filter(pk__in=agent_ids).values_list("pk", flat=True))
    signal_agents = dict(owned(Signal, book).filter(pk__in=signal_ids).values_list("pk", "agent_id"))
    linked = set(owned(PlanAgent, book).select_for_update().filter(plan=plan).values_list("agent_id", flat=True))
    missing = [f"{draft.field('agentId')}: Agent not found." for draft in drafts
               if draft.terms["agent_id"] not in agents]
    missing += [f"{draft.field('signalId')}: Signal not found." for draft in drafts
                if draft.terms["signal_id"] and draft.terms["signal_id"] not in signal_agents]
    if missing:
        raise NotFound(missing)
    errors = []
    for draft in drafts:
        terms = draft.terms
        if terms["agent_id"] not in linked:
            errors.append(f"{draft.field('agentId')}: Agent is not linked to this plan; "
                          "link it with POST /v1/pricing-plans/{planId}/agents first.")
        if terms["signal_id"] and signal_agents[terms["signal_id"]] != terms["agent_id"]:
            errors.append(f"{draft.field('signalId')}: The signal belongs to another agent than agentId.")
        errors += [f"{draft.field(field)}: {message}" for field, message in strategy_term_errors(terms)]
    if errors:
        raise BadRequest(errors)


def _write(book, plan: PricingPlan, draft: _Draft, *, actor: str) -> PricingStrategy:
    strategy = draft.strategy or PricingStrategy(book=book, plan=plan)
    before = pricing_terms(draft.strategy)
    for field in STORED_FIELDS:
        setattr(strategy, field, draft.terms[field])
    strategy.tiers = _stored_tiers(draft.terms["tiers"])
    strategy.save()
    after = pricing_terms(strategy)
    if draft.strategy is None:
        summary = f"Pricing strategy '{strategy.name}' added ({strategy.charge_type})"
    else:
        changed = [field for field in after if before.get(field) != after[field]]
        summary = f"Pricing strategy '{strategy.name}' changed: {', '.join(changed)}"
    price_update_record(strategy=strategy, before=before, after=after, summary=summary, actor=actor)
    return strategy


def _live_strategies(book, plan: PricingPlan):
    return owned(PricingStrategy, book).filter(plan=plan, deleted_at__isnull=True)


def _live_strategy(book, plan: PricingPlan, strategy_id) -> PricingStrategy:
    """A strategy of this plan that is not deleted, locked for the write (deleted ones read as 404 to writes)."""
    return get_owned(PricingStrategy, book, strategy_id,
                     queryset=_live_strategies(book, plan).select_for_update())


# Which subscription bills an event follows a plan's strategies in every period no final invoice holds, so each
# write below settles again the pools of the customers and agents on the plan (billing/services/credit_pools.py
# `plan_pools_lock`, taken first: before the rows these writes lock).

# A plan's strategies become an invoice's lines, numbered in a small integer (with room for the prorated line): far
# more than any price list holds.
MOST_STRATEGIES_PER_PLAN = 1000


def _refuse_past_the_most(book, plan: PricingPlan, adding: int, field: str) -> None:
    """400 when `adding` more strategies would give the plan more than MOST_STRATEGIES_PER_PLAN live ones. Two writers
    at once may both pass it; the lines' numbering has room for thirty times as many."""
    if adding and _live_strategies(book, plan).count() + adding > MOST_STRATEGIES_PER_PLAN:
        raise BadRequest([f"{field}: A plan holds at most {MOST_STRATEGIES_PER_PLAN:,} pricing strategies; delete "
                          "some or use another plan."])


@transaction.atomic
def strategies_create(*, book, plan_id, items: list[dict], actor: str, now: datetime) -> list[PricingStrategy]:
    """Create every item or none; errors name the item (`[2].signalId: ...`)."""
    plan = get_owned(PricingPlan, book, plan_id)
    pools = plan_pools_lock(book=book, plan_id=plan.pk)
    _refuse_past_the_most(book, plan, len(items), "strategies")
    drafts = [_new_draft(f"[{index}]", item) for index, item in enumerate(items)]
    _check(book, plan, drafts)
    created = [_write(book, plan, draft, actor=actor) for draft in drafts]
    plan_pools_follow(book=book, pairs=pools, now=now)
    return created


@transaction.atomic
def strategy_update(*, book, plan_id, strategy_id, changes: dict, actor: str, now: datetime) -> PricingStrategy:
    plan = get_owned(PricingPlan, book, plan_id)
    pools = plan_pools_lock(book=book, plan_id=plan.pk)
    draft = _update_draft("", _live_strategy(book, plan, strategy_id), changes)
    _check(book, plan, [draft])
    strategy = _write(book, plan, draft, actor=actor)
    plan_pools_follow(book=book, pairs=pools, now=now)
    return strategy


@transaction.atomic
def strategies_batch(*, book, plan_id, new: list[dict], update: list[dict], actor: str, now: datetime
                     ) -> tuple[list[PricingStrategy], list[PricingStrategy]]:
    """`{new: [...], update: [{id, ...}]}` applied all-or-nothing; returns (created, updated)."""
    plan = get_owned(PricingPlan, book, plan_id)
    pools = plan_pools_lock(book=book, plan_id=plan.pk)
    ids = [item["id"] for item in update]
    repeated = [f"strategies.update[{index}].id: Listed more than once." for index, strategy_id in enumerate(ids)
                if strategy_id in ids[:index]]
    if repeated:
        raise BadRequest(repeated)
    _refuse_past_the_most(book, plan, len(new), "strategies.new")
    rows = {row.pk: row for row in _live_strategies(book, plan).select_for_update().filter(pk__in=ids)}
    missing = [f"strategies.update[{index}].id: Pricing strategy not found." for index, strategy_id in enumerate(ids)
               if strategy_id not in rows]
    if missing:
        raise NotFound(missing)
    drafts_new = [_new_draft(f"strategies.new[{index}]", item) for index, item in enumerate(new)]
    drafts_update = [_update_draft(f"strategies.update[{index}]", rows[item["id"]],
                                   {key: value for key, value in item.items() if key != "id"})
                     for index, item in enumerate(update)]
    _check(book, plan, drafts_new + drafts_update)
    written = ([_write(book, plan, draft, actor=actor) for draft in drafts_new],
               [_write(book, plan, draft, actor=actor) for draft in drafts_update])
    plan_pools_follow(book=book, pairs=pools, now=now)
    return written


@transaction.atomic
def strategy_delete(*, book, plan_id, strategy_id, now: datetime, actor: str) -> None:
    """Soft delete: the row stays (changelog entries and invoices point at it) with `deleted_at` set; it leaves
    lists and pricing at once."""
    plan = get_owned(PricingPlan, book, plan_id)
    pools = plan_pools_lock(book=book, plan_id=plan.pk)
    strategy = _live_strategy(book, plan, strategy_id)
    before = pricing_terms(strategy)
    strategy.deleted_at = now
    strategy.save(update_fields=["deleted_at", "updated_at"])
    price_update_record(strategy=strategy, before=before, after={}, actor=actor,
                        summary=f"Pricing strategy '{strategy.name}' deleted",
                        extra={"deletedAt": {"before": None, "after": json_value(now)}})
    plan_pools_follow(book=book, pairs=pools, now=now)
