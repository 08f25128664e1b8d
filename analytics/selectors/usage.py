"""Usage analytics (spec §4, `GET /v1/analytics/usage`): events, quantity and cost over a window, as a
time series by day, ISO week (Monday) or calendar month (UTC), with an optional breakdown by customer,
signal or agent. Every event counts, internal coding-agent usage included (contract: it is cost).
One read through `customers.usage_sums.rollup_sums`: the rollup for whole days, the events for partial days."""
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from uuid import UUID

from core.money import ZERO
from core.scoping import get_owned, owned
from customers.models import Agent, Customer, Signal
from customers.usage_sums import Scope, Sums, Window, grand_total, orphaned, rollup_sums

GROUP_BY = {"daily": "day", "weekly": "week", "monthly": "month"}
BREAKDOWN_BY = {"customer": Customer, "signal": Signal, "agent": Agent}
FILTERS = {"customerId": Customer, "agentId": Agent, "signalId": Signal}


@dataclass(frozen=True)
class UsageFigures:
    event_count: int
    total_quantity: Decimal
    total_cost: Decimal
    bucket: date | None = None  # the first day of the time bucket
    dimension_id: UUID | None = None
    dimension_label: str | None = None

    @property
    def avg_cost_per_event(self) -> Decimal:
        return self.total_cost / self.event_count if self.event_count else ZERO

    @classmethod
    def of(cls, sums: Sums, **labels) -> "UsageFigures":
        return cls(sums.event_count, sums.quantity, sums.cost, **labels)


@dataclass(frozen=True)
class DimensionBreakdown:
    dimension_type: str
    summary: list[UsageFigures]
    timeline: list[UsageFigures]


@dataclass(frozen=True)
class UsageAnalytics:
    window: Window
    group_by: str
    filters: dict
    summary: UsageFigures
    time_series: list[UsageFigures]
    metadata: dict = field(default_factory=dict)
    dimension_breakdown: DimensionBreakdown | None = None


def names_of(model, book, ids) -> dict[UUID, str]:
    """id -> name of the rows of `model` in the book among `ids` (deleted agents and signals are absent), by name
    then id: the answer's `metadata` lists them in an order that does not depend on where the rows lie."""
    wanted = {pk for pk in ids if pk is not None}
    if not wanted:
        return {}
    return dict(owned(model, book).filter(pk__in=wanted).order_by("name", "pk").values_list("pk", "name"))


def resolve_filters(*, book, filters: dict) -> dict[str, UUID]:
    """The filter ids (camelCase keys, as passed); an id that is not a record of the book is a 404."""
    return {name: get_owned(FILTERS[name], book, value).pk for name, value in filters.items()}


def usage_analytics(*, book, window: Window, group_by: str = "daily", breakdown_by: str | None = None,
                    filters: dict | None = None) -> UsageAnalytics:
    """`filters`: any of customerId, agentId, signalId (UUIDs), echoed back as passed."""
    ids = resolve_filters(book=book, filters=filters or {})
    scope = Scope(customer_id=ids.get("customerId"), agent_id=ids.get("agentId"), signal_id=ids.get("signalId"))
    bucket = GROUP_BY[group_by]
    groups = {"total": (), "series": (bucket,), "customer": ("customer",), "agent": ("agent",),
              "signal": ("signal",)}
    if breakdown_by:
        groups["timeline"] = (bucket, breakdown_by)
    sums = rollup_sums(book=book, window=window, groups=groups, scope=scope,
                       measures=("event_count", "quantity", "cost"))
    names = {dimension: names_of(BREAKDOWN_BY[dimension], book, (row.key[0] for row in sums[dimension]))
             for dimension in BREAKDOWN_BY}
    # Events of a deleted agent or signal are orphans (null), as in the ledger.
    for dimension in ("agent", "signal"):
        sums[dimension] = orphaned(sums[dimension], 0, names[dimension])
    breakdown = None
    if breakdown_by:
        known = names[breakdown_by]
        timeline = orphaned(sums["timeline"], 1, known)
        labelled = {"summary": [], "timeline": []}
        for row in sums[breakdown_by]:
            labelled["summary"].append(UsageFigures.of(row, dimension_id=row.key[0],
                                                       dimension_label=known.get(row.key[0])))
        for row in timeline:
            labelled["timeline"].append(UsageFigures.of(row, bucket=row.key[0], dimension_id=row.key[1],
                                                        dimension_label=known.get(row.key[1])))
        breakdown = DimensionBreakdown(
            breakdown_by,
            sorted(labelled["summary"], key=lambda f: (-f.total_cost, -f.event_count, str(f.dimension_id))),
            sorted(labelled["timeline"], key=lambda f: (f.bucket, -f.total_cost, str(f.dimension_id))))
    return UsageAnalytics(
        window=window, group_by=group_by, filters={name: str(value) for name, value in (filters or {}).items()},
        summary=UsageFigures.of(grand_total(sums["total"])),
        time_series=sorted((UsageFigures.of(row, bucket=row.key[0]) for row in sums["series"]),
                           key=lambda f: f.bucket),
        metadata={"signals": names["signal"], "customers": names["customer"], "agents": names["agent"]},
        dimension_breakdown=breakdown)
