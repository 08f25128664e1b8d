"""The pricing engine (billing/pricing/engine.py): every model and charge type against hand-computed amounts,
then properties that must hold for any tiers, quantities and invoice lines."""
from datetime import date, datetime, timedelta, timezone as dt_timezone
from decimal import Decimal as D
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from billing.pricing.engine import (
    Discount, DaySpan, Line, StrategyTerms, SubscriptionTerms, Tier, agent_earned, covered_days, credit_pool,
    fee_for_period, flat, graduated, invoice_totals, period_lines, price_quantity, strategy_line,
    tier_errors, volume,
)
from core.money import CENT, to_cents

UTC = dt_timezone.utc
TIERS = (Tier(D(0), D(100), D("0.10")), Tier(D(100), None, D("0.05")))
THREE_TIERS = (Tier(D(0), D(10), D(1)), Tier(D(10), D(50), D("0.5")), Tier(D(50), None, D("0.2")))
POOL = (Tier(D(0), D(100), D(50)), Tier(D(100), None, D("0.75")))  # 100 units for 50.00, then 0.75 each
JAN_2025 = DaySpan(date(2025, 1, 1), date(2025, 2, 1))
FEB_2025 = DaySpan(date(2025, 2, 1), date(2025, 3, 1))


def half_up_cents(exact: Fraction) -> D:
    """An exact positive amount rounded half-up to cents, by integer arithmetic: floor(x + 1/2) cents."""
    return D(int(exact * 100 + Fraction(1, 2))) * CENT


def usage_terms(model, *, rate=None, tiers=(), minimum=None, strategy_id=""):
    return StrategyTerms.from_values(charge_type="usage", pricing_model=model, rate=rate, tiers=tiers,
                                     minimum_commitment=minimum, strategy_id=strategy_id)


def fee_terms(charge_type, rate, frequency="monthly", strategy_id=""):
    return StrategyTerms.from_values(charge_type=charge_type, rate=rate, billing_frequency=frequency,
                                     strategy_id=strategy_id)


def seat_terms(rate=None, *, model="flat", tiers=(), minimum=None, frequency="monthly", strategy_id=""):
    return StrategyTerms.from_values(charge_type="seat_based", pricing_model=model, rate=rate, tiers=tiers,
                                     minimum_commitment=minimum, billing_frequency=frequency,
                                     strategy_id=strategy_id)


def since(day: date, **fields) -> SubscriptionTerms:
    return SubscriptionTerms(start=day, **fields)


# --------------------------------------------------------------------------- pricing models

@pytest.mark.parametrize("quantity, expected", [
    ("0", "0"), ("40", "10.00"), ("0.5", "0.125"), ("1000000", "250000"),
])
def test_flat_bills_quantity_times_rate(quantity, expected):
    assert flat(D(quantity), D("0.25")) == D(expected)


@pytest.mark.parametrize("tiers, quantity, expected", [
    (TIERS, "0", "0"),
    (TIERS, "0.001", "0.0001"),
    (TIERS, "50", "5.00"),
    (TIERS, "100", "10.00"),        # exactly at the edge: all in tier 1
    (TIERS, "100.5", "10.025"),     # 100 x 0.10 + 0.5 x 0.05
    (TIERS, "150", "12.50"),        # 100 x 0.10 + 50 x 0.05
    (THREE_TIERS, "10", "10"),
    (THREE_TIERS, "10.5", "10.25"),  # 10 x 1 + 0.5 x 0.5
    (THREE_TIERS, "50", "30"),       # 10 x 1 + 40 x 0.5
    (THREE_TIERS, "60", "32"),       # 30 + 10 x 0.2
])
def test_graduated_prices_each_range_at_its_own_rate(tiers, quantity, expected):
    assert graduated(D(quantity), tiers) == D(expected)


@pytest.mark.parametrize("tiers, quantity, expected", [
    (TIERS, "0", "0"),
    (TIERS, "99.99", "9.999"),
    (TIERS, "100", "10.00"),          # lower < q <= upper: 100 is still tier 1
    (TIERS, "100.001", "5.00005"),    # just past the edge: every unit at 0.05
    (TIERS, "150", "7.50"),
    (THREE_TIERS, "10", "10"),
    (THREE_TIERS, "10.5", "5.25"),
    (THREE_TIERS, "50", "25"),
    (THREE_TIERS, "60", "12"),
])
def test_volume_prices_every_unit_at_the_rate_of_the_tier_the_total_falls_in(tiers, quantity, expected):
    assert volume(D(quantity), tiers) == D(expected)


def test_volume_total_just_past_a_tier_edge_can_cost_less_than_at_the_edge():
    # The volume cliff: with descending rates, volume pricing is not monotonic in quantity.
    assert volume(D(100), TIERS) == D("10.00") and volume(D(101), TIERS) == D("5.05")


