"""The console's one formatter (core/display.py) in templates: `{% load display %}{{ value|percent }}`,
`{{ value|money }}`."""
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
