"""The exact JSON reader and writer (core/exact_json.py) and the API's renderer (core/api_json.py)."""
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.apps import apps
from django.db import models

from core import exact_json
from core.api_json import JSONRenderer

D = Decimal


@pytest.mark.parametrize("text, value", [
    ("12345678.123456789", D("12345678.123456789")),
    ("1.50", D("1.50")),
    ("1e400", D("1e400")),
    ("7", 7),
    (str(2**70), 2**70),
    ('{"a": [0.1, -0.0, 3]}', {"a": [D("0.1"), D("-0.0"), 3]}),
])
def test_numbers_are_read_as_the_decimal_they_spell_and_integers_stay_integers(text, value):
    parsed = exact_json.loads(text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}', "1e99999999999999999999", "{"])
def test_what_is_not_a_finite_json_number_is_a_value_error(text):
    with pytest.raises(ValueError):
        exact_json.loads(text)


@pytest.mark.parametrize("value, text", [
    (D("12345678901234567890.123"), b"12345678901234567890.123"),
    (D("1.50"), b"1.50"),
    (D("1E+2"), b"100"),
    (D("1E-7"), b"0.0000001"),
    (D("-0"), b"-0"),
    (2**70, str(2**70).encode()),
    ({"n": [D("0.1"), 2**64, -(2**63) - 1, None]}, b'{"n":[0.1,18446744073709551616,-9223372036854775809,null]}'),
    ({1: D("2.5")}, b'{"1":2.5}'),
])
def test_decimals_and_integers_of_any_size_are_written_from_their_digits(value, text):
    assert exact_json.dumps(value) == text


@pytest.mark.parametrize("value", [D("NaN"), D("Infinity"), object()])
def test_what_json_cannot_hold_is_refused(value):
    with pytest.raises(TypeError):
        exact_json.dumps([value])


def test_the_api_renderer_writes_decimals_exactly_and_everything_else_as_drf_does():
    at = datetime(2025, 1, 2, 3, 4, 5, 678901, tzinfo=timezone.utc)
    rendered = JSONRenderer().render({"cost": D("50.833333333333333333"), "at": at, "day": at.date(),
                                      "text": "line\u2028break"})
    assert rendered == (b'{"cost":50.833333333333333333,"at":"2025-01-02T03:04:05.678901Z","day":"2025-01-02",'
                        b'"text":"line\\u2028break"}')


def test_every_json_column_reads_and_writes_numbers_exactly_without_a_migration():
    json_fields = [field for model in apps.get_models(include_auto_created=True)
                   for field in model._meta.local_fields if isinstance(field, models.JSONField)]
    assert json_fields
    for field in json_fields:
        assert isinstance(field, exact_json.ExactJSONField), field
        assert (field.encoder, field.decoder) == (exact_json.ExactJSONEncoder, exact_json.ExactJSONDecoder), field
        name, path, args, kwargs = field.deconstruct()
        assert path == "django.db.models.JSONField" and "encoder" not in kwargs and "decoder" not in kwargs
    assert json_fields[0].from_db_value('{"n": 0.1}', None, None) == {"n": D("0.1")}
    assert exact_json.ExactJSONEncoder().encode({"n": D("0.10")}) == '{"n":0.10}'
