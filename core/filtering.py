"""django-filter glue: strict query-parameter filters whose bad values are a 400 naming the parameter."""
import django_filters
from django import forms

from core.clock import parse_instant
from core.errors import BadRequest
from core.serialization import QUERY_FALSE, QUERY_TRUE, text_problem


class InstantField(forms.Field):
    """An ISO 8601 date or timestamp (no offset means UTC), parsed like every other instant of the API."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        try:
            return parse_instant(value)
        except BadRequest as exc:  # ["date: <why>"]: the filter names the parameter itself
            raise forms.ValidationError(exc.message[0].split(": ", 1)[1])


class InstantFilter(django_filters.Filter):
    field_class = InstantField


class StrictBooleanField(forms.Field):
    """`true`/`false`, case-insensitive; anything else (`1`, `yes`) is an error instead of being silently
    ignored."""

    TRUE, FALSE = QUERY_TRUE, QUERY_FALSE

    def to_python(self, value):
        if value in self.empty_values:
            return None
        text = str(value).strip().lower()
        if text in self.TRUE:
            return True
        if text in self.FALSE:
            return False
        raise forms.ValidationError("Must be true or false.")


class StrictBooleanFilter(django_filters.Filter):
    field_class = StrictBooleanField


def query_text_check(params) -> None:
    """A 400 naming each query parameter whose text PostgreSQL cannot take as a parameter (a NUL character, an
    unpaired surrogate: a 500 from the driver, not a miss)."""
    problems = {}
    for name, values in params.lists():
        for value in values:
            problem = text_problem(value)
            if problem is not None:
                problems.setdefault(name, problem)
    if problems:
        raise BadRequest([f"{name}: {problem}" for name, problem in sorted(problems.items())])


def filtered(filterset_class, params, queryset):
    """`queryset` narrowed by the query parameters `filterset_class` declares; a bad value is a 400."""
    query_text_check(params)
    filterset = filterset_class(params, queryset=queryset)
    if not filterset.is_valid():
        raise BadRequest([f"{name}: {message}" for name, messages in filterset.errors.items()
                          for message in messages])
    return filterset.qs
