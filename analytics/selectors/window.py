"""The window of an analytics read from its `startDate`/`endDate` query parameters (spec §8)."""
from datetime import date, datetime, timedelta

from core.clock import MIN_YEAR, UTC, day_start
from core.errors import Unprocessable
from customers.usage_sums import Window

DEFAULT_WINDOW_DAYS = 30
# The earliest instant a query's dates may name (core/clock.py): no window the service reads starts before it.
EARLIEST = datetime(MIN_YEAR, 1, 1, tzinfo=UTC)


def analytics_window(*, start: date | datetime | None, end: date | datetime | None, now: datetime) -> Window:
    """The window of `startDate`/`endDate`: a date is a whole UTC day, both inclusive; a timestamp is an
    instant (endDate's exclusive). Defaults (spec §8): the last 30 days UTC, today included; a window given
    only a start runs to the end of today, one given only an end covers the 30 days before it. An end before
    the start is a 422."""
    end_at = day_start(now.astimezone(UTC).date()) + timedelta(days=1) if end is None else \
        end if isinstance(end, datetime) else day_start(end) + timedelta(days=1)
    start_at = end_at - timedelta(days=DEFAULT_WINDOW_DAYS) if start is None else \
        start if isinstance(start, datetime) else day_start(start)
    if end_at <= start_at:
        raise Unprocessable(["endDate: Must be after startDate."])
    return Window(start_at, end_at)


def prior_window(window: Window) -> Window:
    """`includePriorWindow`: the equally long window right before `window` (spec §4 Analytics); a 422 naming the
    parameter when it would start before EARLIEST (a window of 1900 to 9000 has none), never an overflow."""
    if window.start - EARLIEST < window.length:
        raise Unprocessable([f"includePriorWindow: The window before this one would start before "
                             f"{EARLIEST:%Y-%m-%d}, the earliest date the service reads; ask for a shorter window "
                             f"or leave includePriorWindow out."])
    return window.prior()
