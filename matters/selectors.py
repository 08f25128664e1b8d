"""Reads of the matters app: matters with their cost, event rows, Unassigned and the audit summary.

Cost of a set of events: the sum of their `usage_cost`; an event with unresolved cost (null) adds 0 and
is counted in `events_missing_cost`. The rollup knows nothing of matters, so every sum here is
`customers.usage_sums.event_sums` (or its aggregates) over the attributed events.
"""
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from uuid import UUID

from django.db.models import DecimalField, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from core import clock
from core.errors import Unprocessable
from core.money import EXACT_DIGITS, EXACT_PLACES, ZERO
from core.pagination import PageWindow
from core.scoping import get_owned, owned
from customers.models import UsageEvent
from customers.usage_sums import Sums, event_aggregates, event_sums, ledger_snapshot
from matters.models import Matter, MatterAttribution, MatterRule

MATTER_DETAIL_EVENTS_CAP = 100  # spec §8: the detail lists the 100 most recent events
EXACT_FIELD = DecimalField(max_digits=EXACT_DIGITS, decimal_places=EXACT_PLACES)
EXACT_ZERO = Value(ZERO, output_field=EXACT_FIELD)
COST_MEASURES = ("event_count", "unpriced_count", "cost")


def _cost_totals(sums: Sums) -> dict:
    """A matter's figures, named as its serializers read them."""
    return {"actual_cost": sums.cost, "event_count": sums.event_count, "events_missing_cost": sums.unpriced_count}


def matter_cost_totals() -> dict:
    """The aggregates of `event_sums` per matter, over its attributions' events, as correlated subqueries:
    computed for the rows of one page only, and left out of the page's count query. The API's list and the
    console's read them alike: events joined from the ledger (an attribution kept for an archived month's event
    counts nothing)."""
    attributed = (MatterAttribution.objects.filter(book=OuterRef("book"), matter=OuterRef("pk"))
                  .order_by().values("matter"))
    aggregates = event_aggregates(prefix="event__")

    def per_matter(measure, output_field):
        return Subquery(attributed.annotate(value=aggregates[measure]).values("value"), output_field=output_field)

    return {
        "actual_cost": Coalesce(per_matter("cost", EXACT_FIELD), EXACT_ZERO),
        "event_count": Coalesce(per_matter("event_count", IntegerField()), 0),
        "events_missing_cost": Coalesce(per_matter("unpriced_count", IntegerField()), 0),
    }


def matter_list(*, book) -> QuerySet:
    """Matters, newest first, each annotated with actual_cost, event_count and events_missing_cost."""
    return owned(Matter, book).annotate(**matter_cost_totals()).order_by("-created_at", "-id")


@dataclass(frozen=True)
class MatterDetail:
    matter: Matter  # annotated like a list row
    events: list[UsageEvent]  # the most recent attributed events, at most events_cap
    events_cap: int = MATTER_DETAIL_EVENTS_CAP


def matter_detail(*, book, matter_id) -> MatterDetail:
    """The matter with its totals and its most recent events, both from one snapshot of the ledger: an event
    filed under the matter between the two statements was in the list and not the totals (or the other way)."""
    with ledger_snapshot():
        matter = get_owned(Matter, book, matter_id, queryset=matter_list(book=book))
        events = list(event_rows(book=book).filter(matter_attribution__matter=matter)[:MATTER_DETAIL_EVENTS_CAP])
    return MatterDetail(matter=matter, events=events)


def event_rows(*, book) -> QuerySet:
    """Usage events with what a matter event row shows (agent name, attribution source)."""
    return (owned(UsageEvent, book).select_related("agent", "matter_attribution")
            .order_by("-usage_date", "-id"))


def unassigned_events(*, book) -> QuerySet:
    """Events without a matter: never attributed, manually unassigned, or returned by a matter's deletion."""
    return event_rows(book=book).filter(matter_attribution__matter__isnull=True)


def event_totals(queryset: QuerySet) -> dict:
    """actual_cost, event_count and events_missing_cost over every event of the queryset."""
    [sums] = event_sums(queryset, measures=COST_MEASURES)
    return _cost_totals(sums)


