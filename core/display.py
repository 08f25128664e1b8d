"""How people read numbers and dates: money, quantities, days and billing periods, written one way wherever the
console, the portal and the invoice documents show them (the API keeps exact values and ISO 8601).

- Money: grouped, two places, with the currency (`$1,234.50`; a currency without a symbol is named after the
  amount: `1,234.50 EUR`). Costs and rates that carry more digits than cents (an event's cost, a per-token
  rate) keep every significant digit, never fewer than two places (`$0.000375`).
- Quantities: grouped, without trailing zeros (`3,149`, `0.25`).
- Days: `2026-10-01`; instants: `2026-10-01 14:05 UTC`.
- Billing periods are half-open [start, end): they are written as their first and last day in the subscription's
  time zone, `2026-10-01 to 2026-10-31`.
- An empty value is a dash.
"""
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from core.money import SUMS

EMPTY = "-"
CURRENCY_SYMBOLS = {"usd": "$"}
DEFAULT_CURRENCY = "usd"


def _grouped(value: Decimal, places: int | None = None) -> str:
    """`value` with thousands grouped: to `places` decimal places, or without trailing zeros when None."""
    if places is not None:
        return f"{value:,.{places}f}"
    return f"{value.normalize(SUMS):,f}" if value != value.to_integral_value() else f"{int(value):,}"


def _with_currency(number: str, negative: bool, currency: str | None) -> str:
    currency = (currency or DEFAULT_CURRENCY).lower()
    sign = "-" if negative else ""
    symbol = CURRENCY_SYMBOLS.get(currency)
    return f"{sign}{symbol}{number}" if symbol else f"{sign}{number} {currency.upper()}"


def money(amount: Decimal | None, currency: str | None = DEFAULT_CURRENCY) -> str:
    """A billed amount: two places (half-even as Python formats; stored amounts already have two) and the
    currency."""
    if amount is None:
        return EMPTY
    return _with_currency(_grouped(abs(amount), 2), amount < 0, currency)


def price(amount: Decimal | None, currency: str | None = DEFAULT_CURRENCY) -> str:
    """A cost or a rate: every significant digit, at least two places, and the currency."""
    if amount is None:
        return EMPTY
    digits = max(2, -abs(amount).normalize().as_tuple().exponent)
    return _with_currency(_grouped(abs(amount), digits), amount < 0, currency)


def quantity(value: Decimal | int | None) -> str:
    """Units, tokens, seats: grouped, without trailing zeros."""
    if value is None:
        return EMPTY
    return _grouped(Decimal(value))


def unit(name: str) -> str:
    """A signal's name as customers read it beside a quantity: a machine name (`tickets_resolved`, one word joined by
    underscores, as a usage record names a signal it creates) as words (`tickets resolved`); any other as it is."""
    if "_" in name and not any(character.isspace() for character in name):
        return " ".join(part for part in name.split("_") if part) or name
    return name


def tiers(rows: list[dict] | None, *, pool: bool = False, currency: str | None = DEFAULT_CURRENCY) -> str:
    """A tiered price: `0 to 10: $2.00 each; 10 and up: $1.50 each`; a credit pool's two tiers as `a pool of
    1,000 units for $50.00; $0.06 each beyond`. Tiers that are not rows of lower, upper and rate (data made by
    hand) are written as stored."""
    if not rows:
        return EMPTY
    try:
        spans = [(Decimal(str(row["lower"])), None if row.get("upper") is None else Decimal(str(row["upper"])),
                  Decimal(str(row["rate"]))) for row in rows]
    except (ArithmeticError, KeyError, TypeError, ValueError):
        return str(rows)
    if pool and len(spans) == 2 and spans[0][1] is not None:
        return (f"a pool of {quantity(spans[0][1])} units for {price(spans[0][2], currency)}; "
                f"{price(spans[1][2], currency)} each beyond")
    return "; ".join(f"{quantity(lower)} {'and up' if upper is None else f'to {quantity(upper)}'}: "
                     f"{price(rate, currency)} each" for lower, upper, rate in spans)


def percent(value: Decimal | None) -> str:
    if value is None:
        return EMPTY
    return f"{_grouped(Decimal(value))}%"


def day(value: date | datetime | None, timezone: str = "UTC") -> str:
    """A calendar day; an instant is read as its day in `timezone`."""
    if value is None:
        return EMPTY
    if isinstance(value, datetime):
        value = value.astimezone(ZoneInfo(timezone)).date()
    return value.isoformat()


def moment(value: datetime | None) -> str:
    """An instant, in UTC to the minute."""
    if value is None:
        return EMPTY
    return f"{value.astimezone(ZoneInfo('UTC')):%Y-%m-%d %H:%M} UTC"


def days(first: date | str, last: date | str) -> str:
    """An inclusive range of days."""
    return f"{first} to {last}"


def iso_interval(start: datetime | None, end: datetime | None) -> str | None:
    """A half-open period as an ISO 8601 interval of its two instants (`2026-10-01T07:00:00+00:00/...`): what an
    export writes where a page writes local days."""
    if start is None or end is None:
        return None
    return f"{start.isoformat()}/{end.isoformat()}"


def period_days(start: datetime, end: datetime, timezone: str = "UTC") -> tuple[str, str]:
    """A half-open period [start, end) as its first and last local day in `timezone`."""
    return day(start, timezone), day(end - timedelta(microseconds=1), timezone)


def period(start: datetime | None, end: datetime | None, timezone: str = "UTC") -> str:
    """A half-open period [start, end) written as its first and last local day: `2026-10-01 to 2026-10-31`."""
    if start is None or end is None:
        return EMPTY
    return days(*period_days(start, end, timezone))
