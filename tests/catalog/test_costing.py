"""The cost engine (catalog/costing.py): pure rules, table-driven, hand-computed."""
from datetime import datetime, time, timezone
from decimal import ROUND_DOWN, localcontext
from decimal import Decimal as D

import pytest

from catalog.costing import (
    LongContextRates,
    OffPeakRates,
    OffPeakWindow,
    Rates,
    Usage,
    event_cost,
    event_total,
    missing_rates,
    service_cost,
)

GPT_4O = Rates("token", input=D("0.0000025"), output=D("0.00001"), cache_read=D("0.00000125"))
SONNET = Rates("token", input=D("0.000003"), output=D("0.000015"), cache_read=D("0.0000003"),
               cache_write=D("0.00000375"))
GEMINI_PRO = Rates("token", input=D("0.00000125"), output=D("0.00001"), cache_read=D("0.000000125"),
                   long_context=(LongContextRates(200_000, input=D("0.0000025"), output=D("0.000015"),
                                                  cache_read=D("0.00000025")),))
WHISPER = Rates("minute", input=D("0.006"))


@pytest.mark.parametrize("rates, usage, expected", [
    (GPT_4O, Usage(input_tokens=1000, output_tokens=500), "0.0075"),
    (GPT_4O, Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=2000), "0.01"),
    (SONNET, Usage(input_tokens=10_000, output_tokens=2000, cache_read_tokens=50_000, cache_write_tokens=4000),
     "0.09"),
    (SONNET, Usage(), "0"),
])
def test_llm_cost_is_each_token_kind_times_its_rate(rates, usage, expected):
    assert event_cost([(rates, usage)]) == D(expected)


@pytest.mark.parametrize("usage, expected", [
    (Usage(input_tokens=100_000, output_tokens=10_000), "0.225"),          # base rates
    (Usage(input_tokens=200_000, output_tokens=10_000), "0.35"),           # exactly at the threshold: base
    (Usage(input_tokens=200_001, output_tokens=10_000), "0.6500025"),      # above: every token at long rates
    (Usage(input_tokens=150_000, cache_read_tokens=60_000, output_tokens=1000), "0.405"),  # cache counts in prompt
])
def test_long_context_rates_apply_to_the_whole_request_above_the_threshold(usage, expected):
    assert event_cost([(GEMINI_PRO, usage)]) == D(expected)


def test_long_context_without_an_above_rate_keeps_the_base_rate_for_that_kind():
    rates = Rates("token", input=D("0.000001"), output=D("0.000002"), cache_write=D("0.000004"),
                  long_context=(LongContextRates(1000, input=D("0.00001")),))
    usage = Usage(input_tokens=2000, output_tokens=100, cache_write_tokens=10)
    assert event_cost([(rates, usage)]) == D("0.02") + D("0.0002") + D("0.00004")


@pytest.mark.parametrize("usage, expected", [
    (Usage(input_tokens=1000, cache_write_tokens=7000), "0.02"),           # gpt-4o publishes no cache-write rate
    (Usage(output_tokens=100, cache_write_tokens=4000), "0.011"),
])
def test_cache_tokens_without_a_published_rate_bill_at_the_input_rate(usage, expected):
    assert event_cost([(GPT_4O, usage)]) == D(expected)
    assert missing_rates(GPT_4O, usage) == []


def test_cache_tokens_above_the_threshold_without_any_cache_rate_bill_at_the_long_context_input_rate():
    rates = Rates("token", input=D("0.000001"), output=D("0.000002"),
                  long_context=(LongContextRates(1000, input=D("0.00001")),))
    usage = Usage(input_tokens=500, cache_read_tokens=600, cache_write_tokens=100)
    assert event_cost([(rates, usage)]) == D("0.012")  # 1200 prompt tokens, all at 0.00001


@pytest.mark.parametrize("rates, usage, missing", [
    (Rates("token", input=D("0.000001")), Usage(input_tokens=1, output_tokens=1), ["output"]),
    (Rates("token", output=D("0.000001")), Usage(input_tokens=1, cache_read_tokens=2), ["input", "cache read"]),
    (Rates("minute"), Usage(quantity=D(2)), ["unit"]),
])
def test_positive_tokens_without_any_rate_make_the_cost_unresolvable_and_say_which(rates, usage, missing):
    assert service_cost(rates, usage) is None
    assert event_cost([(rates, usage)]) is None
    assert missing_rates(rates, usage) == missing


def test_omitted_cache_tokens_cost_nothing_and_need_no_rate():
    input_only = Rates("token", input=D("0.000001"))
    assert event_cost([(input_only, Usage(input_tokens=1000))]) == D("0.001")