@pytest.mark.parametrize("quantity, expected", [
    ("0", "50"),          # the pool price is billed even with no usage
    ("60", "50"),
    ("100", "50"),        # exactly the pool
    ("100.5", "50.375"),  # 50 + 0.5 x 0.75
    ("130", "72.50"),     # 50 + 30 x 0.75
])
def test_credit_pool_bills_the_pool_price_plus_overage_beyond_the_pool(quantity, expected):
    assert credit_pool(D(quantity), POOL) == D(expected)


@pytest.mark.parametrize("terms, quantity, expected", [
    (usage_terms("flat", rate="0.25", minimum="100"), "40", "25.00"),
    (usage_terms("flat", rate="0.25", minimum="100"), "120", "30.00"),
    (usage_terms("flat", rate="2", minimum="2.5"), "1", "5"),
    (usage_terms("graduated", tiers=TIERS, minimum="150"), "10", "12.50"),
    (usage_terms("volume", tiers=TIERS, minimum="100"), "10", "10.00"),
    (usage_terms("volume", tiers=TIERS, minimum="150"), "10", "7.50"),  # raised into the cheaper tier
    (usage_terms("credit_pool", tiers=POOL, minimum="120"), "0", "65.00"),  # 50 + 20 x 0.75
    (usage_terms("credit_pool", tiers=POOL, minimum="120"), "130", "72.50"),
])
def test_minimum_commitment_raises_the_quantity_before_the_tiers(terms, quantity, expected):
    assert price_quantity(D(quantity), terms) == D(expected)


@pytest.mark.parametrize("terms, quantity, expected", [
    (usage_terms("flat", tiers=TIERS), "150", "15.00"),                # flat without rate: first tier's rate
    (usage_terms("flat", rate="0.2", tiers=TIERS), "150", "30.0"),     # the rate wins over tiers
    (usage_terms("graduated", rate="0.3"), "150", "45.0"),             # no tiers: rate per unit
    (usage_terms("volume", rate="0.3"), "150", "45.0"),
    (usage_terms("graduated", tiers=[{"lower": "0", "upper": "100", "rate": "0.10"},
                                     {"lower": "100", "upper": "200", "rate": "0.05"}]), "300", "20.00"),
    (usage_terms("volume", tiers=[{"lower": 0, "upper": 100, "rate": "0.10"},
                                  {"lower": 100, "upper": 200, "rate": "0.05"}]), "300", "15.00"),
])
def test_strategy_terms_resolve_the_spec_fallbacks(terms, quantity, expected):
    """`rate` is used for flat or when there are no tiers; units above a closed last tier bill at its rate."""
    assert price_quantity(D(quantity), terms) == D(expected)


@pytest.mark.parametrize("values, error", [
    ({"charge_type": "usage", "pricing_model": "flat"}, ValueError),
    ({"charge_type": "usage", "pricing_model": "graduated"}, ValueError),
    ({"charge_type": "usage", "pricing_model": None, "rate": "1"}, ValueError),
    ({"charge_type": "usage", "pricing_model": "tiered", "rate": "1"}, ValueError),
    ({"charge_type": "seat_based", "rate": "1"}, ValueError),
    ({"charge_type": "recurring"}, ValueError),
    ({"charge_type": "refund", "rate": "1"}, ValueError),
    ({"charge_type": "recurring", "rate": "1", "billing_frequency": "weekly"}, ValueError),
    ({"charge_type": "recurring", "rate": "-1"}, ValueError),
    ({"charge_type": "recurring", "rate": "ten"}, ValueError),
    ({"charge_type": "recurring", "rate": 0.1}, TypeError),
    ({"charge_type": "usage", "pricing_model": "flat", "rate": "1", "minimum_commitment": "-5"}, ValueError),
    ({"charge_type": "usage", "pricing_model": "volume",
      "tiers": [{"lower": 0, "upper": 100, "rate": 1}, {"lower": 120, "upper": None, "rate": 1}]}, ValueError),
    ({"charge_type": "usage", "pricing_model": "volume", "tiers": [{"lower": 5, "upper": None, "rate": 1}]},
     ValueError),
    ({"charge_type": "usage", "pricing_model": "credit_pool", "tiers": [{"lower": 0, "upper": 100, "rate": 50}]},
     ValueError),
    ({"charge_type": "usage", "pricing_model": "credit_pool", "rate": "50"}, ValueError),
])
def test_terms_that_cannot_be_priced_are_refused(values, error):
    with pytest.raises(error):
        StrategyTerms.from_values(**values)


