"""The base of the typed answers: a `Model` is the API's JSON object itself (a `dict`, keys camelCase as the
API names them, values as `_json` read them) with typed attributes on top (snake_case).

    invoice["total"]      # the answer as sent: Decimal('57.25'), or 57 when the service wrote a whole number
    invoice.total         # Decimal('57.25'), always a Decimal
    invoice.period_start  # a datetime
    invoice.raw           # a plain dict copy of the answer

Being the dict keeps every caller that indexes answers working, and keeps fields the client does not know yet
(a newer service) within reach: parsing reads the declared fields and never refuses an unknown one. A declared
field that is missing reads as None; one whose value does not fit its type keeps the value as sent.
"""
from __future__ import annotations

import types
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Callable, Union, get_args, get_origin, get_type_hints

# The dict's own methods: a field of one of these names would hide it (read it as `answer["items"]`).
_DICT_NAMES = frozenset(dir(dict)) | {"raw", "parse"}


def camel_case(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(part[:1].upper() + part[1:] for part in rest)


def _decimal(value):
    if isinstance(value, bool) or not isinstance(value, (int, str, Decimal)):
        return value  # never through a float: `_json` reads none, and a float here would not be exact
    try:
        return value if isinstance(value, Decimal) else Decimal(value)
    except InvalidOperation:
        return value


def _instant(value):
    if not isinstance(value, str):
        return value
    try:  # Python 3.10 reads no "Z" suffix
        return datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError:
        return value


def _day(value):
    if not isinstance(value, str):
        return value
    try:
        return date.fromisoformat(value)
    except ValueError:
        return _instant(value)


def _converter(hint) -> Callable[[Any], Any]:
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        present = [arg for arg in get_args(hint) if arg is not type(None)]
        return _converter(present[0]) if len(present) == 1 else (lambda value: value)
    if origin is list:
        (item_hint,) = get_args(hint) or (Any,)
        convert_item = _converter(item_hint)
        return lambda value: [convert_item(item) for item in value] if isinstance(value, list) else value
    if hint is Decimal:
        return _decimal
    if hint is datetime:
        return _instant
    if hint is date:
        return _day
    if isinstance(hint, type) and issubclass(hint, Model):
        return lambda value: hint.parse(value) if isinstance(value, dict) else value
    return lambda value: value


class Model(dict):
    """An answer of the API: the JSON object, plus its declared fields as typed attributes (see the module)."""

    _fields: tuple[tuple[str, str, Callable[[Any], Any]], ...] = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        hints = {name: hint for name, hint in get_type_hints(cls).items() if not name.startswith("_")}
        clashes = sorted(set(hints) & _DICT_NAMES)
        if clashes:
            raise TypeError(f"{cls.__name__}: fields {clashes} would hide the dict's own methods")
        cls._fields = tuple((name, camel_case(name), _converter(hint)) for name, hint in hints.items())

    @classmethod
    def parse(cls, data: dict):
        model = cls(data)
        for name, key, convert in cls._fields:
            value = data.get(key)
            object.__setattr__(model, name, None if value is None else convert(value))
        return model

    @property
    def raw(self) -> dict:
        return dict(self)

    def __repr__(self) -> str:
        known = ", ".join(f"{name}={getattr(self, name, None)!r}" for name, _, _ in self._fields
                          if getattr(self, name, None) is not None)
        return f"{type(self).__name__}({known})" if self._fields else f"{type(self).__name__}({dict.__repr__(self)})"


def parse(model: type[Model] | None, data: Any) -> Any:
    """The answer `data` as `model`s: an object becomes one, a list one per element; None keeps it as read."""
    if model is None:
        return data
    if isinstance(data, list):
        return [model.parse(item) if isinstance(item, dict) else item for item in data]
    return model.parse(data) if isinstance(data, dict) else data
