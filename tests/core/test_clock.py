"""core.clock: instants written for the API."""
from datetime import datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st
from rest_framework.utils.encoders import JSONEncoder

from core.clock import MAX_YEAR, MIN_YEAR, instants_text

_drf = JSONEncoder()

instants = st.datetimes(min_value=datetime(MIN_YEAR, 1, 1), max_value=datetime(MAX_YEAR, 12, 31, 23, 59, 59),
                        timezones=st.just(timezone.utc))


@given(st.lists(instants, max_size=20))
def test_instants_are_written_as_drf_writes_them(values):
    # The usage batch's answer writes its timestamps in one call; every other answer through DRF's encoder.
    assert instants_text(values) == [_drf.default(value) for value in values]


def test_microseconds_appear_only_when_there_are_some():
    start = datetime(2026, 3, 1, tzinfo=timezone.utc)
    assert instants_text([start, start + timedelta(microseconds=450)]) == [
        "2026-03-01T00:00:00Z", "2026-03-01T00:00:00.000450Z"]