@pytest.mark.parametrize("model, tiers, expected", [
    ("graduated", TIERS, []),
    ("credit_pool", POOL, []),
    ("graduated", (Tier(D(0), D(100), D(1)), Tier(D(120), None, D(1))),
     ["tiers[1].lower: Must be 100 (tiers are contiguous from 0)."]),
    ("graduated", (Tier(D(0), None, D(1)), Tier(D(100), None, D(1))),
     ["tiers[0].upper: Only the last tier may be open-ended."]),
    ("volume", (Tier(D(0), D(0), D(-1)),),
     ["tiers[0].rate: Must not be negative.", "tiers[0].upper: Must be greater than lower."]),
    ("credit_pool", (Tier(D(0), None, D(50)),),
     ["tiers: A credit pool has two tiers: the pool [0, pool size] and the overage [pool size, null]."]),
])
def test_tier_errors_name_the_offending_field(model, tiers, expected):
    assert tier_errors(model, tiers) == expected


def test_agent_earned_is_the_model_on_actual_usage_without_commitments():
    assert agent_earned(D(40), usage_terms("flat", rate="0.25", minimum="100")) == D("10.00")
    assert agent_earned(D(150), usage_terms("graduated", tiers=TIERS, minimum="500")) == D("12.50")
    assert agent_earned(D(130), usage_terms("credit_pool", tiers=POOL)) == D("72.50")
    assert agent_earned(D(0), usage_terms("credit_pool", tiers=POOL)) == D(0)


# --------------------------------------------------------------------------- billing frequency

@pytest.mark.parametrize("fee, frequency, cycle, period_days, expected", [
    ("49", "monthly", "monthly", 31, "49.00"),
    ("49", "monthly", "monthly", 28, "49.00"),
    ("1200", "yearly", "monthly", 31, "100.00"),   # a twelfth per monthly period, whatever its length
    ("1000", "yearly", "monthly", 30, "83.33"),
    ("49", "monthly", "yearly", 365, "588.00"),    # x12 on a yearly cycle
    ("1200", "yearly", "yearly", 366, "1200.00"),
    ("365", "monthly", "custom", 7, "84.00"),      # 365 x 12 / 365 per day x 7 days
    ("365", "yearly", "custom", 10, "10.00"),      # 1/365 of the yearly fee per day
    ("100", "monthly", "custom", 30, "98.63"),     # 1200 x 30 / 365
])
def test_fee_for_period_converts_billing_frequency_to_the_cycle(fee, frequency, cycle, period_days, expected):
    amount = fee_for_period(D(fee), frequency=frequency, billing_cycle=cycle, period_days=period_days)
    assert to_cents(amount) == D(expected)


# --------------------------------------------------------------------------- recurring fees and proration

@pytest.mark.parametrize("fee, period, start, expected", [
    ("56", FEB_2025, date(2025, 2, 15), "28.00"),                                       # 14 of 28 days
    ("58", DaySpan(date(2024, 2, 1), date(2024, 3, 1)), date(2024, 2, 15), "30.00"),     # 15 of 29
    ("60", DaySpan(date(2025, 4, 1), date(2025, 5, 1)), date(2025, 4, 21), "20.00"),     # 10 of 30
    ("62", JAN_2025, date(2025, 1, 22), "20.00"),                                       # 10 of 31
    ("49", JAN_2025, date(2025, 1, 17), "23.71"),                                       # 49 x 15 / 31
    ("62", JAN_2025, date(2024, 12, 1), "62.00"),                                       # covered whole
    ("62", JAN_2025, date(2025, 1, 1), "62.00"),                                        # starts at the edge
])
def test_recurring_fee_is_prorated_by_calendar_days_when_the_subscription_starts_inside(fee, period, start,
                                                                                         expected):
    line = strategy_line(fee_terms("recurring", fee), subscription=since(start), period=period)
    assert to_cents(line.amount) == D(expected)


@pytest.mark.parametrize("start, end, expected_days, expected", [
    (date(2024, 6, 1), date(2025, 1, 11), (10, 31), "20.00"),   # ends inside: Jan 1-10 covered
    (date(2025, 1, 5), date(2025, 1, 15), (10, 31), "20.00"),   # starts and ends inside
    (date(2024, 6, 1), date(2025, 2, 1), None, "62.00"),        # ends at the period's end: whole
])
def test_recurring_fee_is_prorated_when_the_subscription_ends_inside(start, end, expected_days, expected):
    line = strategy_line(fee_terms("recurring", "62"), subscription=since(start, end=end), period=JAN_2025)
    assert (line.prorated_days, to_cents(line.amount)) == (expected_days, D(expected))


