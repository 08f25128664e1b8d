"""Billing periods of a subscription: pure calendar arithmetic (no ORM, no clock, no settings).

A schedule is anchored at the subscription's `startDate`. Its cycles form a grid of boundaries at local
midnight in the subscription's time zone:

- `monthly`: every month on `billing_day` (default: the anchor's local day of month), clamped to the
  month's last day (31 turns on Feb 28/29, Apr 30, then Mar 31 again);
- `yearly`: every year in the anchor's local month on `billing_day` (same default and clamping);
- `custom`: every `custom_cycle_days` local days from the anchor's local midnight.

The grid follows the anchor's calendar unless the schedule names another `origin`: a subscription that
replaces another in a plan change starts mid-cycle on the grid of the one it replaces.

A period is a grid cycle clipped to the subscription's life `[anchor, end)`: the first period starts at
`startDate`, the last stops at `endDate`. Every period is half-open, `[start, end)`.
"""
import calendar
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo

from core.clock import is_valid_timezone  # noqa: F401  (part of this module's interface)

UTC = dt_timezone.utc
MONTHLY, YEARLY, CUSTOM = "monthly", "yearly", "custom"


def local_midnight(day: date, timezone: str) -> datetime:
    """The first instant of a local calendar day, in UTC.

    Where a DST change skips midnight (clocks jump 00:00 -> 01:00), the day starts at 01:00 local: `fold=0`
    reads the skipped wall time with the pre-transition offset, which lands on that first real instant.
    """
    return datetime.combine(day, time.min, tzinfo=ZoneInfo(timezone)).astimezone(UTC)


def local_date(moment: datetime, timezone: str) -> date:
    """The calendar day an aware instant falls on in an IANA timezone."""
    if moment.tzinfo is None:
        raise ValueError("Naive datetimes are not accepted; pass an aware instant.")
    return moment.astimezone(ZoneInfo(timezone)).date()


def first_uncovered_day(end: datetime, timezone: str) -> date:
    """The first local day an exclusive end no longer touches: a day covered in part counts as covered."""
    day = local_date(end, timezone)
    # Compared in UTC: an aware local midnight that a DST change skips or repeats never equals another zone's instant
    # (PEP 495), so an end at such a day's start counted the day as touched.
    return day if end == local_midnight(day, timezone) else day + timedelta(days=1)


def _clamped_day(year: int, month: int, day: int) -> date:
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))


def _shift_months(year: int, month: int, months: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + months
    return index // 12, index % 12 + 1


@dataclass(frozen=True)
class Schedule:
    """The billing rules of one subscription."""

    anchor: datetime  # the subscription's startDate (aware)
    cycle: str  # monthly | yearly | custom
    timezone: str = "UTC"
    billing_day: int | None = None  # 1-31; None: the anchor's local day of month
    custom_cycle_days: int | None = None  # required for custom
    end: datetime | None = None  # exclusive; None: open-ended (isForever or no endDate)
    # The instant whose calendar the grid follows (None: the anchor). A subscription that replaces another in a
    # plan change starts mid-cycle on the grid of the one it replaces.
    origin: datetime | None = None

    def __post_init__(self):
        if self.anchor.tzinfo is None or (self.end is not None and self.end.tzinfo is None) \
                or (self.origin is not None and self.origin.tzinfo is None):
            raise ValueError("schedule instants must be timezone-aware")
        if self.cycle not in (MONTHLY, YEARLY, CUSTOM):
            raise ValueError(f"unknown billing cycle {self.cycle!r}")
        if self.cycle == CUSTOM and not (self.custom_cycle_days and self.custom_cycle_days > 0):
            raise ValueError("a custom cycle needs a positive custom_cycle_days")
        if self.billing_day is not None and not 1 <= self.billing_day <= 31:
            raise ValueError("billing_day must be 1-31")
        if not is_valid_timezone(self.timezone):
            raise ValueError(f"unknown time zone {self.timezone!r}")

    @property
    def grid_origin(self) -> datetime:
        return self.origin or self.anchor

    @property
    def turn_day(self) -> int:
        return self.billing_day or local_date(self.grid_origin, self.timezone).day


@dataclass(frozen=True)
class Period:
    """One billing period `[start, end)`, and the full grid cycle `[cycle_start, cycle_end)` it lies in.

    The two differ only for a first or last period that the subscription covers in part (or the
    transition period after a billing-day change); proration compares the two.
    """

    start: datetime
    end: datetime
    cycle_start: datetime
    cycle_end: datetime

    @property
    def is_partial(self) -> bool:
        return (self.start, self.end) != (self.cycle_start, self.cycle_end)


def _month_turn(schedule: Schedule, year: int, month: int) -> datetime:
    return local_midnight(_clamped_day(year, month, schedule.turn_day), schedule.timezone)


def cycle_containing(schedule: Schedule, moment: datetime) -> tuple[datetime, datetime]:
    """The grid cycle `[start, end)` that holds `moment` (before the anchor too: the grid extends both ways)."""
    local = local_date(moment, schedule.timezone)
    if schedule.cycle == MONTHLY:
        year, month = local.year, local.month
        turn = _month_turn(schedule, year, month)
        if moment < turn:
            year, month = _shift_months(year, month, -1)
            turn = _month_turn(schedule, year, month)
        return turn, _month_turn(schedule, *_shift_months(year, month, 1))
    if schedule.cycle == YEARLY:
        anchor_month = local_date(schedule.grid_origin, schedule.timezone).month
        year = local.year
        turn = _month_turn(schedule, year, anchor_month)
        if moment < turn:
            year -= 1
            turn = _month_turn(schedule, year, anchor_month)
        return turn, _month_turn(schedule, year + 1, anchor_month)
    days = schedule.custom_cycle_days
    origin = local_date(schedule.grid_origin, schedule.timezone)
    index = (local - origin).days // days
    turn = local_midnight(origin + timedelta(days=index * days), schedule.timezone)
    if moment < turn:  # a local day whose first instant is after `moment` (DST edge)
        index -= 1
        turn = local_midnight(origin + timedelta(days=index * days), schedule.timezone)
    return turn, local_midnight(origin + timedelta(days=(index + 1) * days), schedule.timezone)


def period_containing(schedule: Schedule, moment: datetime, *, since: datetime | None = None) -> Period | None:
    """The billing period that holds `moment`, or None outside the subscription's life.

    `since` (default: the anchor) is where the schedule's current rules took effect: after a billing-day
    change the first period under the new rules starts where the previous period ended.
    """
    start = since or schedule.anchor
    if moment < start or (schedule.end is not None and moment >= schedule.end):
        return None
    cycle_start, cycle_end = cycle_containing(schedule, moment)
    end = cycle_end if schedule.end is None else min(cycle_end, schedule.end)
    return Period(max(cycle_start, start), end, cycle_start, cycle_end)


def first_period(schedule: Schedule) -> Period | None:
    """None only when the schedule ends before it starts."""
    return period_containing(schedule, schedule.anchor)


def next_period(schedule: Schedule, period: Period) -> Period | None:
    """The period right after `period` under the schedule's (possibly changed) rules; None after the end."""
    return period_containing(schedule, period.end, since=period.end)


def period_as_of(schedule: Schedule, moment: datetime, *, since: datetime | None = None) -> Period | None:
    """The period in force at `moment`: the first period before the start, the last one after the end."""
    start = since or schedule.anchor
    if schedule.end is not None and schedule.end <= start:
        return None
    if moment < start:
        moment = start
    if schedule.end is not None and moment >= schedule.end:
        moment = schedule.end - timedelta(microseconds=1)
    return period_containing(schedule, moment, since=since)
