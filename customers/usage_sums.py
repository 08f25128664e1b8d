"""The one way to sum the usage ledger: every app reads event counts, quantities and costs through here.

- `rollup_sums` (the default): sums for any window, exact to the instant, read mostly from the daily
  rollup. Use it whenever the groups and filters are dimensions the rollup keeps: time (day, ISO week,
  month), customer, agent, signal and model, or segments of (customer, agent, [start, end)) labelled by
  the caller (how analytics attribute events to subscriptions).
- `event_sums`: the same `Sums` over a queryset of events, for a set the rollup cannot select or group:
  by a matter's attribution, by the agent code or customer external id recorded on the event, by the
  signal name as recorded, or straight from the events. It reads every event of the set, so a read the
  rollup can answer uses `rollup_sums`. `labelled_event_sums` sums the same set under labels, each its own
  condition, in one scan without grouping (an invoice's billed quantities, one label per claim).

How `rollup_sums` reads: a window `[start, end)` splits into the whole UTC months it covers (month rows
of `UsageDailyRollup`, for groups that need no days), the other whole UTC days (day rows; index
`usage_rollup_key` on (book, grain, day, ...), or `usage_rollup_customer_day` for one customer; an agent or
signal filter reads the grain's window and filters it), and at most two partial days at its edges, read
from the events themselves through the same contributions SQL the rollup is built with (index
`usage_event_book_date` on (book, usage_date)). A window at midnights never touches the events. Each group
is read at the smallest grain that keeps the dimensions it groups, filters or attributes by
(`RollupGrain`): per customer and agent from a few rows a day, per signal and model from fewer still, and
the full grain only when a read needs customer and model (or signal) together.

Segments restrict the sums to (customer, agent, [start, end)) slices, each with a label. Segments are sent
as arrays (`unnest`); their whole months and days join the rollup (index `usage_rollup_customer_day`),
their partial days the events of those days (index `usage_event_book_date`).

One statement per grain used: the breakdowns read at one grain are GROUPING SETS over one scan. Each read
first moves the book's rollup backlog (events recorded since the last catch-up) into the rollup
(customers/rollup.py), so it counts every committed event, then reads every grain from one snapshot
(`ledger_reads`): a batch committed between two grains' statements would be in one breakdown and not another.
The rollup's whole days add the events the snapshot still finds in the backlog (a batch committed between the
catch-up and the snapshot), so the rollup and its backlog count together, as the events of partial days do.
A caller that reads several times for one answer (a total, then a breakdown to subtract from it) opens
`ledger_reads` around all of them.
"""
from collections.abc import Hashable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from uuid import UUID

from django.db.models import Count, Q, QuerySet, Sum, Value
from django.db.models.functions import Coalesce

from core.clock import day_start
from core.database import one_snapshot
from core.money import SUMS, ZERO, ExactField
from core.scoping import book_sql, owned
from customers.models import MONTHLY, Customer, RollupBacklog, RollupGrain, UsageEvent
from customers.rollup import (BACKLOG, EVENTS, MEASURES, ROLLUP, analytics_rollup_catch_up, contributions_sql,
                              execute)

# Grouping dimensions: their SQL over the union of rollup rows and edge contributions (alias u).
DIMENSIONS = {
    "label": "u.label",
    "day": "u.day",
    "week": "date_trunc('week', u.day::timestamp)::date",  # ISO weeks: Monday (no time zone: faster)
    "month": "date_trunc('month', u.day::timestamp)::date",
    "customer": "u.customer_id",
    "agent": "u.agent_id",
    "signal": "u.signal_id",
    "model": "u.model",
}
ROW_COLUMNS = ("label", "day", "customer_id", "agent_id", "signal_id", "model", *MEASURES)
TIME_DIMENSIONS = {"label", "day", "week", "month"}
# Grains, smallest first, with the dimensions each keeps.
GRAINS = ((RollupGrain.NO_CUSTOMER, {"agent", "signal", "model"}),
          (RollupGrain.CUSTOMER_AGENT, {"customer", "agent"}),
          (RollupGrain.NO_MODEL, {"customer", "agent", "signal"}),
          (RollupGrain.FULL, {"customer", "agent", "signal", "model"}))


