"""The credit-pool arithmetic, table-driven: draws on top-ups, alert stages, percent rounding and pool terms."""
from decimal import Decimal as D

import pytest

from billing.models import PricingStrategy
from customers.models import Signal
from billing.selectors.credit_pools import pool_of, remaining_percent, topup_draw
from billing.services.credit_pools import stages_passed


@pytest.mark.parametrize("consumed, pool, available, drawn", [
    ("0", "100", "50", "0"), ("100", "100", "50", "0"), ("130", "100", "50", "30"), ("180", "100", "50", "50"),
    ("130", "100", "0", "0"), ("130", "100", "-5", "0"), ("100.5", "100", "50", "0.5"),
])
def test_only_units_beyond_the_pool_come_out_of_top_ups(consumed, pool, available, drawn):
    assert topup_draw(consumed=D(consumed), pool_size=D(pool), available=D(available)) == D(drawn)


@pytest.mark.parametrize("remaining, stages", [
    ("51", []), ("50", [50]), ("20.01", [50]), ("20", [50, 80]), ("5", [50, 80, 95]), ("0.01", [50, 80, 95]),
    ("0", [50, 80, 95, 100]), ("-30", [50, 80, 95, 100]), ("150", []),
])
def test_stages_are_half_eighty_ninety_five_percent_used_and_empty(remaining, stages):
    assert stages_passed(remaining=D(remaining), pool_size=D(100)) == stages


@pytest.mark.parametrize("remaining, pool, percent", [
    ("60", "100", "60"), ("-30", "100", "-30"), ("2", "3", "66.67"), ("1", "3", "33.33"), ("0.005", "1", "0.50"),
    ("0.00005", "1", "0.01"), ("-0.00005", "1", "-0.01"), ("250", "100", "250"),
])
def test_remaining_percent_rounds_half_up_to_two_places(remaining, pool, percent):
    assert remaining_percent(D(remaining), D(pool)) == D(percent)


def strategy(tiers, **fields) -> PricingStrategy:
    return PricingStrategy(charge_type="usage", pricing_model="credit_pool", tiers=tiers,
                           signal=Signal(type="usage"), **fields)


@pytest.mark.parametrize("tiers, size, overage", [
    ([{"lower": "0", "upper": "100", "rate": "50"}, {"lower": "100", "upper": None, "rate": "0.75"}], "100", "0.75"),
    ([{"lower": "0", "upper": "80", "rate": "9"}], "80", None),
    ([{"lower": "0", "upper": "80", "rate": "9"}, {"lower": "80", "upper": None, "rate": "nope"}], "80", None),
    ([{"lower": "0", "upper": "80", "rate": "9"}, {"lower": "80", "upper": None}], "80", None),
])
def test_a_pool_reads_its_size_and_overage_rate_from_the_tiers(tiers, size, overage):
    pool = pool_of(strategy(tiers))
    assert (pool.size, pool.overage_rate) == (D(size), None if overage is None else D(overage))


@pytest.mark.parametrize("tiers", [[], [{"lower": "0", "upper": None, "rate": "9"}], [{"upper": "0"}], "junk"])
def test_tiers_without_a_positive_pool_size_sell_no_pool(tiers):
    assert pool_of(strategy(tiers)) is None


def test_overage_units_follow_the_minimum_commitment():
    pool = pool_of(strategy([{"lower": "0", "upper": "100", "rate": "50"},
                             {"lower": "100", "upper": None, "rate": "1"}], minimum_commitment=D(150)))
    assert [pool.overage_units(D(units)) for units in ("0", "120", "200")] == [D(50), D(50), D(100)]
