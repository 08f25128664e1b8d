"""The console's one formatter (core/display.py) in templates: `{% load display %}{{ value|percent }}`."""
from django import template

from core import display

register = template.Library()


@register.filter
def percent(value) -> str:
    """`12.5%`, `15%`: as every list and page of the console writes a percent."""
    return display.percent(value)
