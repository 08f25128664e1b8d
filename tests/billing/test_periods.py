"""Billing periods (billing/pricing/periods.py): table-driven over month lengths, leap years, billing day 31,
yearly and custom cycles, non-UTC time zones and DST."""
from datetime import datetime, timedelta, timezone

import pytest

from billing.pricing.periods import (Period, Schedule, cycle_containing, first_period, is_valid_timezone, local_midnight,
                             next_period, period_as_of, period_containing)

UTC = timezone.utc


def at(text: str) -> datetime:
    """An aware instant from ISO text (no offset means UTC)."""
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def monthly(anchor, **kw):
    return Schedule(anchor=at(anchor), cycle="monthly", **kw)


@pytest.mark.parametrize("schedule, moment, cycle", [
    # month lengths: the cycle runs from one turn to the next
    (monthly("2025-01-01"), "2025-01-15", ("2025-01-01", "2025-02-01")),
    (monthly("2025-01-01"), "2025-02-28T23:59:59", ("2025-02-01", "2025-03-01")),
    (monthly("2025-01-01"), "2025-03-01", ("2025-03-01", "2025-04-01")),
    # billing day 31 clamps to each month's last day, and comes back to 31 where the month has one
    (monthly("2025-01-31"), "2025-02-10", ("2025-01-31", "2025-02-28")),
    (monthly("2025-01-31"), "2025-03-01", ("2025-02-28", "2025-03-31")),
    (monthly("2025-01-31"), "2025-04-30", ("2025-04-30", "2025-05-31")),
    (monthly("2025-01-31"), "2025-04-29", ("2025-03-31", "2025-04-30")),
    # leap years: February has 29 days in 2024, 28 in 2025
    (monthly("2024-01-31"), "2024-02-15", ("2024-01-31", "2024-02-29")),
    (monthly("2024-01-31"), "2024-03-01", ("2024-02-29", "2024-03-31")),
    (monthly("2025-01-30"), "2025-03-01", ("2025-02-28", "2025-03-30")),
    # an explicit billing day wins over the anchor's day; the grid extends before the anchor
    (monthly("2025-03-01", billing_day=15), "2025-03-01", ("2025-02-15", "2025-03-15")),
    (monthly("2025-03-01", billing_day=15), "2025-03-15", ("2025-03-15", "2025-04-15")),
    # yearly: the anchor's month, clamped on Feb 29
    (Schedule(anchor=at("2024-02-29"), cycle="yearly"), "2025-03-01", ("2025-02-28", "2026-02-28")),
    (Schedule(anchor=at("2024-02-29"), cycle="yearly"), "2028-03-01", ("2028-02-29", "2029-02-28")),
    (Schedule(anchor=at("2025-03-10"), cycle="yearly", billing_day=1), "2025-03-10", ("2025-03-01", "2026-03-01")),
    (Schedule(anchor=at("2025-03-10"), cycle="yearly"), "2026-03-09", ("2025-03-10", "2026-03-10")),
    # custom: every N local days from the anchor's local midnight
    (Schedule(anchor=at("2025-01-01"), cycle="custom", custom_cycle_days=10), "2025-01-25",
     ("2025-01-21", "2025-01-31")),
    (Schedule(anchor=at("2025-01-01T12:00"), cycle="custom", custom_cycle_days=7), "2025-01-01T13:00",
     ("2025-01-01", "2025-01-08")),
    (Schedule(anchor=at("2025-01-01"), cycle="custom", custom_cycle_days=45), "2025-03-01",
     ("2025-02-15", "2025-04-01")),
    # a non-UTC zone: boundaries at local midnight (Paris is UTC+1 in winter)
    (monthly("2025-01-01T00:00+01:00", timezone="Europe/Paris"), "2025-01-15",
     ("2024-12-31T23:00", "2025-01-31T23:00")),
    # DST: March in Berlin starts at +1 and ends at +2, so the cycle is one hour short of 31 days
    (monthly("2025-03-01T00:00+01:00", timezone="Europe/Berlin"), "2025-03-15",
     ("2025-02-28T23:00", "2025-03-31T22:00")),
    # DST back in New York: November starts at -4 and ends at -5
    (monthly("2025-11-01T00:00-04:00", timezone="America/New_York"), "2025-11-15",
     ("2025-11-01T04:00", "2025-12-01T05:00")),
    # a zone whose clocks skip midnight (Santiago, 2024-09-08 00:00 -> 01:00): the day starts at 01:00 local
    (Schedule(anchor=at("2024-09-01T00:00-04:00"), cycle="custom", custom_cycle_days=1, timezone="America/Santiago"),
     "2024-09-08T12:00", ("2024-09-08T04:00", "2024-09-09T03:00")),
])
def test_cycle_containing_turns_at_local_midnight_on_the_billing_day(schedule, moment, cycle):
    assert cycle_containing(schedule, at(moment)) == (at(cycle[0]), at(cycle[1]))


def test_a_dst_month_is_an_hour_short_and_the_day_length_follows_the_zone():
    schedule = monthly("2025-03-01T00:00+01:00", timezone="Europe/Berlin")
    start, end = cycle_containing(schedule, at("2025-03-10"))
    assert end - start == timedelta(days=31) - timedelta(hours=1)