@pytest.mark.parametrize("terms, cycle, period, start, expected", [
    (fee_terms("recurring", "1200", "yearly"), "monthly", JAN_2025, date(2025, 1, 22), "32.26"),  # 100 x 10/31
    (fee_terms("recurring", "49", "monthly"), "yearly", DaySpan(date(2025, 1, 1), date(2026, 1, 1)),
     date(2025, 1, 1), "588.00"),
    (fee_terms("recurring", "365", "yearly"), "yearly", DaySpan(date(2025, 1, 1), date(2026, 1, 1)),
     date(2025, 12, 22), "10.00"),                                                                 # 10 of 365
    (fee_terms("recurring", "365", "yearly"), "custom", DaySpan(date(2025, 1, 1), date(2025, 1, 11)),
     date(2025, 1, 6), "5.00"),                                                                    # 5 of 10 days
])
def test_recurring_fee_converts_frequency_then_prorates(terms, cycle, period, start, expected):
    line = strategy_line(terms, subscription=since(start, billing_cycle=cycle), period=period)
    assert to_cents(line.amount) == D(expected)


def prorate(fee, *, covered, period_days):
    return fee_for_period(fee, frequency="monthly", billing_cycle="monthly", period_days=period_days, covered=covered)


def test_prorate_bills_the_whole_fee_for_a_whole_period_and_a_share_otherwise():
    assert prorate(D(62), covered=31, period_days=31) == D(62)
    assert prorate(D(62), covered=10, period_days=31) == D(20)
    assert prorate(D(62), covered=0, period_days=31) == D(0)


@pytest.mark.parametrize("fee, frequency, cycle, covered, period_days, expected", [
    ("121", "yearly", "monthly", 9, 30, "3.03"),      # 121 x 9 / 360 = 3.025 exactly: half up
    ("121.00", "yearly", "monthly", 9, 30, "3.03"),
    ("3", "monthly", "yearly", 1, 200, "0.18"),       # 36 x 1 / 200 = 0.18
    ("365", "yearly", "custom", 3, 8, "3.00"),        # a custom period's fee: 8 days of 1/365, then 3 of 8
])
def test_a_fee_converted_then_prorated_keeps_an_exact_half_cent(fee, frequency, cycle, covered, period_days, expected):
    # The twelfth first (121 / 12 = 10.0833...) then 9 / 30 gave 3.0249999..., which rounded to 3.02.
    amount = fee_for_period(D(fee), frequency=frequency, billing_cycle=cycle, period_days=period_days, covered=covered)
    assert to_cents(amount) == D(expected)


# --------------------------------------------------------------------------- timezones

def test_days_are_counted_in_the_subscriptions_timezone():
    # 2025-03-01 03:00Z is still February 28 in Los Angeles: one day of February is covered.
    in_los_angeles = SubscriptionTerms.from_values(start_date=datetime(2025, 3, 1, 3, tzinfo=UTC),
                                                   timezone="America/Los_Angeles")
    february_la = DaySpan.from_instants(datetime(2025, 2, 1, 8, tzinfo=UTC), datetime(2025, 3, 1, 8, tzinfo=UTC),
                                       "America/Los_Angeles")
    assert (in_los_angeles.start, february_la) == (date(2025, 2, 28), FEB_2025)
    line = strategy_line(fee_terms("recurring", "56"), subscription=in_los_angeles, period=february_la)
    assert (line.prorated_days, line.amount) == ((1, 28), D(2))
    in_utc = SubscriptionTerms.from_values(start_date=datetime(2025, 3, 1, 3, tzinfo=UTC), timezone="UTC")
    assert covered_days(in_utc, FEB_2025) == 0


def test_a_month_with_a_daylight_saving_change_still_has_its_calendar_days():
    # March 2025 in New York is 743 hours long (clocks spring forward on the 9th) but 31 days.
    march_ny = DaySpan.from_instants(datetime(2025, 3, 1, 5, tzinfo=UTC), datetime(2025, 4, 1, 4, tzinfo=UTC),
                                    "America/New_York")
    subscription = SubscriptionTerms.from_values(start_date=datetime(2025, 3, 22, 4, tzinfo=UTC),
                                                 timezone="America/New_York")
    line = strategy_line(fee_terms("recurring", "62"), subscription=subscription, period=march_ny)
    assert (march_ny.days, line.prorated_days, line.amount) == (31, (10, 31), D(20))


def test_a_start_late_in_the_utc_day_belongs_to_the_next_local_day_east_of_utc():
    tokyo = SubscriptionTerms.from_values(start_date=datetime(2025, 1, 31, 16, tzinfo=UTC), timezone="Asia/Tokyo")
    assert tokyo.start == date(2025, 2, 1)
    assert tokyo.starts_in(FEB_2025) and not tokyo.starts_in(JAN_2025)


