"""How people read values, one way in the console, the portal and the invoice documents (core/display.py)."""
from datetime import date, datetime, timezone
from decimal import Decimal as D

import pytest

from core import display


@pytest.mark.parametrize("amount, currency, expected", [
    (D("3149.5"), "usd", "$3,149.50"),
    (D("0"), "usd", "$0.00"),
    (D("-12.3"), "usd", "-$12.30"),
    (D("1234.5"), "eur", "1,234.50 EUR"),
    (None, "usd", "-"),
])
def test_money_has_two_places_and_the_currency(amount, currency, expected):
    assert display.money(amount, currency) == expected


@pytest.mark.parametrize("amount, expected", [
    (D("0.000375000000"), "$0.000375"),  # an event's cost keeps its digits
    (D("0.400000000000"), "$0.40"),  # never fewer than two places
    (D("1250"), "$1,250.00"),
])
def test_a_cost_or_rate_keeps_every_significant_digit(amount, expected):
    assert display.price(amount) == expected


@pytest.mark.parametrize("value, expected", [
    (D("3149.000000000000"), "3,149"),
    (D("0.250000000000"), "0.25"),
    (D("1E+3"), "1,000"),
    (12, "12"),
    (None, "-"),
])
def test_quantities_have_no_trailing_zeros(value, expected):
    assert display.quantity(value) == expected


def test_a_half_open_period_is_written_as_its_first_and_last_local_day():
    start, end = datetime(2026, 10, 1, tzinfo=timezone.utc), datetime(2026, 11, 1, tzinfo=timezone.utc)
    assert display.period(start, end) == "2026-10-01 to 2026-10-31"
    # The same instants in New York: the period's days there (UTC midnight is the evening before).
    assert display.period(start, end, "America/New_York") == "2026-09-30 to 2026-10-31"
    assert display.period(None, end) == "-"


def test_days_and_instants():
    assert display.day(date(2026, 10, 1)) == "2026-10-01"
    assert display.moment(datetime(2026, 10, 1, 14, 5, 59, tzinfo=timezone.utc)) == "2026-10-01 14:05 UTC"
    assert display.percent(D("12.50")) == "12.5%"
    assert display.moment(None) == display.day(None) == display.percent(None) == "-"


@pytest.mark.parametrize("tiers, pool, expected", [
    ([{"lower": 0, "upper": 1000, "rate": "2"}, {"lower": 1000, "upper": None, "rate": "0.015"}], False,
     "0 to 1,000: $2.00 each; 1,000 and up: $0.015 each"),
    ([{"lower": 0, "upper": 1000, "rate": 50}, {"lower": 1000, "upper": None, "rate": "0.06"}], True,
     "a pool of 1,000 units for $50.00; $0.06 each beyond"),
    ([], False, "-"),
    ([{"price": 1}], False, "[{'price': 1}]"),  # made by hand: as stored, never an error page
])
def test_tiers_read_as_spans_and_prices(tiers, pool, expected):
    assert display.tiers(tiers, pool=pool) == expected


@pytest.mark.parametrize("name, expected", [("tickets_resolved", "tickets resolved"), ("Resolved tickets", "Resolved tickets"),
                                            ("pages", "pages"), ("api_call_v2", "api call v2"), ("_", "_"),
                                            ("docs_ reviewed", "docs_ reviewed")])
def test_a_machine_name_reads_as_words_beside_a_quantity(name, expected):
    assert display.unit(name) == expected


@pytest.mark.parametrize("value, expected", [(D("-0.005"), "-$0.01"), (D("2512.124932158459"), "$2,512.12"),
                                             (D("10.005"), "$10.01"), (None, "-")])
def test_the_consoles_money_filter_writes_the_sign_before_the_currency_and_rounds_as_invoices(value, expected):
    """The dashboard wrote a negative margin `$-0.01` (Django's floatformat after a `$`)."""
    from django.template import Context, Template
    assert Template("{% load display %}{{ value|money }}").render(Context({"value": value})) == expected


def test_a_headline_figure_is_in_cents_unless_cents_would_write_a_nonzero_amount_as_nothing():
    from decimal import Decimal as D

    from core.templatetags.display import figure
    assert [figure(D(value)) for value in ("1234.567891234567", "0.0035", "-0.004", "0", "-0.005", "0.01")] == [
        "$1,234.57", "$0.0035", "-$0.004", "$0.00", "-$0.01", "$0.01"]
    assert figure(None) == "-"
