"""JSON with exact numbers, both ways.

The service reads a JSON number as the exact decimal it spells (`12345678.123456789` is priced as written)
and writes money from its digits. So: a `Decimal` is sent as a JSON number made of its own digits (never
through a binary float), and every number with a fraction or an exponent comes back as a `Decimal`
(integers stay `int`).

The standard library's encoder cannot write a raw number for an unknown type, so a `Decimal` is first
written as a string holding a per-process marker followed by its digits, and the marked strings are then
replaced by the bare digits. The marker starts with a NUL character, which the encoder always escapes, so
no string of the caller's can look like it. Documents without a Decimal skip the replacement.
"""
import json
import re
import secrets
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any
from uuid import UUID

_MARK = "\x00" + secrets.token_hex(8) + ":"
_ESCAPED_MARK = json.dumps(_MARK)[1:-1]  # how the encoder writes it: \u0000<hex>:
_MARKED_NUMBER = re.compile('"' + re.escape(_ESCAPED_MARK) + r'(-?[0-9]+(?:\.[0-9]+)?)"')


def decimal_text(value: Decimal) -> str:
    """The JSON number a Decimal spells: its digits, trailing zeros kept, no exponent."""
    if not value.is_finite():
        raise ValueError(f"{value} is not a number JSON can hold")
    text = str(value)
    if "E" in text:
        text = format(value, "f")
    return text


def instant_text(value: datetime) -> str:
    """ISO 8601; an aware UTC instant ends in Z, a naive one carries no offset (the service reads it as UTC)."""
    if value.tzinfo is not None and value.utcoffset() == timezone.utc.utcoffset(None):
        return value.replace(tzinfo=None).isoformat() + "Z"
    return value.isoformat()


def dumps(value: Any) -> bytes:
    """JSON bytes; Decimals exact, datetimes and dates as ISO 8601, UUIDs as text. NaN and infinities refused."""
    marked = False

    def default(item):
        nonlocal marked
        if isinstance(item, Decimal):
            marked = True
            return _MARK + decimal_text(item)
        if isinstance(item, datetime):
            return instant_text(item)
        if isinstance(item, date):
            return item.isoformat()
        if isinstance(item, UUID):
            return str(item)
        raise TypeError(f"Object of type {type(item).__name__} is not JSON serializable")

    text = json.dumps(value, default=default, separators=(",", ":"), allow_nan=False)
    if marked:
        text = _MARKED_NUMBER.sub(r"\1", text)
    return text.encode()


def loads(data: bytes | str) -> Any:
    """Parse JSON; numbers with a fraction or exponent become Decimal, integers stay int."""
    return json.loads(data, parse_float=Decimal)