def test_end_date_is_exclusive_a_day_it_reaches_into_is_covered_and_is_forever_ignores_it():
    ending_midday = SubscriptionTerms.from_values(start_date=datetime(2024, 6, 1, tzinfo=UTC),
                                                  end_date=datetime(2025, 1, 10, 12, tzinfo=UTC))
    ending_at_midnight = SubscriptionTerms.from_values(start_date=datetime(2024, 6, 1, tzinfo=UTC),
                                                       end_date=datetime(2025, 1, 10, tzinfo=UTC))
    # Midnight in New York is 05:00 UTC: an end at 05:00 UTC covers nothing of the 10th there.
    ending_at_local_midnight = SubscriptionTerms.from_values(start_date=datetime(2024, 6, 1, tzinfo=UTC),
                                                             end_date=datetime(2025, 1, 10, 5, tzinfo=UTC),
                                                             timezone="America/New_York")
    forever = SubscriptionTerms.from_values(start_date=datetime(2024, 6, 1, tzinfo=UTC),
                                            end_date=datetime(2025, 1, 10, 12, tzinfo=UTC), is_forever=True)
    assert (ending_midday.end, covered_days(ending_midday, JAN_2025)) == (date(2025, 1, 11), 10)
    assert (ending_at_midnight.end, covered_days(ending_at_midnight, JAN_2025)) == (date(2025, 1, 10), 9)
    assert ending_at_local_midnight.end == date(2025, 1, 10)
    assert (forever.end, covered_days(forever, JAN_2025)) == (None, 31)


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError):
        SubscriptionTerms.from_values(start_date=datetime(2025, 1, 1))


# --------------------------------------------------------------------------- seats, one-time, usage lines

SEAT_TIERS = [{"lower": 0, "upper": 5, "rate": 10}, {"lower": 5, "upper": None, "rate": 8}]  # plain values


@pytest.mark.parametrize("terms, seats, start, expected_quantity, expected", [
    (seat_terms("10", minimum="5"), 3, date(2025, 1, 1), "5", "50.00"),      # max(3, 5) x 10
    (seat_terms("10", minimum="5"), 7, date(2025, 1, 1), "7", "70.00"),
    (seat_terms("10"), 0, date(2025, 1, 1), "0", "0.00"),
    (seat_terms(model="graduated", tiers=SEAT_TIERS), 8, date(2025, 1, 1), "8", "74.00"),  # 5 x 10 + 3 x 8
    (seat_terms(model="volume", tiers=SEAT_TIERS), 8, date(2025, 1, 1), "8", "64.00"),
    (seat_terms("120", minimum="5", frequency="yearly"), 2, date(2025, 1, 1), "5", "50.00"),  # 5 x 120 / 12
    (seat_terms("12.4"), 5, date(2025, 1, 22), "5", "20.00"),                # 62 x 10/31
])
def test_seat_based_prices_max_of_seats_and_minimum_through_its_model(terms, seats, start, expected_quantity,
                                                                       expected):
    line = strategy_line(terms, subscription=since(start, seats_count=D(seats)), period=JAN_2025)
    assert (line.quantity, to_cents(line.amount)) == (D(expected_quantity), D(expected))


def test_onetime_fee_lands_whole_on_the_first_period_only():
    setup = fee_terms("onetime", "100")
    started_inside = since(date(2025, 1, 22))
    assert strategy_line(setup, subscription=started_inside, period=JAN_2025).amount == D(100)
    assert strategy_line(setup, subscription=started_inside, period=FEB_2025) is None
    assert strategy_line(setup, subscription=since(date(2024, 12, 1)), period=JAN_2025) is None


@pytest.mark.parametrize("terms, quantity, expected_quantity, expected", [
    (usage_terms("flat", rate="0.25"), "40", "40", "10.00"),
    (usage_terms("credit_pool", tiers=POOL), "0", "0", "50"),
    (usage_terms("flat", rate="0.25", minimum="100"), "40", "100", "25.00"),
])
def test_usage_is_never_prorated(terms, quantity, expected_quantity, expected):
    line = strategy_line(terms, subscription=since(date(2025, 1, 22)), period=JAN_2025, quantity=D(quantity))
    assert (line.quantity, line.amount, line.prorated_days) == (D(expected_quantity), D(expected), None)


# --------------------------------------------------------------------------- a whole period

PLAN = (
    fee_terms("recurring", "49", strategy_id="base"),
    fee_terms("onetime", "100", strategy_id="setup"),
    usage_terms("flat", rate="0.25", strategy_id="calls"),
    seat_terms("10", minimum="5", strategy_id="seats"),
)


def summary(lines: list[Line]):
    return [(line.charge_type, line.strategy_id, to_cents(line.amount)) for line in lines]


def test_period_lines_charge_every_strategy_and_the_onetime_fee_only_first():
    subscription = since(date(2025, 1, 1), seats_count=D(3))
    january = period_lines(PLAN, subscription=subscription, period=JAN_2025, usage={"calls": D(40)})
    february = period_lines(PLAN, subscription=subscription, period=FEB_2025, usage={})
    assert summary(january) == [("recurring", "base", D("49.00")), ("onetime", "setup", D("100.00")),
                                ("usage", "calls", D("10.00")), ("seat_based", "seats", D("50.00"))]
    assert summary(february) == [("recurring", "base", D("49.00")), ("usage", "calls", D("0.00")),
                                 ("seat_based", "seats", D("50.00"))]


