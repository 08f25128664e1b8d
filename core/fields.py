"""The strict request and response fields every app's serializers use (contract.md "Booleans", "Exact numbers in").

One rule per kind of value, written once: a text field takes a JSON string only, a UUID field a UUID string only,
a boolean JSON `true` or `false` only, a decimal the exact number a client wrote (never through a float, never
rounded). DRF's own fields convert where they should refuse (`5` for a name, `1` for a UUID, `"yes"` for a
boolean); a wrong type here is a 400 naming the field.
"""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.clock import MAX_YEAR, MIN_YEAR, YEAR_RANGE_MESSAGE
from core.money import EXACT_IN_DIGITS, EXACT_IN_PLACES
from core.serialization import QUERY_FALSE, QUERY_TRUE, decimal_number, decimal_text, unstorable_reason


# --------------------------------------------------------------------------- text and ids

class Text(serializers.CharField):
    """Input: a JSON string only; numbers and booleans are a wrong type (400), not silently converted."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid")
        return super().to_internal_value(data)


class TextOut(serializers.CharField):
    """Output: an optional text column; empty reads as null."""

    def __init__(self, **kwargs):
        kwargs.setdefault("allow_null", True)
        super().__init__(**kwargs)

    def to_representation(self, value):
        return value or None


class UuidIn(serializers.UUIDField):
    """Input: a UUID string only (DRF would also read an integer as a UUID)."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


def refuse_unknown_fields(serializer: serializers.Serializer, *, message: str | None = None) -> None:
    """A 400 naming each field of the request body the serializer does not take. For requests whose effect a
    misspelled field would change silently and for good (ignored, a plan change's `effectiveDate` would leave it
    taking effect now, irreversibly; a webhook endpoint's `events`, subscribed to every event type). `message`: said of each."""
    if not isinstance(serializer.initial_data, dict):
        return
    unknown = [key for key in serializer.initial_data if key not in serializer.fields]
    if unknown:
        said = message or f"Not a field of this request; it takes {', '.join(serializer.fields)}."
        raise serializers.ValidationError({key: said for key in unknown})


# --------------------------------------------------------------------------- booleans

class Flag(serializers.BooleanField):
    """Input: JSON `true` or `false` only (contract.md "Booleans"). DRF's own field reads `"yes"`, `"on"`, `1` and
    `"0"` as booleans, so `{"paused": "yes"}` would pause; here anything but a JSON boolean is a 400 naming the
    field, and `null` is one too unless the field allows it. Every boolean a request body carries is a Flag."""

    default_error_messages = {"invalid": "Must be true or false (a JSON boolean)."}

    def to_internal_value(self, data):
        if data.__class__ is not bool:
            self.fail("invalid")
        return data


class QueryFlag(serializers.BooleanField):
    """A boolean query parameter: `true` or `false`, case-insensitive; anything else (`1`, `yes`, `on`) is a 400
    naming the parameter instead of a guess."""

    default_error_messages = {"invalid": "Must be true or false."}

    def to_internal_value(self, data):
        if data.__class__ is bool:  # an absent parameter: DRF hands a query string's missing flag in as False
            return data
        text = data.strip().lower() if isinstance(data, str) else None
        if text in QUERY_TRUE:
            return True
        if text in QUERY_FALSE:
            return False
        self.fail("invalid")


# --------------------------------------------------------------------------- numbers and money

class DecimalIn(serializers.DecimalField):
    """An exact decimal input (a JSON number, which the parser reads as the Decimal it spells, or a decimal
    string), stored as written: by default up to 340 decimal places below 10^16 (core/money.py `EXACT_IN_PLACES`,
    every digit a client prints for a float); more is a 400, never rounded."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_digits", EXACT_IN_DIGITS)
        kwargs.setdefault("decimal_places", EXACT_IN_PLACES)
        super().__init__(**kwargs)

    def validate_empty_values(self, data):
        # Only JSON null is null. DRF reads a blank string as null for a nullable decimal, so a refund's
        # `{"amount": ""}` refunded the whole payment and a tier's `"upper": ""` opened it: a blank is not a number.
        return serializers.Field.validate_empty_values(self, data)

    def to_internal_value(self, data):
        if isinstance(data, (bool, float)):  # a float never comes from a request body: refuse, do not guess
            self.fail("invalid")
        return super().to_internal_value(data)

    def quantize(self, value):
        """As written: DRF pads a value to `decimal_places` (0.25 with 338 zeros after it, stored and sent so);
        `validate_precision` has refused whatever has more places than allowed, so nothing is left to round."""
        return value


class _DecimalOut(serializers.Field):
    """Output only: a Decimal as the subclass's `render` writes it."""

    def __init__(self, **kwargs):
        kwargs["read_only"] = True
        super().__init__(**kwargs)

    def to_representation(self, value):
        return self.render(value)


@extend_schema_field(OpenApiTypes.NUMBER)
class DecimalNumber(_DecimalOut):
    """Output: a Decimal rendered as a JSON number."""

    render = staticmethod(decimal_number)


@extend_schema_field({"type": "string", "format": "decimal", "example": "0.00045"})
class DecimalText(_DecimalOut):
    """Output: a Decimal rendered as a decimal string ("0.00045")."""

    render = staticmethod(decimal_text)


# --------------------------------------------------------------------------- dates and JSON objects

class DayIn(serializers.DateField):
    """An ISO 8601 date (`YYYY-MM-DD`) in the years the service's calendar arithmetic allows (core/clock.py):
    `9999-12-31` is a 400 naming the field, never an overflow a day later."""

    def to_internal_value(self, value):
        day = super().to_internal_value(value)
        if not MIN_YEAR <= day.year <= MAX_YEAR:
            raise serializers.ValidationError(YEAR_RANGE_MESSAGE)
        return day


class JsonObjectIn(serializers.DictField):
    """A JSON object stored and returned verbatim (its keys are never case-converted)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        reason = unstorable_reason(value)
        if reason:
            where, problem = reason  # named inside the field: `metadata.note: Must not contain ...`
            raise serializers.ValidationError({where: [problem]} if where else [problem])
        return value