@dataclass(frozen=True)
class Window:
    """A half-open window of instants `[start, end)`."""

    start: datetime
    end: datetime

    @property
    def length(self) -> timedelta:
        return self.end - self.start

    def prior(self) -> "Window":
        """The equally long window right before this one."""
        return Window(self.start - self.length, self.start)

    def clip(self, start: datetime, end: datetime | None) -> "Window | None":
        """The part of this window inside `[start, end)` (end None: open), or None when they do not meet."""
        lo, hi = max(self.start, start), self.end if end is None else min(self.end, end)
        return Window(lo, hi) if lo < hi else None

    def split(self, *, months: bool) -> tuple[list[tuple[date, date, bool]], list[tuple[datetime, datetime]]]:
        """The window as rollup ranges `(first day, end day, of month rows?)` and partial-day instant ranges
        at its edges. With `months`, the whole UTC months inside are one range of month rows."""
        first_whole = self.start.date() if self.start == day_start(self.start.date()) else \
            self.start.date() + timedelta(days=1)
        end_whole = self.end.date()
        if first_whole >= end_whole:
            return [], [(self.start, self.end)]
        edges = []
        if self.start < day_start(first_whole):
            edges.append((self.start, day_start(first_whole)))
        if day_start(end_whole) < self.end:
            edges.append((day_start(end_whole), self.end))
        first_month = first_whole if first_whole.day == 1 else \
            (first_whole.replace(day=1) + timedelta(days=32)).replace(day=1)
        end_month = end_whole.replace(day=1)
        if not months or first_month >= end_month:
            return [(first_whole, end_whole, False)], edges
        ranges = [(first_whole, first_month, False), (first_month, end_month, True), (end_month, end_whole, False)]
        return [(lo, hi, monthly) for lo, hi, monthly in ranges if lo < hi], edges


@dataclass(frozen=True)
class Scope:
    """Which events count: optional customer, agent and signal, and whether internal (coding-agent)
    customers are left out (revenue reads) or counted like any other (usage and cost reads)."""

    customer_id: UUID | None = None
    agent_id: UUID | None = None
    signal_id: UUID | None = None
    external_only: bool = False

    @property
    def dimensions(self) -> set[str]:
        kept = {"customer": self.customer_id is not None or self.external_only,
                "agent": self.agent_id is not None, "signal": self.signal_id is not None}
        return {dimension for dimension, needed in kept.items() if needed}

    def sql(self, alias: str, book_id) -> tuple[str, list]:
        clauses, params = [], []
        for column in ("customer_id", "agent_id", "signal_id"):
            value = getattr(self, column)
            if value is not None:
                clauses.append(f"{alias}.{column} = %s")
                params.append(value)
        if self.external_only:
            in_book, book_params = book_sql(book_id)
            clauses.append(f"{alias}.customer_id NOT IN "
                           f"(SELECT id FROM {Customer._meta.db_table} WHERE {in_book} AND is_internal)")
            params.extend(book_params)
        return "".join(f" AND {clause}" for clause in clauses), params


@dataclass(frozen=True)
class Segment:
    """The events of one customer and agent in `[start, end)` (end None: open), summed under `label`."""

    customer_id: UUID
    agent_id: UUID
    start: datetime
    end: datetime | None
    label: str


@dataclass(frozen=True)
class Sums:
    """Ledger figures for one group. `event_count`, `quantity`, `cost` and `unpriced_count` count each
    event once; `model_event_count` and `model_cost` are per model (use them with the model dimension)."""

    key: tuple
    event_count: int = 0
    unpriced_count: int = 0
    quantity: Decimal = ZERO
    cost: Decimal = ZERO
    model_event_count: int = 0
    model_cost: Decimal = ZERO

    @property
    def priced_count(self) -> int:
        return self.event_count - self.unpriced_count


def grand_total(rows: list[Sums]) -> Sums:
    """The row of a `()` group, zeros when nothing was summed."""
    return rows[0] if rows else Sums(())


def combined(rows: list[Sums]) -> Sums:
    """All rows summed into one (keyed `()`)."""
    return regroup(rows, lambda row: ())[0] if rows else Sums(())


def orphaned(rows: list[Sums], position: int, known) -> list[Sums]:
    """Rows whose id at `position` of the key is not `known` (a deleted agent or signal) merged under null,
    as the ledger's SET_NULL leaves their events."""
    if all(row.key[position] in known or row.key[position] is None for row in rows):
        return rows
    return regroup(rows, lambda row: tuple(None if index == position and value not in known else value
                                           for index, value in enumerate(row.key)))


