"""JSON whose numbers are exact, both ways (contract.md "Exact numbers in"; docs/decisions/numbers.md).

Reading: a number with a fraction or an exponent becomes the `Decimal` it spells (`12345678.123456789` stays
that, never the nearest binary float), an integer stays an `int`, and `NaN`/`Infinity` and a key given twice in
one object are refused.
Writing: a `Decimal` becomes a JSON number made of its own digits (no exponent, trailing zeros kept, so
`1.50` stays `1.50`), an integer of any size its digits.

One reader and one writer serve every place JSON crosses the service's edge: the API's parser and renderer
(core/api_json.py), the JSON columns (every model declares its JSON columns as `ExactJSONField`;
tests/core/test_exact_json.py finds any that does not) and the ledger's insert document (customers/ledger.py).
The writer is orjson: a `Decimal` is handed back to it as an `orjson.Fragment` of its digits, which it copies
into the output as they are.
"""
import json
import sys
from decimal import Decimal, InvalidOperation

import orjson
from django import forms
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.fields import InvalidJSONInput, JSONString

from core.serialization import DEPTH_MESSAGE, unstorable_message, unstorable_reason

# orjson writes integers from -2**63 to 2**64 - 1; JSON holds any.
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a number JSON allows.")


def exact_number(text: str) -> Decimal:
    """A JSON number with a fraction or an exponent as the Decimal it spells (the usage batch's fast decoder reads
    numbers through it too, billing/record_decoding.py)."""
    try:
        return Decimal(text)
    except InvalidOperation:  # an exponent beyond what Decimal represents (1e99999999999999999999)
        raise ValueError(f"The number {text[:40]} is out of range.") from None


def _object_without_duplicate_keys(pairs: list) -> dict:
    # A key given twice is ambiguous (parsers disagree on which one counts): refused, never the last one silently.
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"The key {json.dumps(key)} appears twice in one object.")
            seen.add(key)
    return obj


# Python turns at most this many digits into an int (sys.get_int_max_str_digits).
_INT_DIGITS = sys.get_int_max_str_digits() or 4300


def _integer(text: str) -> int | Decimal:
    """A JSON integer as an int; longer than Python converts, as the Decimal it spells, which every field refuses as
    too large (a usage record's quantity for that record alone, contract: "Exact numbers in") rather than the whole
    body failing to parse."""
    return int(text) if len(text) <= _INT_DIGITS else Decimal(text)


_reader = json.JSONDecoder(parse_float=exact_number, parse_int=_integer, parse_constant=_refuse_constant,
                           object_pairs_hook=_object_without_duplicate_keys)


def loads(text: str):
    """Parse JSON text; numbers with a fraction or exponent as `Decimal`. Raises ValueError (malformed JSON,
    `NaN`/`Infinity`, an out-of-range number, a key twice in one object)
    or RecursionError (arrays and objects nested about 990 levels deep)."""
    return _reader.decode(text)


def decimal_fragment(value: Decimal) -> orjson.Fragment:
    """A Decimal as a JSON number written from its own digits, without an exponent. (`str` first: it is the
    quicker of the two and already plain for every Decimal but the very large or very small ones; the ledger's
    insert writes two per event on the hot path.)"""
    text = str(value)
    if "E" in text:
        text = format(value, "f")
    if not text[-1].isdigit():  # NaN, sNaN, Infinity
        raise TypeError(f"{value} is not a number JSON can hold")
    return orjson.Fragment(text.encode())


