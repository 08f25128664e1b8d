"""The console's one formatter (core/display.py) in templates: `{% load display %}{{ value|percent }}`,
`{{ value|money }}`, `{{ value|price }}`."""
from decimal import Decimal

from django import template

from core import display
from core.money import to_cents

register = template.Library()


@register.filter
def percent(value) -> str:
    """`12.5%`, `15%`: as every list and page of the console writes a percent."""
    return display.percent(value)


@register.filter
def money(value) -> str:
    """`$1,234.50`, `-$0.01` (not `$-0.01`): as every list and page of the console writes an amount in US dollars,
    rounded half-up to cents as invoices round (a figure of more places, revenue, shown as its invoice would be)."""
    return display.money(None if value is None else to_cents(Decimal(value)))


@register.filter
def price(value) -> str:
    """`$0.000375`, `$3.90`: a cost or a rate with every significant digit, as the console's lists write an event's
    cost (rounded to cents, a month's cost of $0.0035 would read as nothing)."""
    return display.price(None if value is None else Decimal(value))