@dataclass(frozen=True)
class EventPage:
    """One page of a list of events read with the count and the totals of the whole list. It answers
    `page_response` (core/pagination.py) as a queryset would, from what was read: `count()` is the list's count
    and the slice is this page, so the envelope is built there as for every other list."""

    events: list[UsageEvent]
    offset: int
    limit: int
    totals: dict  # actual_cost, event_count and events_missing_cost over every event of the list

    def count(self) -> int:
        return self.totals["event_count"]

    def __getitem__(self, rows: slice) -> list[UsageEvent]:
        if rows.start < self.offset or rows.stop > self.offset + self.limit:
            raise IndexError(f"rows {rows.start}-{rows.stop} are outside the page read ({self.offset}+{self.limit})")
        return self.events[rows.start - self.offset:rows.stop - self.offset]


def unassigned_page(*, book, window: PageWindow) -> EventPage:
    """One page of the Unassigned events with the totals over all of them, the page's rows and the totals from one
    snapshot of the ledger: an event recorded or assigned between the statements was in the rows and not in the
    totals (or the other way)."""
    events = unassigned_events(book=book)
    with ledger_snapshot():
        totals = event_totals(events)
        rows = list(events[window.offset:window.offset + window.limit])
    return EventPage(events=rows, offset=window.offset, limit=window.limit, totals=totals)


def matter_rule_list(*, book) -> QuerySet:
    """Rules in evaluation order: lowest priority first, the older rule first on ties."""
    return owned(MatterRule, book).select_related("matter").order_by("priority", "created_at", "id")


@dataclass(frozen=True)
class AuditRow:
    matter_id: UUID | None  # None: the Unassigned row
    matter_number: str | None
    name: str
    client_name: str | None
    status: str | None
    event_count: int
    events_missing_cost: int
    cost: Decimal


@dataclass(frozen=True)
class AuditSummary:
    start_date: date
    end_date: date
    matters: list[AuditRow]
    unassigned: AuditRow
    totals: AuditRow


def matters_audit_summary(*, book, now: datetime, start_date: date | None = None,
                          end_date: date | None = None) -> AuditSummary:
    """One row per matter of the book (in matterNumber order, also those without events in the window),
    the Unassigned row and the totals over events whose usage date falls in the inclusive UTC days
    `start_date`..`end_date` (default: the current UTC month). The totals are the sum of the rows, so
    every rendering of this summary reconciles. 422 when endDate is before startDate."""
    month_start, month_end = clock.month_window(now)
    start_date = start_date or month_start.date()
    end_date = end_date or (month_end - timedelta(days=1)).date()
    if end_date < start_date:
        raise Unprocessable(["endDate: Must not be before startDate."])
    start, end = clock.inclusive_days_window(start_date, end_date)
    events = owned(UsageEvent, book).filter(usage_date__gte=start, usage_date__lt=end)
    # The sums and the matters they are shown under from one snapshot: a matter deleted between the two reads
    # (its events Unassigned from then on) left its events in no row and the total short of the ledger.
    with ledger_snapshot():
        per_matter = {row.key[0]: _cost_totals(row)
                      for row in event_sums(events, by=("matter_attribution__matter",), measures=COST_MEASURES)}
        listed = list(owned(Matter, book).order_by("matter_number", "id"))
    empty = {"event_count": 0, "events_missing_cost": 0, "actual_cost": ZERO}

    def row(matter: Matter | None) -> AuditRow:
        totals = per_matter.get(matter.id if matter else None, empty)
        return AuditRow(
            matter_id=matter.id if matter else None, matter_number=matter.matter_number if matter else None,
            name=matter.name if matter else "Unassigned", client_name=matter.client_name if matter else None,
            status=matter.status if matter else None, event_count=totals["event_count"],
            events_missing_cost=totals["events_missing_cost"], cost=totals["actual_cost"])

    matters = [row(matter) for matter in listed]
    unassigned = row(None)
    every_row = [*matters, unassigned]
    totals = AuditRow(matter_id=None, matter_number=None, name="Total", client_name=None, status=None,
                      event_count=sum(r.event_count for r in every_row),
                      events_missing_cost=sum(r.events_missing_cost for r in every_row),
                      cost=sum((r.cost for r in every_row), ZERO))
    return AuditSummary(start_date=start_date, end_date=end_date, matters=matters, unassigned=unassigned,
                        totals=totals)
