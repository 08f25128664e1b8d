"""Cost analytics (spec §4, `GET /v1/analytics/cost`): what usage cost over a window, by agent, customer,
signal, UTC day, plan and model, optionally against the equally long window right before.

Every event counts (internal coding-agent usage included); an event with cost null counts in
`eventCount` and `eventCountWithNullCost` and adds 0. byModel splits a multi-service event's cost per part
(an event naming two models counts once in each). byPlan attributes events to subscriptions by the rule of
`coverage.py`; the null plan holds the events no subscription covers.

Reads: one ledger read with every breakdown as a grouping set, and one over the subscriptions' segments
for byPlan (both from the rollup for whole days and the events for partial days), from one snapshot: the null
plan is the total less the plans' rows, so a batch committed between the two reads made it negative.
"""
from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from uuid import UUID

from analytics.selectors.coverage import book_segments
from analytics.selectors.usage import names_of, resolve_filters
from analytics.selectors.window import prior_window
from billing.models import Subscription
from core.clock import day_start
from core.money import SUMS, sum_exactly
from core.scoping import get_owned, owned
from customers.models import Agent, Signal
from customers.usage_sums import (Scope, Segment, Sums, Window, grand_total, ledger_reads, orphaned, regroup,
                                  rollup_sums)

COST_MEASURES = ("event_count", "unpriced_count", "cost", "model_event_count", "model_cost")
GROUPS = {"total": (), "agent": ("agent",), "customer": ("customer",), "signal": ("signal",), "day": ("day",),
          "model": ("model",)}


@dataclass(frozen=True)
class CostRow:
    key: UUID | str | datetime | None
    cost: Decimal
    event_count: int


@dataclass(frozen=True)
class CostAnalytics:
    window: Window
    cost: Decimal
    event_count: int
    event_count_with_null_cost: int
    by_agent: list[CostRow]
    by_customer: list[CostRow]
    by_signal: list[CostRow]
    by_day: list[CostRow]
    by_plan: list[CostRow]
    by_model: list[CostRow]
    prior: "CostAnalytics | None" = None


def _rows(sums: list[Sums], *, per_model: bool = False) -> list[CostRow]:
    rows = [CostRow(row.key[0], row.model_cost if per_model else row.cost,
                    row.model_event_count if per_model else row.event_count) for row in sums]
    return sorted(rows, key=lambda row: (-row.cost, -row.event_count, str(row.key)))


def _by_plan(*, book, window: Window, scope: Scope, total: Sums, segments: list[Segment],
             plan_of: dict) -> list[CostRow]:
    """Cost per plan of the subscriptions the events belong to; the rest under the null plan."""
    labelled = rollup_sums(book=book, window=window, scope=scope, groups={"subscription": ("label",)},
                           segments=segments, measures=("event_count", "cost"))["subscription"]
    by_plan = regroup(labelled, lambda row: (plan_of[row.key[0]],))
    orphans = Sums((None,), total.event_count - sum(row.event_count for row in by_plan),
                   cost=SUMS.subtract(total.cost, sum_exactly(row.cost for row in by_plan)))
    return _rows([*by_plan, *([orphans] if orphans.event_count else [])])


def _cost(*, book, window: Window, scope: Scope, subscription: Subscription | None, segments: list[Segment],
          plan_of: dict) -> CostAnalytics:
    sums = rollup_sums(book=book, window=window, scope=scope, groups=GROUPS, measures=COST_MEASURES,
                       segments=segments if subscription is not None else None)
    total = grand_total(sums["total"])
    for dimension, model in (("agent", Agent), ("signal", Signal)):
        known = names_of(model, book, (row.key[0] for row in sums[dimension]))
        sums[dimension] = orphaned(sums[dimension], 0, known)
    if subscription is not None:  # every event in scope is the subscription's
        by_plan = [CostRow(subscription.plan_id, total.cost, total.event_count)] if total.event_count else []
    else:
        by_plan = _by_plan(book=book, window=window, scope=scope, total=total, segments=segments, plan_of=plan_of)
    return CostAnalytics(
        window=window, cost=total.cost, event_count=total.event_count,
        event_count_with_null_cost=total.unpriced_count,
        by_agent=_rows(sums["agent"]), by_customer=_rows(sums["customer"]), by_signal=_rows(sums["signal"]),
        by_day=sorted((CostRow(day_start(row.key[0]), row.cost, row.event_count) for row in sums["day"]),
                      key=lambda row: row.key),
        by_plan=by_plan, by_model=_rows(sums["model"], per_model=True))


def cost_analytics(*, book, window: Window, filters: dict | None = None,
                   include_prior_window: bool = False) -> CostAnalytics:
    """`filters`: any of customerId, agentId, signalId, subscriptionId (UUIDs of the book, else 404).
    With subscriptionId only the events attributed to that subscription count."""
    before = prior_window(window) if include_prior_window else None  # a 422 before any reading
    filters = dict(filters or {})
    subscription = None
    if "subscriptionId" in filters:
        subscription = get_owned(Subscription, book, filters.pop("subscriptionId"))
    ids = resolve_filters(book=book, filters=filters)
    scope = Scope(customer_id=ids.get("customerId"), agent_id=ids.get("agentId"), signal_id=ids.get("signalId"))
    subscriptions = owned(Subscription, book).only("id", "plan_id", "agent_id")
    if subscription is not None:
        subscriptions = subscriptions.filter(pk=subscription.pk)
    elif scope.agent_id is not None:
        subscriptions = subscriptions.filter(agent_id=scope.agent_id)
    with ledger_reads(book):
        return _cost_analytics(book=book, window=window, before=before, scope=scope, subscription=subscription,
                               subscriptions=subscriptions)


def _cost_analytics(*, book, window: Window, before: Window | None, scope: Scope,
                    subscription: Subscription | None, subscriptions) -> CostAnalytics:
    plan_of = {str(s.id): s.plan_id for s in subscriptions}
    coverage = book_segments(book=book, customer_id=scope.customer_id or (subscription and subscription.customer_id))
    segments = [segment for subscription_id, pieces in coverage.items() if str(subscription_id) in plan_of
                for segment in pieces]
    current = _cost(book=book, window=window, scope=scope, subscription=subscription, segments=segments,
                    plan_of=plan_of)
    if before is None:
        return current
    prior = _cost(book=book, window=before, scope=scope, subscription=subscription, segments=segments,
                  plan_of=plan_of)
    return replace(current, prior=prior)