def _plus(a, b):
    """Counts as integers, quantities and costs with every digit (core/money.py SUMS)."""
    return SUMS.add(a, b) if isinstance(a, Decimal) else a + b


def regroup(rows: list[Sums], key) -> list[Sums]:
    """Rows merged under `key(row)` (e.g. after mapping deleted agents' ids to null)."""
    merged: dict = {}
    for row in rows:
        new_key = key(row)
        found = merged.get(new_key)
        merged[new_key] = Sums(new_key, *(
            _plus(getattr(row, name), getattr(found, name) if found else 0) for name in MEASURES))
    return list(merged.values())


def _window_parts(book_id, grain: int, months: bool, window: Window, scope: Scope,
                  models: bool = True, waiting: bool = True) -> list[tuple[str, list]]:
    ranges, edges = window.split(months=months)
    parts = []
    scope_sql, scope_params = scope.sql("r", book_id)
    rollup_in_book, book_params = book_sql(book_id, "r.book_id")
    for lo, hi, monthly in ranges:
        parts.append((f"SELECT NULL::text, r.day, r.customer_id, r.agent_id, r.signal_id, r.model, "
                      f"{', '.join('r.' + m for m in MEASURES)} FROM {ROLLUP} r "
                      f"WHERE {rollup_in_book} AND r.grain = %s AND r.day >= %s AND r.day < %s{scope_sql}",
                      [*book_params, grain | (MONTHLY if monthly else 0), lo, hi, *scope_params]))
    if ranges and waiting:
        spans = [instant for lo, hi, _ in ranges for instant in (day_start(lo), day_start(hi))]
        parts.append(_waiting_part(book_id, scope, " OR ".join(["(e.usage_date >= %s AND e.usage_date < %s)"]
                                                               * len(ranges)), spans, models=models))
    if edges:
        scope_sql, scope_params = scope.sql("e", book_id)
        events_in_book, book_params = book_sql(book_id, "e.book_id")
        ranges = " OR ".join(["(e.usage_date >= %s AND e.usage_date < %s)"] * len(edges))
        sql, params = contributions_sql(f"{events_in_book} AND ({ranges}){scope_sql}",
                                        [*book_params, *(instant for edge in edges for instant in edge),
                                         *scope_params], models=models)
        parts.append((f"SELECT {', '.join(ROW_COLUMNS)} FROM ({sql}) AS c", params))
    return parts


# Events of (customer, agent, [lo, hi), label) slices, the slices bound as arrays.
_SEGMENTS_JOIN = ("JOIN unnest(%s::uuid[], %s::uuid[], %s::timestamptz[], %s::timestamptz[], %s::text[]) "
                  "AS v(customer_id, agent_id, lo, hi, label) "
                  "ON e.customer_id = v.customer_id AND e.agent_id = v.agent_id "
                  "AND e.usage_date >= v.lo AND e.usage_date < v.hi")


def _waiting_part(book_id, scope: Scope, spans_sql: str, spans: list, *, join: str = "", join_params: Sequence = (),
                  label: str = "NULL::text", models: bool) -> tuple[str, list]:
    """What the book's events still in the rollup's backlog contribute inside the whole days the rollup part of a
    read covers (`spans_sql` over alias `e`, or `join`'s slices): the rollup and its backlog are exact together in
    any one snapshot, as a catch-up moves events from one to the other in one statement. The read's own catch-up
    ran before its snapshot was taken: a batch committed in between was in the events of its partial days and in
    neither the rollup nor this part, one batch half counted. The backlog is empty or a few batches then: one
    probe of the ledger's primary key an event."""
    scope_sql, scope_params = scope.sql("e", book_id)
    events_in_book, book_params = book_sql(book_id, "e.book_id")
    backlog_in_book, backlog_params = book_sql(book_id, "b.book_id")
    # The backlog's event ids first, then a probe of the ledger's primary key for each (as a catch-up reads them):
    # the ledger's events of the read's days are never scanned. OFFSET 0 keeps the planner from flattening it into
    # the read, where it walked the book's events of the days instead (a read of 179,000 events took ten times as
    # long), and a join of the backlog chose to scan every partition of the ledger.
    waiting = (f"(SELECT ev.* FROM {EVENTS} ev WHERE ev.id = ANY(ARRAY(SELECT b.event_id FROM {BACKLOG} b "
               f"WHERE {backlog_in_book})) OFFSET 0)")
    # The waiting events' text comes first in each branch of the contributions, then the join's, then the where's.
    sql, params = contributions_sql(f"{events_in_book} AND ({spans_sql}){scope_sql}",
                                    [*backlog_params, *join_params, *book_params, *spans, *scope_params],
                                    join=join, label=label, models=models, events=waiting)
    return f"SELECT {', '.join(ROW_COLUMNS)} FROM ({sql}) AS c", params


