"""How the console shows a row's values: through core/display.py, the same helper as the portal and the
invoice documents, on every list column and every read-only field.

Django's admin would print a decimal column with all its stored places (`3149.000000000000`), dates in its
locale's long form (`Oct. 1, 2026, midnight`), a JSON field as raw JSON and an empty computed value as `None`.
`shown(model, name)` turns a model field that needs it into a display function the admin uses in the field's
place (same column label, same sorting, the same `field-<name>` CSS class); the CSV export reads the raw value
through `raw_field`.
"""
from datetime import timedelta
from functools import lru_cache

from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext
from django.utils.safestring import mark_safe

from accounts.actors import actor_name
from core import display
from core.money import CENTS_PLACES

PRICE_SUFFIXES = ("cost", "_usd", "rate", "amount")  # exact decimals that are money per unit or per event
CREDIT_POOL = "credit_pool"  # the pricing model whose two tiers are a pool and its overage rate
ACTOR_FIELDS = ("actor", "created_by")  # who made a record, kept as `api-key:<id>` or `user:<id>`


def kind_of(field) -> str | None:
    """Which formatter a model field's values take, or None for Django's own display (text, choices, links)."""
    if getattr(field, "choices", None):
        return None
    if isinstance(field, models.DecimalField):
        if field.decimal_places == CENTS_PLACES:
            return "money"
        if field.name.endswith("percent"):
            return "percent"
        return "price" if field.name.endswith(PRICE_SUFFIXES) else "quantity"
    if isinstance(field, models.IntegerField) and not field.primary_key:
        return "quantity"  # tokens, seats, counts: grouped
    if isinstance(field, models.DateTimeField):
        return "moment"
    if isinstance(field, models.DateField):
        return "day"
    if isinstance(field, models.JSONField):
        return "tiers" if field.name == "tiers" else "json"  # a strategy's tiered prices
    return None


def readable(value) -> str:
    """A JSON value as lines a person reads (`name: value`, a change as `before → after`), never raw JSON."""
    if value in (None, "", {}, []):
        return display.EMPTY
    if isinstance(value, dict):
        if set(value) == {"before", "after"}:
            return f"{readable(value['before'])} → {readable(value['after'])}"
        return format_html_join(mark_safe("<br>"), "{}: {}", ((key, readable(item)) for key, item in value.items()))
    if isinstance(value, list):
        return format_html_join(mark_safe("<br>"), "{}", ((readable(item),) for item in value))
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def figure(text: str) -> str:
    """A figure computed by an admin method, shown like the formatted fields' (one line; right-aligned in lists)."""
    return format_html('<span class="console-number">{}</span>', text)


def _whole_parts(text: str, separator: str) -> str:
    """`text` that a list short of room may break at its first `separator` only, each part kept on one line: never
    inside a date (browsers break after a hyphen)."""
    first, found, rest = text.partition(separator)
    if not found:
        return format_html('<span class="console-nowrap">{}</span>', text)
    return format_html('<span class="console-nowrap">{}</span>{}<span class="console-nowrap">{}</span>',
                       first, separator, rest)


def period_cell(text: str) -> str:
    """A period as a list shows it (`2026-10-01 to 2026-10-31`), broken at " to " when a list is short of room."""
    return _whole_parts(text, " to ")


def format_value(kind: str, value, row=None) -> str:
    """`value` as the console shows it; figures and dates in a span that keeps them on one line (and lists
    right-align the figures)."""
    currency = getattr(row, "currency", None) if row is not None else None
    figures = {"money": lambda: display.money(value, currency), "price": lambda: display.price(value, currency),
               "quantity": lambda: display.quantity(value), "percent": lambda: display.percent(value)}
    if kind in figures:
        return figure(figures[kind]())
    if kind == "moment":
        return _whole_parts(display.moment(value), " ")  # the day, then the time: a narrow list breaks between
    if kind == "day":
        return format_html('<span class="console-nowrap">{}</span>', display.day(value))
    if kind == "tiers":
        return display.tiers(value, pool=getattr(row, "pricing_model", None) == CREDIT_POOL)
    return readable(value)


def shown(model, name, label: str | None = None):
    """`name` itself, or for a field that needs formatting (or a shorter column label) a display function standing
    in for it: one per model, field and label, so the admin finds the same object in list_display_links and
    readonly_fields."""
    return _stand_in(model, name, label) if isinstance(name, str) else name


@lru_cache(maxsize=None)
def _stand_in(model, name: str, label: str | None):
    try:
        field = model._meta.get_field(name)
    except FieldDoesNotExist:
        return name
    if name in ACTOR_FIELDS and not field.is_relation:
        return _author(name, label or field.verbose_name)
    kind = kind_of(field) if field.concrete and not field.is_relation else None
    if kind is None and (label is None or field.is_relation):
        return name

    def value_of(row):
        if kind is None:  # text or choices, under a shorter label
            value = getattr(row, f"get_{name}_display")() if field.choices else getattr(row, name)
            return display.EMPTY if value in (None, "") else value
        return format_value(kind, getattr(row, name), row)
    value_of.__name__ = name  # the column's CSS class stays field-<name>
    value_of.short_description = label or field.verbose_name
    value_of.admin_order_field = name
    value_of.raw_field = name
    value_of.empty_value_display = display.EMPTY
    return value_of


def _author(name: str, label: str):
    """A record's author (`api-key:<id>`, `user:<id>`) by the key's name or the user's email (accounts/actors.py)."""
    def author(row):
        value = getattr(row, name)
        return actor_name(getattr(row, "book_id", None), value) if value else display.EMPTY
    author.__name__ = name
    author.short_description = label
    author.admin_order_field = name
    author.raw_field = name  # the CSV export keeps the id: a name can change
    author.empty_value_display = display.EMPTY
    return author


def shown_all(model, names, labels: dict | None = None) -> list:
    labels = labels or {}
    return [shown(model, name, labels.get(name)) if isinstance(name, str) else name for name in names]


class MonthsDateFilter(admin.DateFieldListFilter):
    """Django's date filter (any date, today, past 7 days, this month, this year) with last month after this
    month: what a month's close asks of every dated list (last month's usage, last month's invoices)."""

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        links = list(self.links)
        # After Django's own "This month" (its label in the operator's language): the month before ends where it starts.
        position, this_month = next((index, params[self.lookup_kwarg_since]) for index, (label, params)
                                    in enumerate(links) if str(label) == gettext("This month"))
        last_month = (this_month - timedelta(days=1)).replace(day=1)
        links.insert(position + 1, ("Last month", {self.lookup_kwarg_since: last_month,
                                                   self.lookup_kwarg_until: this_month}))
        self.links = tuple(links)


def presence_filter(title: str, present: str, absent: str) -> type:
    """Django's filter on whether a field is set, titled and worded as people say it ("By deleted: Deleted / Not
    deleted") rather than by the column ("By deleted at: Not empty / Empty")."""

    class PresenceFilter(admin.EmptyFieldListFilter):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.title = title

        def choices(self, changelist):
            words = {str(gettext("Empty")): absent, str(gettext("Not empty")): present}
            for choice in super().choices(changelist):
                yield {**choice, "display": words.get(str(choice["display"]), choice["display"])}

    return PresenceFilter