@pytest.mark.parametrize("quantity, expected", [
    ("1", "0.006"), ("12.5", "0.075"), ("0.333333333333", "0.002"), ("0", "0"), ("1000000", "6000"),
])
def test_non_llm_cost_is_quantity_times_unit_rate_with_fractions_kept(quantity, expected):
    assert event_cost([(WHISPER, Usage(quantity=D(quantity)))]) == D(expected)


def test_non_llm_cost_ignores_token_counts():
    assert event_cost([(WHISPER, Usage(input_tokens=10_000, quantity=D("2")))]) == D("0.012")


def test_fractional_cost_is_kept_to_twelve_places_and_rounded_half_up_only_there():
    per_character = Rates("character", input=D("0.000015"))
    # 0.0000003 characters x 0.000015 = 4.5e-12 -> 0.000000000005 (half-up at the 12th place)
    assert event_cost([(per_character, Usage(quantity=D("0.0000003")))]) == D("0.000000000005")
    assert service_cost(per_character, Usage(quantity=D("0.0000003"))) == D("0.0000000000045")


def test_large_quantities_keep_every_digit():
    rate = Rates("request", input=D("0.987654321098"))
    # 123456789.123456789012 x 0.987654321098 = 121932631.246666665458585886175176
    assert event_cost([(rate, Usage(quantity=D("123456789.123456789012")))]) == D("121932631.246666665459")


def test_costs_do_not_depend_on_the_callers_decimal_context():
    rate = Rates("request", input=D("0.987654321098"))
    usage = Usage(quantity=D("123456789.123456789012"))
    with localcontext() as narrow:
        narrow.prec, narrow.rounding = 6, ROUND_DOWN
        assert event_cost([(rate, usage)]) == D("121932631.246666665459")
        assert service_cost(GPT_4O, Usage(input_tokens=2**62)) == D("11529215046068.46976")  # 2**62 x 0.0000025


def test_multi_service_event_costs_the_sum_of_its_services():
    parts = [(GPT_4O, Usage(input_tokens=1000, output_tokens=500)), (WHISPER, Usage(quantity=D("3")))]
    assert event_cost(parts) == D("0.0075") + D("0.018")


def test_an_event_total_from_part_costs_is_the_event_cost():
    per_character = Rates("character", input=D("0.000015"))
    parts = [(GPT_4O, Usage(input_tokens=1000, output_tokens=500)), (per_character, Usage(quantity=D("0.0000003"))),
             (per_character, Usage(quantity=D("0.0000003")))]
    # Two half-up candidates (4.5e-12 each) sum before the one rounding: 0.0075 + 9e-12, not 0.0075 + 1e-11.
    assert event_total(service_cost(rates, usage) for rates, usage in parts) == event_cost(parts) == D("0.007500000009")
    assert event_total([D("0.0075"), None]) is None


def test_one_unknown_service_makes_the_whole_event_unresolvable():
    parts = [(GPT_4O, Usage(input_tokens=1000)), (None, Usage(quantity=D(1)))]
    assert event_cost(parts) is None


def test_per_unit_service_without_a_rate_is_unresolvable():
    assert event_cost([(Rates("request"), Usage(quantity=D(2)))]) is None


# Off-peak windows (pure engine): UTC times of day [start, end), past midnight when start > end, all day when
# start == end, on the ISO weekdays named, read on the provider's calendar.
NIGHT_OWL = Rates("token", input=D("0.000002"), output=D("0.000004"), off_peak=OffPeakRates(
    windows=(OffPeakWindow(hours=((time(22, 0), time(2, 0)),), weekdays=frozenset({1, 2, 3, 4, 5})),
             OffPeakWindow(hours=((time(0, 0), time(0, 0)),), weekdays=frozenset({7}))),
    weekday_timezone="Asia/Shanghai", input=D("0.000001")))


@pytest.mark.parametrize("at, expected", [
    (datetime(2026, 1, 5, 21, 59, tzinfo=timezone.utc), "0.002"),   # Monday (Tuesday 05:59 in Shanghai): peak
    (datetime(2026, 1, 5, 22, 0, tzinfo=timezone.utc), "0.001"),    # the window opens at 22:00 UTC
    (datetime(2026, 1, 6, 1, 59, tzinfo=timezone.utc), "0.001"),    # ... runs past midnight
    (datetime(2026, 1, 6, 2, 0, tzinfo=timezone.utc), "0.002"),     # ... and closes at 02:00
    (datetime(2026, 1, 10, 23, 0, tzinfo=timezone.utc), "0.001"),   # Saturday UTC is Sunday in Shanghai: all day
    (datetime(2026, 1, 11, 23, 0, tzinfo=timezone.utc), "0.001"),   # Sunday 23:00 UTC is Monday there: 22-02
    (datetime(2026, 1, 9, 23, 0, tzinfo=timezone.utc), "0.002"),    # Friday 23:00 UTC is Saturday there: peak
    (datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc), "0.002"),   # Saturday 20:00 in Shanghai, no window
    (None, "0.002"),                                               # no instant: never off-peak
])
def test_off_peak_windows_by_instant_and_calendar(at, expected):
    assert event_cost([(NIGHT_OWL, Usage(input_tokens=1000, at=at))]) == D(expected)