def _segment_parts(book_id, grain: int, months: bool, window: Window, scope: Scope,
                   segments: Sequence[Segment], models: bool = True, waiting: bool = True) -> list[tuple[str, list]]:
    range_rows, edge_rows = [], []
    for segment in segments:
        piece = window.clip(segment.start, segment.end)
        if piece is None:
            continue
        ranges, edges = piece.split(months=months)
        range_rows.extend((segment.customer_id, segment.agent_id, lo, hi, grain | (MONTHLY if monthly else 0),
                           segment.label) for lo, hi, monthly in ranges)
        edge_rows.extend((segment.customer_id, segment.agent_id, *edge, segment.label) for edge in edges)
    parts = []
    if range_rows:
        scope_sql, scope_params = scope.sql("r", book_id)
        rollup_in_book, book_params = book_sql(book_id, "r.book_id")
        # LATERAL with OFFSET 0 (which keeps the planner from flattening it into a join of the whole book):
        # one index range scan of (book, grain, customer, day) per range.
        parts.append((f"SELECT v.label, r.day, r.customer_id, r.agent_id, r.signal_id, r.model, "
                      f"{', '.join('r.' + m for m in MEASURES)} "
                      "FROM unnest(%s::uuid[], %s::uuid[], %s::date[], %s::date[], %s::int[], %s::text[]) "
                      "AS v(customer_id, agent_id, lo, hi, grain, label) "
                      f"CROSS JOIN LATERAL (SELECT * FROM {ROLLUP} r WHERE {rollup_in_book} AND r.grain = v.grain "
                      "AND r.customer_id = v.customer_id AND r.day >= v.lo AND r.day < v.hi "
                      f"AND r.agent_id = v.agent_id{scope_sql} OFFSET 0) r",
                      [*map(list, zip(*range_rows)), *book_params, *scope_params]))
    if range_rows and waiting:
        by_instants = [(customer_id, agent_id, day_start(lo), day_start(hi), label)
                       for customer_id, agent_id, lo, hi, _, label in range_rows]
        parts.append(_waiting_part(book_id, scope, "TRUE", [], join=_SEGMENTS_JOIN,
                                   join_params=list(map(list, zip(*by_instants))), label="v.label", models=models))
    if edge_rows:
        scope_sql, scope_params = scope.sql("e", book_id)
        events_in_book, book_params = book_sql(book_id, "e.book_id")
        join = _SEGMENTS_JOIN
        # Per partial day, the span from the earliest edge start to the latest edge end in it, so the
        # (book, usage_date) index reads only the hours some edge covers (every segment of a window shares
        # its edges: a window from 17:00 reads that day from 17:00, not from midnight).
        spans: dict[datetime, tuple[datetime, datetime]] = {}
        for row in edge_rows:
            lo, hi = spans.setdefault(day_start(row[2].date()), (row[2], row[3]))
            spans[day_start(row[2].date())] = (min(lo, row[2]), max(hi, row[3]))
        ranges = " OR ".join(["(e.usage_date >= %s AND e.usage_date < %s)"] * len(spans))
        sql, params = contributions_sql(
            f"{events_in_book} AND ({ranges}){scope_sql}",
            [*map(list, zip(*edge_rows)), *book_params,
             *(instant for day in sorted(spans) for instant in spans[day]), *scope_params],
            join=join, label="v.label", models=models)
        parts.append((f"SELECT {', '.join(ROW_COLUMNS)} FROM ({sql}) AS c", params))
    return parts


@contextmanager
def ledger_snapshot():
    """Run the block's reads of the ledger and what is derived from it against one snapshot (core/database.py
    `one_snapshot`): every read inside counts the same committed events, each once, while a month's rows move
    between the ledger's partitions (the move waits for the block)."""
    with one_snapshot(share_locked=[UsageEvent._meta.db_table]):
        yield


@contextmanager
def ledger_reads(book):
    """Catch the book's rollup up, then run the block's reads in one snapshot of the ledger (`ledger_snapshot`)."""
    analytics_rollup_catch_up(book_id=book.pk)
    with ledger_snapshot():
        yield