def test_prorated_amount_replaces_the_prorated_fees_of_a_partial_first_period():
    subscription = since(date(2025, 1, 22), seats_count=D(3), prorated_amount=D(30))
    lines = period_lines(PLAN, subscription=subscription, period=JAN_2025, usage={"calls": D(40)})
    assert summary(lines) == [("prorated", None, D("30.00")), ("onetime", "setup", D("100.00")),
                              ("usage", "calls", D("10.00"))]
    assert lines[0].prorated_days == (10, 31)


@pytest.mark.parametrize("start, period, strategies", [
    (date(2025, 1, 22), FEB_2025, PLAN),                   # a later period
    (date(2025, 1, 1), JAN_2025, PLAN),                    # a first period covered whole
    (date(2025, 1, 22), JAN_2025, PLAN[1:3]),              # no recurring or seat fee to replace
])
def test_prorated_amount_is_ignored_where_nothing_is_prorated_on_a_first_period(start, period, strategies):
    with_amount = period_lines(strategies, subscription=since(start, seats_count=D(3), prorated_amount=D(30)),
                               period=period, usage={})
    without = period_lines(strategies, subscription=since(start, seats_count=D(3)), period=period, usage={})
    assert with_amount == without and all(line.charge_type != "prorated" for line in with_amount)


# --------------------------------------------------------------------------- rounding and totals

@pytest.mark.parametrize("amount, expected", [
    ("0.005", "0.01"), ("2.675", "2.68"), ("2.665", "2.67"), ("0.125", "0.13"),
    ("0.0049999", "0.00"), ("1.004", "1.00"), ("23.70967741935483870967741935", "23.71"),
])
def test_lines_round_to_cents_half_up(amount, expected):
    assert str(to_cents(D(amount))) == expected


@pytest.mark.parametrize("lines, discount, tax_percent, expected", [
    # Each line rounds first: 10.01 + 2.68 + 0.00 = 12.69 (rounding the sum 12.684 would give 12.68).
    (["10.005", "2.675", "0.004"], None, "0", ("12.69", "0.00", "0.00", "12.69")),
    # 10% of 12.69 = 1.269 -> 1.27; tax 8.25% of 11.42 = 0.94215 -> 0.94.
    (["10.005", "2.675", "0.004"], Discount(percent=D(10)), "8.25", ("12.69", "1.27", "0.94", "12.36")),
    # 1.269 + 5 = 6.269 -> 6.27; tax 8.25% of 6.42 = 0.52965 -> 0.53.
    (["10.005", "2.675", "0.004"], Discount(percent=D(10), amount=D(5)), "8.25", ("12.69", "6.27", "0.53", "6.95")),
    # A discount never exceeds the subtotal.
    (["10.005", "2.675"], Discount(amount=D(100)), "20", ("12.69", "12.69", "0.00", "0.00")),
    (["49.995"], None, "20", ("50.00", "0.00", "10.00", "60.00")),
    ([], None, "20", ("0", "0.00", "0.00", "0.00")),
])
def test_invoice_totals_are_the_sum_of_rounded_lines_minus_discount_plus_tax(lines, discount, tax_percent,
                                                                             expected):
    totals = invoice_totals([D(line) for line in lines], discount=discount, tax_percent=D(tax_percent))
    assert (totals.subtotal, totals.discount, totals.tax, totals.total) == tuple(D(value) for value in expected)


# --------------------------------------------------------------------------- properties

PROPERTY = settings(max_examples=300, deadline=None, database=None)
quantities = st.decimals(min_value=0, max_value=20000, places=4)
rates = st.decimals(min_value=0, max_value=100, places=4)


@st.composite
def tier_lists(draw, rate_order=None):
    """Contiguous tiers from 0 with an open last tier; rates optionally sorted ('descending', 'ascending')."""
    uppers = sorted(set(draw(st.lists(st.decimals(min_value="0.01", max_value=10000, places=2), max_size=4))))
    tier_rates = draw(st.lists(rates, min_size=len(uppers) + 1, max_size=len(uppers) + 1))
    if rate_order:
        tier_rates = sorted(tier_rates, reverse=rate_order == "descending")
    lowers = [D(0), *uppers]
    return tuple(Tier(lower, upper, rate) for lower, upper, rate in zip(lowers, [*uppers, None], tier_rates))


@st.composite
def pools(draw):
    pool_size = draw(st.decimals(min_value="0.01", max_value=10000, places=2))
    return Tier(D(0), pool_size, draw(rates)), Tier(pool_size, None, draw(rates))


