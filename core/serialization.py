"""Edge helpers for serializers: parsing a request body, exact money fields, what JSON PostgreSQL can store."""
import json
import math
import re
from decimal import Decimal




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
    which the API's renderer writes from its digits (core/api_json.py), never through a float."""
    if value is None:
        return None
    return Decimal(decimal_text(value))


# A number in stored JSON keeps every digit, up to this many before and after the decimal point: far beyond
# any real value, well inside what PostgreSQL's jsonb keeps (131,072 and 16,383) and what Python reads back
# (4,300 digits for an integer, which jsonb writes a whole number as: 1e400 comes back as 1 and 400 zeros).
MAX_JSON_NUMBER_DIGITS = 1000
_JSON_INTEGER_LIMIT = 10**MAX_JSON_NUMBER_DIGITS
# Arrays and objects nest at most this deep, in a request body (counted from its top) and in a stored JSON value
# (counted from its own): far beyond any real document, well inside what the renderer writes (orjson: 254 levels)
# and what the parser reads (about 990, where Python's recursion limit stops it).
MAX_JSON_DEPTH = 64

NUL_MESSAGE = "Must not contain NUL (\\u0000) characters."
SURROGATE_MESSAGE = "Must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)."
NUMBER_MESSAGE = (f"Must not hold a number of more than {MAX_JSON_NUMBER_DIGITS} digits before or after the decimal "
                  f"point.")
DEPTH_MESSAGE = f"Must not nest arrays and objects more than {MAX_JSON_DEPTH} levels deep."

# A lone surrogate: JSON's `"\\ud800"` escape decodes to one (a pair decodes to the character it encodes), and no
# UTF-8 text, so neither PostgreSQL nor the JSON renderer, can hold it.
_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problem(text: str) -> str | None:
    """Why PostgreSQL cannot store this text (a NUL character, an unpaired surrogate), or None. ASCII text, the
    usual case, is cleared by a flag Python keeps on the string."""
    if "\x00" in text:
        return NUL_MESSAGE
    if not text.isascii() and _SURROGATE.search(text):
        return SURROGATE_MESSAGE
    return None


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


def _key_path(where: str, key) -> str:
    key = str(key)
    if text_problem(key):  # named with JSON's escapes: the message itself must be storable and renderable
        key = json.dumps(key)[1:-1]
    return f"{where}.{key}" if where else key


def _problem_of(value) -> str | None:
    """The problem of one value that is not an array or object."""
    if isinstance(value, str):
        return text_problem(value)
    if value.__class__ is bool or value is None:
        return None
    return NUMBER_MESSAGE if _unstorable_number(value) else None


def unstorable_reason(value) -> tuple[str, str] | None:
    """The first thing of a JSON value that PostgreSQL cannot store or the service cannot read back or render,
    as (where, problem): NUL characters or unpaired surrogates in strings or keys (text and jsonb refuse
    them), numbers beyond `MAX_JSON_NUMBER_DIGITS` digits before or after the decimal point, arrays and objects
    nested more than `MAX_JSON_DEPTH` levels. `where` is the path inside `value` (`note`, `items[2].name`; ""
    for `value` itself). None when everything is storable.

    Level by level, not recursion: every request body and every usage record's metadata passes here (the
    ingestion hot path), so the usual values (strings, whole numbers) are checked where they are met."""
    level = [(value, "")]
    depth = 1
    while level:
        if depth > MAX_JSON_DEPTH:
            return level[0][1], DEPTH_MESSAGE
        deeper = []
        for item, where in level:
            if isinstance(item, dict):
                children, keyed = item.items(), True
            elif isinstance(item, (list, tuple)):
                children, keyed = enumerate(item), False
            else:
                problem = _problem_of(item)
                if problem:
                    return where, problem
                continue
            for key, inner in children:
                if keyed and (key.__class__ is not str or "\x00" in key or not key.isascii()):
                    problem = text_problem(key) if isinstance(key, str) else _problem_of(key)
                    if problem:
                        return _key_path(where, key), problem
                kind = inner.__class__
                if kind is str:  # the usual values are checked here, without a trip round the loop
                    if "\x00" in inner or (not inner.isascii() and _SURROGATE.search(inner)):
                        return (_key_path(where, key) if keyed else f"{where}[{key}]"), text_problem(inner)
                elif kind is int:
                    if not -_JSON_INTEGER_LIMIT < inner < _JSON_INTEGER_LIMIT:
                        return (_key_path(where, key) if keyed else f"{where}[{key}]"), NUMBER_MESSAGE
                elif kind is bool or inner is None:
                    continue
                elif isinstance(inner, (dict, list, tuple)):
                    deeper.append((inner, _key_path(where, key) if keyed else f"{where}[{key}]"))
                else:  # a Decimal (a number with a fraction or exponent), or a subclass of str or int
                    problem = _problem_of(inner)
                    if problem:
                        return (_key_path(where, key) if keyed else f"{where}[{key}]"), problem
        level = deeper
        depth += 1
    return None


def unstorable(value) -> bool:
    """Whether anything of a JSON value is unstorable (`unstorable_reason`)."""
    return unstorable_reason(value) is not None


def unstorable_message(reason: tuple[str, str]) -> str:
    """`where: problem` for an error list ("note: Must not contain ..."), or the problem alone for the value itself."""
    where, problem = reason
    return f"{where}: {problem}" if where else problem


# The words a query string's boolean takes, in any case (core/filtering.py's list filters read the same): as a
# body's boolean takes JSON true or false only, `1`, `0`, `yes` are a 400 naming the parameter, never a guess.
QUERY_TRUE, QUERY_FALSE = frozenset({"true"}), frozenset({"false"})