def rollup_sums(*, book, window: Window, groups: Mapping[str, tuple[str, ...]], scope: Scope = Scope(),
                segments: Sequence[Segment] | None = None, measures: Sequence[str] = MEASURES) -> dict[str, list[Sums]]:
    """For each named group (a tuple of DIMENSIONS; `()` is the grand total), the sums of the events in
    the window and scope, one `Sums` per distinct key (its values in the group's dimension order). With
    `segments`, only events inside a segment count and the `label` dimension is the segment's label.
    Only `measures` are summed (the others read 0): summing exact decimals is most of a read's cost.
    Groups without events have no rows, except the grand total `()`, which may be a row of zeros."""
    with ledger_reads(book):  # every committed event counts, however recently recorded, in every group
        return _rollup_sums(book, window, groups, scope, segments, measures)


def _rollup_sums(book, window: Window, groups: Mapping[str, tuple[str, ...]], scope: Scope,
                 segments: Sequence[Segment] | None, measures: Sequence[str]) -> dict[str, list[Sums]]:
    needed = scope.dimensions | ({"customer", "agent"} if segments is not None else set())
    by_source: dict[tuple[int, bool], dict] = {}
    for name, group in groups.items():
        dimensions = needed | (set(group) - TIME_DIMENSIONS)
        grain = next(grain for grain, kept in GRAINS if dimensions <= kept)
        months = not {"day", "week"} & set(group)  # month rows serve groups that need no days
        by_source.setdefault((grain, months), {})[name] = group
    result: dict[str, list[Sums]] = {name: [] for name in groups}
    # Whether the snapshot holds events not in the rollup yet (`_waiting_part`): usually none, as the read caught
    # up just before, and then the statements leave the part out (planning it cost a read about 5 ms).
    waiting = owned(RollupBacklog, book).exists()
    for (grain, months), grain_groups in by_source.items():
        # Edge events are read with their models only when a group is by model or a per-model measure is
        # summed: expanding multi-service events and naming each part's model is most of an edge's cost.
        models = (any("model" in group for group in grain_groups.values())
                  or bool(set(measures) & {"model_event_count", "model_cost"}))
        parts = (_window_parts(book.pk, grain, months, window, scope, models, waiting) if segments is None
                 else _segment_parts(book.pk, grain, months, window, scope, segments, models, waiting))
        if parts:
            result.update(_grouped(parts, grain_groups, measures))
    return result


def _grouped(parts: list[tuple[str, list]], groups: Mapping[str, tuple[str, ...]],
             measures: Sequence[str]) -> dict[str, list[Sums]]:
    """The union of `parts` summed by every group, as GROUPING SETS of one statement (a plain GROUP BY for
    one group, which PostgreSQL can aggregate in parallel)."""
    result: dict[str, list[Sums]] = {name: [] for name in groups}
    dimensions = list(dict.fromkeys(dimension for group in groups.values() for dimension in group))
    expressions = [DIMENSIONS[dimension] for dimension in dimensions]
    union = " UNION ALL ".join(sql for sql, _ in parts)
    sums = ", ".join(f"sum(u.{measure})" if measure in measures else "0" for measure in MEASURES)
    source = f"FROM ({union}) AS u({', '.join(ROW_COLUMNS)})"
    if len(groups) == 1:
        sql = f"SELECT {''.join(e + ', ' for e in expressions)}0, {sums} {source}"
        if dimensions:
            sql += f" GROUP BY {', '.join(expressions)}"
    else:
        grouping_sets = ", ".join("(" + ", ".join(DIMENSIONS[d] for d in group) + ")" for group in groups.values())
        sql = (f"SELECT {''.join(e + ', ' for e in expressions)}GROUPING({', '.join(expressions)}), {sums} "
               f"{source} GROUP BY GROUPING SETS ({grouping_sets})")
    # GROUPING() sets bit (n - 1 - i) when dimension i is not grouped in the row's set.
    names_by_mask = {sum(1 << (len(dimensions) - 1 - i) for i, d in enumerate(dimensions) if d not in group): name
                     for name, group in groups.items()}
    positions = {name: [dimensions.index(dimension) for dimension in group] for name, group in groups.items()}
    width = len(dimensions)
    for row in execute(sql, [param for _, params in parts for param in params]):
        name = names_by_mask[row[width]]
        events, unpriced, quantity, cost, model_events, model_cost = row[width + 1:]
        result[name].append(Sums(tuple(row[i] for i in positions[name]), int(events or 0), int(unpriced or 0),
                                 quantity or ZERO, cost or ZERO, int(model_events or 0), model_cost or ZERO))
    return result