@PROPERTY
@given(tiers=tier_lists("descending"), quantity=quantities)
def test_with_non_increasing_rates_graduated_lies_between_volume_and_the_first_tier_rate(tiers, quantity):
    assert volume(quantity, tiers) <= graduated(quantity, tiers) <= quantity * tiers[0].rate


@PROPERTY
@given(tiers=tier_lists(), pool=pools(), rate=rates, minimum=quantities, a=quantities, b=quantities)
def test_flat_graduated_and_credit_pool_never_decrease_as_quantity_grows(tiers, pool, rate, minimum, a, b):
    low, high = sorted((a, b))
    assert flat(low, rate) <= flat(high, rate)
    assert graduated(low, tiers) <= graduated(high, tiers)
    assert credit_pool(low, pool) <= credit_pool(high, pool)
    committed = StrategyTerms("usage", "graduated", None, tiers, minimum, "monthly")
    assert price_quantity(low, committed) <= price_quantity(high, committed)


@PROPERTY
@given(tiers=tier_lists("ascending"), a=quantities, b=quantities)
def test_volume_never_decreases_as_quantity_grows_when_rates_do_not_decrease(tiers, a, b):
    low, high = sorted((a, b))
    assert volume(low, tiers) <= volume(high, tiers)


@PROPERTY
@given(fee=rates, period_days=st.integers(min_value=1, max_value=366), data=st.data())
def test_a_prorated_fee_grows_with_covered_days_up_to_the_whole_fee(fee, period_days, data):
    covered = data.draw(st.integers(min_value=0, max_value=period_days - 1))
    assert prorate(fee, covered=covered, period_days=period_days) <= prorate(fee, covered=covered + 1,
                                                                           period_days=period_days)
    assert prorate(fee, covered=period_days, period_days=period_days) == fee


@PROPERTY
@given(fee=st.integers(min_value=1, max_value=300_000), frequency=st.sampled_from(["monthly", "yearly"]),
       cycle=st.sampled_from(["monthly", "yearly", "custom"]), period_days=st.integers(min_value=1, max_value=366),
       data=st.data())
def test_a_prorated_fee_is_the_exact_fraction_rounded_half_up(fee, frequency, cycle, period_days, data):
    covered = data.draw(st.integers(min_value=0, max_value=period_days))
    cents = D(fee) / 100
    per_year = Fraction(cents) * 12 / {"monthly": 1, "yearly": 12}[frequency]
    whole = per_year * period_days / 365 if cycle == "custom" else per_year * {"monthly": 1, "yearly": 12}[cycle] / 12
    exact = whole * covered / period_days
    amount = fee_for_period(cents, frequency=frequency, billing_cycle=cycle, period_days=period_days, covered=covered)
    assert to_cents(amount) == half_up_cents(exact)


@PROPERTY
@given(monthly_fee=rates, cycle=st.sampled_from(["monthly", "yearly", "custom"]),
       period_days=st.integers(min_value=1, max_value=366))
def test_a_yearly_fee_bills_the_same_as_twelve_times_the_monthly_fee(monthly_fee, cycle, period_days):
    assert fee_for_period(monthly_fee * 12, frequency="yearly", billing_cycle=cycle, period_days=period_days) \
        == fee_for_period(monthly_fee, frequency="monthly", billing_cycle=cycle, period_days=period_days)


@PROPERTY
@given(lines=st.lists(st.decimals(min_value=0, max_value=100000, places=6), max_size=12),
       percent=st.decimals(min_value=0, max_value=100, places=2),
       fixed=st.decimals(min_value=0, max_value=1000, places=2),
       tax_percent=st.decimals(min_value=0, max_value=30, places=3))
def test_invoice_totals_equal_the_sum_of_rounded_lines_minus_discount_plus_tax(lines, percent, fixed, tax_percent):
    totals = invoice_totals(lines, discount=Discount(percent=percent, amount=fixed), tax_percent=tax_percent)
    assert totals.subtotal == sum((to_cents(line) for line in lines), D(0))
    assert totals.total == totals.subtotal - totals.discount + totals.tax
    assert 0 <= totals.discount <= totals.subtotal and totals.tax >= 0 and totals.total >= 0
    cents = D("0.01")
    assert all(amount == amount.quantize(cents) for amount in (totals.subtotal, totals.discount, totals.tax,
                                                               totals.total))


# --------------------------------------------------------------------------- the two sides of a plan change

# January 2025 split on the 11th: the old side covers the 1st-10th (10 of 31 days), the new side the 11th-31st.
OLD_SIDE = SubscriptionTerms(start=date(2024, 12, 1), end=date(2025, 1, 11), ends_by_change=True)
NEW_SIDE = SubscriptionTerms(start=date(2025, 1, 11), starts_by_change=True)