def test_off_peak_cache_tokens_without_a_cache_rate_bill_at_the_off_peak_input_rate():
    usage = Usage(input_tokens=1000, cache_read_tokens=1000, at=datetime(2026, 1, 5, 23, 0, tzinfo=timezone.utc))
    assert event_cost([(NIGHT_OWL, usage)]) == D("0.002")


def test_off_peak_rates_replace_long_context_rates():
    rates = Rates("token", input=D("0.000001"), output=D("0.000002"),
                  long_context=(LongContextRates(100, input=D("0.00001"), output=D("0.00002")),),
                  off_peak=OffPeakRates(windows=(OffPeakWindow(hours=((time(0, 0), time(0, 0)),)),),
                                        input=D("0.0000005")))
    usage = Usage(input_tokens=1000, output_tokens=10, at=datetime(2026, 1, 5, tzinfo=timezone.utc))
    assert event_cost([(rates, usage)]) == D("0.0005") + D("0.0002")  # off-peak input; output keeps its tier


THREE_TIERS = Rates("token", input=D("0.000001"), output=D("0.000002"), cache_read=D("0.0000001"), long_context=(
    LongContextRates(1000, input=D("0.000002"), output=D("0.000004")),
    LongContextRates(5000, input=D("0.000003"), cache_read=D("0.0000003"))))


@pytest.mark.parametrize("inclusive, usage, expected", [
    (False, Usage(input_tokens=1000, output_tokens=10), "0.00102"),                # at the first threshold: base
    (True, Usage(input_tokens=1000, output_tokens=10), "0.00204"),                 # inclusive: the tier above
    (False, Usage(input_tokens=1001, output_tokens=10), "0.002042"),
    (False, Usage(input_tokens=4000, cache_read_tokens=1000, output_tokens=10), "0.00814"),  # 5000: tier 1
    (True, Usage(input_tokens=4000, cache_read_tokens=1000, output_tokens=10), "0.01234"),   # tier 2 from 5000
    (False, Usage(input_tokens=6000, cache_read_tokens=1000, output_tokens=10), "0.01834"),  # tier 2, output of 1
])
def test_several_thresholds_the_highest_crossed_applies_and_unpriced_kinds_keep_the_tier_below(
        inclusive, usage, expected):
    rates = Rates(**{**THREE_TIERS.__dict__, "threshold_inclusive": inclusive})
    assert event_cost([(rates, usage)]) == D(expected)


def test_rates_the_same_for_every_request_are_worked_out_once_and_only_when_nothing_can_change_them():
    """Rates without long-context tiers or off-peak windows cost every request at one set of rates, worked out once
    (`Rates.same_for_every_request`): a 1-hour cache write at the provider's multiple of the input rate, cache kinds
    without a rate at the input rate. Tiers or windows leave each request to its own rates."""
    anthropic = Rates("token", input=D("0.000003"), output=D("0.000015"), cache_write_1h_share_of_input=D(2))
    assert anthropic.same_for_every_request == (D("0.000003"), D("0.000015"), D("0.000003"), D("0.000003"),
                                                D("0.000006"))
    assert service_cost(anthropic, Usage(cache_write_1h_tokens=1_000_000, cache_read_tokens=1_000_000)) == D("9")
    assert GEMINI_PRO.same_for_every_request is None
    off_peak = Rates("token", input=D("0.000001"), output=D("0.000002"), off_peak=OffPeakRates(
        windows=(OffPeakWindow(hours=((time(16, 30), time(0, 30)),)),), input=D("0.0000005")))
    assert off_peak.same_for_every_request is None
    night, day = datetime(2026, 3, 1, 17, tzinfo=timezone.utc), datetime(2026, 3, 1, 12, tzinfo=timezone.utc)
    assert service_cost(off_peak, Usage(input_tokens=1_000_000, at=night)) == D("0.5")
    assert service_cost(off_peak, Usage(input_tokens=1_000_000, at=day)) == D("1")
