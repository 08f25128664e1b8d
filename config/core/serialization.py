"""Edge helpers for serializers: parsing a request body and exact money fields."""
import math
from decimal import Decimal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from config.core.money import EXACT_DIGITS, EXACT_PLACES


def parse(serializer_class, data, *, partial: bool = False, context: dict | None = None) -> dict:
    """Validate a request body with an In serializer; a failure is a 400 naming the fields."""
    serializer = serializer_class(data=data, partial=partial, context=context or {})
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def parse_many(serializer_class, data, *, allow_empty: bool = False, context: dict | None = None) -> list[dict]:
    """Validate a request body that is a JSON array of items; a failure is a 400 naming `[index].field`."""
    serializer = serializer_class(data=data, many=True, allow_empty=allow_empty, context=context or {})
    serializer.is_valid(raise_exception=True)
    return [dict(item) for item in serializer.validated_data]


def decimal_text(value: Decimal | None) -> str | None:
    """An exact decimal as a plain string without exponent or trailing zeros ("0.00045")."""
    if value is None:
        return None
    text = format(value, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def decimal_number(value: Decimal | None) -> Decimal | None:
    """An exact decimal for a JSON number: the same value without trailing zeros (`2.500000000000` -> `2.5`),
    which the API's renderer writes from its digits (config/core/api_json.py), never through a float."""
    if value is None:
        return None
    return Decimal(decimal_text(value))


class DecimalIn(serializers.DecimalField):
    """An exact decimal input (a JSON number, which the parser reads as the Decimal it spells, or a decimal
    string) at the stored precision: more decimal places or digits than that is a 400, never rounded."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_digits", EXACT_DIGITS)
        kwargs.setdefault("decimal_places", EXACT_PLACES)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, (bool, float)):  # a float never comes from a request body: refuse, do not guess
            self.fail("invalid")
        return super().to_internal_value(data)


@extend_schema_field(OpenApiTypes.NUMBER)
class DecimalNumber(serializers.Field):
    """Output: a Decimal rendered as a JSON number."""

    def __init__(self, **kwargs):
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value):
        return decimal_number(value)


@extend_schema_field({"type": "string", "format": "decimal", "example": "0.00045"})
class DecimalText(serializers.Field):
    """Output: a Decimal rendered as a decimal string ("0.00045")."""

    def __init__(self, **kwargs):
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value):
        return decimal_text(value)


# A number in stored JSON keeps every digit, up to this many before and after the decimal point: far beyond
# any real value, well inside what PostgreSQL's jsonb keeps (131,072 and 16,383) and what Python reads back
# (4,300 digits for an integer, which jsonb writes a whole number as: 1e400 comes back as 1 and 400 zeros).
MAX_JSON_NUMBER_DIGITS = 1000
_JSON_INTEGER_LIMIT = 10**MAX_JSON_NUMBER_DIGITS


def _unstorable_number(number) -> bool:
    kind = number.__class__
    if kind is int:
        return not -_JSON_INTEGER_LIMIT < number < _JSON_INTEGER_LIMIT
    if isinstance(number, Decimal):
        return (not number.is_finite() or number.adjusted() >= MAX_JSON_NUMBER_DIGITS
                or number.as_tuple().exponent < -MAX_JSON_NUMBER_DIGITS)
    if isinstance(number, float):  # not from a request body (the parser reads Decimals); from code, perhaps
        return not math.isfinite(number)
    return False


def unstorable(value) -> bool:
    """What PostgreSQL cannot store, or the service cannot read back, in JSON: NUL characters in strings or
    keys (text and jsonb refuse them) and numbers beyond `MAX_JSON_NUMBER_DIGITS` digits before or after the
    decimal point. A loop over a stack, not recursion: every usage record's metadata passes here on the
    ingestion hot path."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "\x00" in item:
                return True
        elif isinstance(item, dict):
            for key, inner in item.items():
                if key.__class__ is str:  # always, from JSON
                    if "\x00" in key:
                        return True
                else:
                    pending.append(key)
                kind = inner.__class__
                if kind is str:  # the usual metadata values are checked here, without a trip round the loop
                    if "\x00" in inner:
                        return True
                elif kind is int:
                    if not -_JSON_INTEGER_LIMIT < inner < _JSON_INTEGER_LIMIT:
                        return True
                elif not (kind is bool or inner is None):
                    pending.append(inner)
        elif isinstance(item, list):
            pending.extend(item)
        elif _unstorable_number(item):
            return True
    return False


UNSTORABLE_MESSAGE = (f"Must not contain NUL (\\u0000) characters or numbers of more than {MAX_JSON_NUMBER_DIGITS} "
                      f"digits before or after the decimal point.")


class JsonObjectIn(serializers.DictField):
    """A JSON object stored and returned verbatim (its keys are never case-converted)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if unstorable(value):
            raise serializers.ValidationError(UNSTORABLE_MESSAGE)
        return value