@pytest.mark.parametrize("schedule, moment, expected", [
    # a first period starting on a turn is whole
    (monthly("2025-01-01"), "2025-01-01", ("2025-01-01", "2025-02-01", False)),
    # a first period starting between turns is clipped to startDate
    (monthly("2025-03-01", billing_day=15), "2025-03-05", ("2025-03-01", "2025-03-15", True)),
    (monthly("2025-03-01T15:30"), "2025-03-02", ("2025-03-01T15:30", "2025-04-01", True)),
    # the last period stops at endDate
    (monthly("2025-01-01", end=at("2025-02-15")), "2025-02-10", ("2025-02-01", "2025-02-15", True)),
    (monthly("2025-01-01", end=at("2025-03-01")), "2025-02-10", ("2025-02-01", "2025-03-01", False)),
])
def test_period_containing_clips_the_cycle_to_the_subscription_life(schedule, moment, expected):
    period = period_containing(schedule, at(moment))
    assert (period.start, period.end, period.is_partial) == (at(expected[0]), at(expected[1]), expected[2])


@pytest.mark.parametrize("moment", ["2024-12-31T23:59:59", "2025-02-15", "2026-01-01"])
def test_period_containing_is_none_outside_the_subscription_life(moment):
    assert period_containing(monthly("2025-01-01", end=at("2025-02-15")), at(moment)) is None


def test_periods_are_half_open_the_end_instant_belongs_to_the_next_period():
    schedule = monthly("2025-01-01")
    assert period_containing(schedule, at("2025-02-01")).start == at("2025-02-01")
    assert period_containing(schedule, at("2025-02-01") - timedelta(microseconds=1)).end == at("2025-02-01")


def test_next_period_walks_a_year_of_billing_day_31():
    schedule = monthly("2024-01-31")
    period, ends = first_period(schedule), []
    for _ in range(13):
        ends.append(period.end.date().isoformat())
        period = next_period(schedule, period)
    assert ends == ["2024-02-29", "2024-03-31", "2024-04-30", "2024-05-31", "2024-06-30", "2024-07-31",
                    "2024-08-31", "2024-09-30", "2024-10-31", "2024-11-30", "2024-12-31", "2025-01-31",
                    "2025-02-28"]


def test_next_period_stops_at_the_end_date():
    schedule = monthly("2025-01-01", end=at("2025-02-15"))
    last = next_period(schedule, first_period(schedule))
    assert (last.start, last.end) == (at("2025-02-01"), at("2025-02-15"))
    assert next_period(schedule, last) is None


def test_a_changed_billing_day_takes_effect_after_the_current_period():
    current = Period(at("2025-03-01"), at("2025-04-01"), at("2025-03-01"), at("2025-04-01"))
    changed = monthly("2025-01-01", billing_day=15)
    transition = next_period(changed, current)
    assert (transition.start, transition.end) == (at("2025-04-01"), at("2025-04-15"))
    assert transition.is_partial and transition.cycle_start == at("2025-03-15")
    assert (next_period(changed, transition).start, next_period(changed, transition).end) == \
        (at("2025-04-15"), at("2025-05-15"))


@pytest.mark.parametrize("moment, expected", [
    ("2024-06-01", ("2025-01-01", "2025-02-01")),  # before the start: the first period
    ("2025-02-03", ("2025-02-01", "2025-02-15")),  # inside: the period holding it
    ("2030-01-01", ("2025-02-01", "2025-02-15")),  # after the end: the last period
])
def test_period_as_of_clamps_to_the_first_and_last_period(moment, expected):
    period = period_as_of(monthly("2025-01-01", end=at("2025-02-15")), at(moment))
    assert (period.start, period.end) == (at(expected[0]), at(expected[1]))


def test_period_as_of_since_a_rule_change_starts_at_that_instant():
    schedule = monthly("2025-01-01", billing_day=15)
    period = period_as_of(schedule, at("2025-04-03"), since=at("2025-04-01"))
    assert (period.start, period.end) == (at("2025-04-01"), at("2025-04-15"))


def test_a_schedule_that_ends_before_it_starts_has_no_period():
    schedule = monthly("2025-01-01", end=at("2025-01-01"))
    assert first_period(schedule) is None and period_as_of(schedule, at("2025-01-05")) is None


@pytest.mark.parametrize("name, valid", [
    ("UTC", True), ("Europe/Paris", True), ("America/Argentina/Buenos_Aires", True),
    ("Mars/Olympus", False), ("", False), ("../../etc/passwd", False), (None, False), ("Europe/", False),
])
def test_is_valid_timezone_accepts_iana_names_only(name, valid):
    assert is_valid_timezone(name) is valid


@pytest.mark.parametrize("kwargs", [
    {"anchor": datetime(2025, 1, 1), "cycle": "monthly"},  # naive
    {"anchor": at("2025-01-01"), "cycle": "weekly"},
    {"anchor": at("2025-01-01"), "cycle": "custom"},
    {"anchor": at("2025-01-01"), "cycle": "monthly", "billing_day": 32},
    {"anchor": at("2025-01-01"), "cycle": "monthly", "timezone": "Nowhere/Town"},
])
def test_an_inconsistent_schedule_is_refused(kwargs):
    with pytest.raises(ValueError):
        Schedule(**kwargs)


def test_local_midnight_is_the_first_instant_of_the_local_day():
    from datetime import date
    assert local_midnight(date(2025, 7, 1), "Asia/Kolkata") == at("2025-06-30T18:30")
    assert local_midnight(date(2024, 9, 8), "America/Santiago") == at("2024-09-08T04:00")