@pytest.mark.parametrize("side, quantity, expected_quantity, expected_amount, days", [
    # pool 100 x 10/31 units for 50 x 10/31; 40 used: 40 - 1000/31 = 240/31 beyond x 0.75 = 180/31.
    (OLD_SIDE, "40", "40", D(500) / 31 + D(180) / 31, (10, 31)),
    (OLD_SIDE, "0", "0", D(500) / 31, (10, 31)),
    # 100 x 21/31 units for 50 x 21/31; 50 used, within the share (2100/31 = 67.7...).
    (NEW_SIDE, "50", "50", D(1050) / 31, (21, 31)),
])
def test_a_credit_pool_is_prorated_in_units_and_price_on_each_side_of_a_change(side, quantity, expected_quantity,
                                                                               expected_amount, days):
    line = strategy_line(usage_terms("credit_pool", tiers=POOL), subscription=side, period=JAN_2025,
                         quantity=D(quantity))
    assert (line.quantity, line.prorated_days) == (D(expected_quantity), days)
    # The engine keeps more digits than the default context the expectation is written in: equal to 25 places.
    assert abs(line.amount - expected_amount) < D("1e-25")


def test_a_prorated_pool_keeps_an_exact_half_cent():
    # June 2025 split on the 3rd: the old side covers 2 of 30 days. Pool 1,000 units for 60.00, then 0.30 each;
    # 400.05 used: 60 x 2/30 = 4.00, (400.05 - 2000/30) x 0.30 = 100.015: 104.015 exactly, 104.02 half up. The
    # prorated units taken first (66.666...) left 104.01499...9, rounded down to 104.01.
    june = DaySpan(date(2025, 6, 1), date(2025, 7, 1))
    old_side = SubscriptionTerms(start=date(2025, 5, 1), end=date(2025, 6, 3), ends_by_change=True)
    pool = (Tier(D(0), D(1000), D(60)), Tier(D(1000), None, D("0.30")))
    line = strategy_line(usage_terms("credit_pool", tiers=pool), subscription=old_side, period=june,
                         quantity=D("400.05"))
    assert (line.amount, to_cents(line.amount), line.prorated_days) == (D("104.015"), D("104.02"), (2, 30))


@PROPERTY
@given(units=st.integers(min_value=1, max_value=100_000), price=st.integers(min_value=0, max_value=1_000_000),
       overage=st.integers(min_value=0, max_value=10_000), used=st.integers(min_value=0, max_value=10_000_000),
       period_days=st.integers(min_value=28, max_value=31), data=st.data())
def test_a_prorated_pool_is_the_exact_fraction_rounded_half_up(units, price, overage, used, period_days, data):
    covered = data.draw(st.integers(min_value=0, max_value=period_days - 1))
    price_, overage_, used_ = D(price) / 100, D(overage) / 1000, D(used) / 100
    exact = (Fraction(price_) * covered / period_days
             + max(Fraction(used_) - Fraction(units) * covered / period_days, Fraction(0)) * Fraction(overage_))
    period = DaySpan(date(2025, 1, 1), date(2025, 1, 1) + timedelta(days=period_days))
    side = SubscriptionTerms(start=date(2024, 12, 1), end=date(2025, 1, 1) + timedelta(days=covered),
                             ends_by_change=True)
    pool = (Tier(D(0), D(units), price_), Tier(D(units), None, overage_))
    line = strategy_line(usage_terms("credit_pool", tiers=pool), subscription=side, period=period, quantity=used_)
    assert to_cents(line.amount) == half_up_cents(exact)


def test_a_change_at_a_period_boundary_bills_the_pool_whole_and_never_the_new_plans_one_time_fee():
    new_side = SubscriptionTerms(start=date(2025, 2, 1), starts_by_change=True)
    pool = strategy_line(usage_terms("credit_pool", tiers=POOL), subscription=new_side, period=FEB_2025,
                         quantity=D(120))
    assert (pool.amount, pool.prorated_days) == (D(50) + 20 * D("0.75"), None)
    assert strategy_line(fee_terms("onetime", "100"), subscription=new_side, period=FEB_2025) is None
    assert strategy_line(fee_terms("onetime", "100"), subscription=NEW_SIDE, period=JAN_2025) is None


def test_the_two_sides_fees_add_up_to_each_plans_fee_by_its_days():
    old_fee = strategy_line(fee_terms("recurring", "31"), subscription=OLD_SIDE, period=JAN_2025)
    new_fee = strategy_line(fee_terms("recurring", "62"), subscription=NEW_SIDE, period=JAN_2025)
    assert (old_fee.amount, old_fee.prorated_days, new_fee.amount, new_fee.prorated_days) == (
        D(10), (10, 31), D(42), (21, 31))
