"""The one reader of the wall clock, and the ISO 8601 / window helpers."""
from datetime import date, datetime, time, timedelta
from datetime import timezone as dt_timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import orjson
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from core.errors import BadRequest

UTC = dt_timezone.utc
# Every date and instant the API reads lies in these years: calendar arithmetic (a day, a period, a year past
# them) stays far from datetime's limits (years 1 and 9999), so a far-future date is a 400, never an overflow.
MIN_YEAR, MAX_YEAR = 1900, 9000
YEAR_RANGE_MESSAGE = f"Must lie between the years {MIN_YEAR} and {MAX_YEAR}."


def is_valid_timezone(name) -> bool:
    """An IANA time zone name that this machine's tz database knows ("Europe/Paris", "UTC")."""
    if not isinstance(name, str) or not name.strip() or name == "localtime":  # localtime: the host's, not IANA
        return False
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


def now() -> datetime:
    return timezone.now()


def instants_text(instants: list[datetime]) -> list[str]:
    """Aware instants as the API writes them (ISO 8601 as `isoformat` writes it, `Z` for UTC, as DRF's encoder),
    many at once: orjson formats a list of them in C, where `isoformat` costs a few microseconds each (a usage
    batch's answer holds a hundred; docs/performance.md)."""
    return orjson.loads(orjson.dumps(instants, option=orjson.OPT_UTC_Z))


def parse_instant(value: str, *, field: str = "date") -> datetime:
    """ISO 8601 date or timestamp to an aware UTC datetime; no offset means UTC; garbage or a year outside
    MIN_YEAR..MAX_YEAR (as written or in UTC) is a 400 naming `field`."""
    if isinstance(value, datetime):
        parsed = value
    else:
        text = str(value).strip()
        try:
            parsed = parse_datetime(text)
        except ValueError:
            parsed = None
        if parsed is None:
            try:
                day = parse_date(text)
            except ValueError:
                day = None
            if day is None:
                raise BadRequest([f"{field}: Not a valid ISO 8601 date or timestamp."])
            parsed = datetime.combine(day, time.min)
    if not MIN_YEAR <= parsed.year <= MAX_YEAR:  # first as written: out there, the offset could overflow
        raise BadRequest([f"{field}: {YEAR_RANGE_MESSAGE}"])
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    parsed = parsed.astimezone(UTC)
    # Then in UTC, where the instant is stored and read: an offset could carry it past the years every read can
    # ask for (an event dated 9000-12-31T23:00-05:00 could not be counted by any analytics window).
    if not MIN_YEAR <= parsed.year <= MAX_YEAR:
        raise BadRequest([f"{field}: {YEAR_RANGE_MESSAGE}"])
    return parsed


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def inclusive_days_window(start: date, end: date) -> tuple[datetime, datetime]:
    """Inclusive startDate/endDate become the half-open [start 00:00Z, day after end 00:00Z)."""
    return day_start(start), day_start(end) + timedelta(days=1)


def month_window(moment: datetime) -> tuple[datetime, datetime]:
    start = moment.astimezone(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    return start, (start + timedelta(days=32)).replace(day=1)


def week_window(moment: datetime) -> tuple[datetime, datetime]:
    """Weeks start Monday 00:00 UTC."""
    day = moment.astimezone(UTC).date()
    start = day_start(day - timedelta(days=day.weekday()))
    return start, start + timedelta(days=7)


def day_window(moment: datetime) -> tuple[datetime, datetime]:
    start = day_start(moment.astimezone(UTC).date())
    return start, start + timedelta(days=1)


def parse_window_end(value: str, *, field: str = "endDate") -> datetime:
    """The exclusive end of a window: a date-only value includes that whole day (next midnight), and so does the
    last second of a day (`...T23:59:59`, as an invoice's billingPeriodEnd reads it); another timestamp is taken as
    is."""
    text = str(value).strip()
    parsed = parse_instant(text, field=field)
    if _is_date(text):
        return parsed + timedelta(days=1)
    written = parse_datetime(text)  # the rule reads the time as written, in its own offset (`...T23:59:59-07:00`)
    return parsed if written is None else closing_midnight(written.replace(tzinfo=written.tzinfo or UTC))


def closing_midnight(moment: datetime) -> datetime:
    """An end written as the last second of a day (`...T23:59:59`, any fraction) is the following midnight, in the
    offset it was written in (contract.md, Periods: a billingPeriodEnd; every window end reads it so); another end is
    itself. Returned in UTC."""
    if (moment.hour, moment.minute, moment.second) == (23, 59, 59):
        moment = moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment.astimezone(UTC)


def _is_date(text: str) -> bool:
    """Whether the text is a date alone: decided by parsing it as one, not by looking for its `T` (a timestamp may
    separate date and time with `t` or another character, and was read as a date, a window a day too long)."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True