def _stored_default(value):
    if value.__class__ is Decimal:
        return decimal_fragment(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _wide_integers_as_digits(value):
    """`value` with every integer beyond orjson's 64 bits as a fragment of its digits (a copy of containers)."""
    if isinstance(value, dict):
        return {key: _wide_integers_as_digits(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wide_integers_as_digits(item) for item in value]
    if value.__class__ is int and not _INT_MIN <= value <= _INT_MAX:
        return orjson.Fragment(str(value).encode())
    return value


def dumps(value, *, default=_stored_default, option: int = 0) -> bytes:
    """JSON bytes with exact numbers. `default` handles what orjson does not know (by default only Decimal)."""
    try:
        return orjson.dumps(value, default=default, option=option)
    except orjson.JSONEncodeError:
        # The rare document holding an integer beyond 64 bits (metadata may) or a dict key that is not a string:
        # once more with those integers as their digits and keys written as json.dumps writes them.
        return orjson.dumps(_wide_integers_as_digits(value), default=default,
                            option=option | orjson.OPT_NON_STR_KEYS)


class ExactJSONEncoder(json.JSONEncoder):
    """Django's encoder hook (`json.dumps(value, cls=...)`): the exact writer above."""

    def encode(self, o) -> str:
        option = (orjson.OPT_INDENT_2 if self.indent else 0) | (orjson.OPT_SORT_KEYS if self.sort_keys else 0)
        return dumps(o, option=option).decode()

    def iterencode(self, o, _one_shot=False):
        yield self.encode(o)


class ExactJSONDecoder(json.JSONDecoder):
    """Django's decoder hook (`json.loads(text, cls=...)`): numbers with a fraction or exponent as Decimal."""

    def __init__(self, **kwargs):
        kwargs.setdefault("parse_float", Decimal)
        super().__init__(**kwargs)


class StorableJSONFormField(forms.JSONField):
    """The console's field for a JSON column: read by the API's reader (`loads`: exact numbers, NaN and keys given
    twice refused) and held to what the API stores (`unstorable_reason`: NUL characters, numbers of more than 1000
    digits, nesting beyond 64 levels). Django's own field raises on an out-of-range exponent, a very long integer or
    deep nesting, and passes on what jsonb refuses: both would be a 500. Each is an error on the field here, and the
    form shows the text as typed."""

    def to_python(self, value):
        if self.disabled:
            return value
        if value in self.empty_values:
            return None
        if isinstance(value, (list, dict, int, float, JSONString)):
            return value
        converted = self._parsed(value)
        reason = unstorable_reason(converted)
        if reason:
            raise ValidationError(unstorable_message(reason), code="invalid")
        return JSONString(converted) if isinstance(converted, str) else converted

    def bound_data(self, data, initial):
        if self.disabled:
            return initial
        if data is None:
            return None
        try:
            value = self._parsed(data)
        except ValidationError:
            return InvalidJSONInput(data)
        # An unstorable value may not even be writable again (orjson nests 254 levels): shown as typed.
        return InvalidJSONInput(data) if unstorable_reason(value) else value

    def _parsed(self, text: str):
        try:
            return loads(text)
        except RecursionError:
            raise ValidationError(DEPTH_MESSAGE, code="invalid") from None
        except ValueError as error:  # malformed, NaN, a key twice, a number out of range
            raise ValidationError(f"Enter a valid JSON: {error}", code="invalid") from None


class ExactJSONField(models.JSONField):
    """A JSON column whose numbers are read and written exactly (`metadata`, `context`, ...): every model's JSON
    column is declared with it. Django has no setting for a JSONField's default encoder and decoder, and a plain
    one refuses to write a Decimal (which request bodies hold) and reads `0.1` back as a float.

    The column is the same `jsonb` as a plain `JSONField`'s and migrations record it as one (`deconstruct`):
    only how Python reads and writes its numbers differs, which no migration needs to know, so declaring a
    column with this class changes no migration."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("encoder", ExactJSONEncoder)
        kwargs.setdefault("decoder", ExactJSONDecoder)
        super().__init__(*args, **kwargs)

    def formfield(self, **kwargs):
        return super().formfield(**{"form_class": StorableJSONFormField, **kwargs})

    def deconstruct(self):
        name, _, args, kwargs = super().deconstruct()
        if kwargs.get("encoder") is ExactJSONEncoder:
            del kwargs["encoder"]
        if kwargs.get("decoder") is ExactJSONDecoder:
            del kwargs["decoder"]
        return name, "django.db.models.JSONField", args, kwargs
