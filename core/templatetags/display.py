"""The console's one formatter (core/display.py) in templates: `{% load display %}{{ value|percent }}`,
`{{ value|money }}`, `{{ value|figure }}`."""
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
def figure(value) -> str:
    """A headline amount of exact digits (a month's cost, a margin): in cents, `$1,234.57`, unless cents would write
    a nonzero amount as nothing, then with its significant digits, `$0.0035`, `-$0.004` (a month's cost of $0.0035
    read $0.00 beside its chart bar)."""
    if value is None:
        return display.money(None)
    exact = Decimal(value)
    cents = to_cents(exact)
    return display.price(exact) if exact and not cents else display.money(cents)
