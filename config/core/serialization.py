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


def decimal_number(value: Decimal | None):
    """An exact decimal as a JSON number: int when whole, otherwise the float nearest its short text."""
    if value is None:
        return None
    if value == value.to_integral_value():
        return int(value)
    return float(decimal_text(value))


class DecimalIn(serializers.DecimalField):
    """An exact decimal input (JSON number or string) at the stored precision; never via float."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_digits", EXACT_DIGITS)
        kwargs.setdefault("decimal_places", EXACT_PLACES)
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        if isinstance(data, bool):
            self.fail("invalid")
        if isinstance(data, float):
            data = repr(data)  # shortest text of the JSON number, not its binary expansion
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


def unstorable(value) -> bool:
    """What PostgreSQL cannot store: NUL characters in strings or keys (text and jsonb refuse them) and
    infinite numbers (1e999) in JSON. A loop over a stack, not recursion: every usage record's metadata
    passes here on the ingestion hot path."""
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
                elif not (kind is int or kind is bool or inner is None):
                    pending.append(inner)
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return True
    return False


UNSTORABLE_MESSAGE = "Must not contain NUL (\\u0000) characters or infinite numbers."


class JsonObjectIn(serializers.DictField):
    """A JSON object stored and returned verbatim (its keys are never case-converted)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if unstorable(value):
            raise serializers.ValidationError(UNSTORABLE_MESSAGE)
        return value