# What `event_sums` can sum: the per-model measures split a multi-service event's cost, which only the
# rollup's contributions do.
EVENT_MEASURES = ("event_count", "unpriced_count", "quantity", "cost")


def event_aggregates(prefix: str = "", condition: Q | None = None) -> dict:
    """The ORM aggregates of `Sums` over events, by measure name. `prefix` is the path from the queryset's
    model to the event (`"event__"` from a matter attribution), for an annotation of another model's rows;
    `condition`, when given, restricts every aggregate to the events it selects (a filtered aggregate).
    Quantity and cost read 0, never null, over no events or only unpriced ones."""
    unpriced = Q(**{f"{prefix}usage_cost__isnull": True})
    # Through a relation, a column of the event itself: `event__pk` would be read from the attribution's own
    # `event_id` without joining the ledger, and count rows whose event left it (an archived month's).
    counted = f"{prefix}usage_date" if prefix else "pk"
    return {
        "event_count": Count(counted, filter=condition),
        "unpriced_count": Count(counted, filter=unpriced if condition is None else unpriced & condition),
        "quantity": Coalesce(Sum(f"{prefix}quantity", filter=condition), Value(ZERO, output_field=ExactField())),
        "cost": Coalesce(Sum(f"{prefix}usage_cost", filter=condition), Value(ZERO, output_field=ExactField())),
    }


def event_sums(events: QuerySet, *, by: Sequence[str] = (), measures: Sequence[str] = EVENT_MEASURES,
               order_by: Sequence[str] = ()) -> list[Sums]:
    """`Sums` of a queryset of events (`owned(UsageEvent, book)` narrowed as the caller needs), one per
    distinct value of the `by` fields (the key in that order; a field may be an annotation of the queryset),
    sorted by `order_by` (fields of `by` and measure names); with no `by`, one row `()`, zeros for no
    events. Only `measures` are summed (the others read 0)."""
    aggregates = _event_aggregates_of(measures)
    if not by:
        return [_event_row((), events.order_by().aggregate(**aggregates))]
    rows = events.order_by().values(*by).annotate(**aggregates).order_by(*order_by)
    return [_event_row(tuple(row[field] for field in by), row) for row in rows]


def labelled_event_sums(events: QuerySet, labels: Mapping[Hashable, Q], *,
                        measures: Sequence[str] = EVENT_MEASURES) -> list[Sums]:
    """`Sums` of a queryset of events per label, each over the events its condition selects (key `(label,)`),
    for the labels that select at least one event, in one scan of `events` and without grouping: every
    measure of every label is an aggregate filtered by the label's condition. Narrow `events` to the union
    of the conditions, or the scan reads what no label counts.

    Why not a `CASE` of the conditions grouped by (`event_sums(by=...)` over an annotation): PostgreSQL cannot
    tell how many values such a `CASE` yields, guessed a group for every few events (312,558 for 3 labels
    over a million events), and sorted them all, spilling to disk; filtered aggregates need neither a sort
    nor a hash table."""
    _event_aggregates_of(measures)  # refuses a measure events cannot give
    names = list(labels)
    aggregates = {f"{measure}_{position}": expression
                  for position, label in enumerate(names)
                  # the count tells a label without events from one whose quantity sums to 0
                  for measure, expression in event_aggregates(condition=labels[label]).items()
                  if measure in measures or measure == "event_count"}
    if not aggregates:
        return []
    row = events.order_by().aggregate(**aggregates)
    return [_event_row((label,), {measure: row[f"{measure}_{position}"] for measure in measures})
            for position, label in enumerate(names) if row[f"event_count_{position}"]]


def _event_aggregates_of(measures) -> dict:
    unknown = set(measures) - set(EVENT_MEASURES)
    if unknown:
        raise ValueError(f"event_sums cannot sum {sorted(unknown)}: read them through rollup_sums")
    return {name: expression for name, expression in event_aggregates().items() if name in measures}


def _event_row(key: tuple, row: dict) -> Sums:
    return Sums(key, row.get("event_count", 0), row.get("unpriced_count", 0), row.get("quantity", ZERO),
                row.get("cost", ZERO))
