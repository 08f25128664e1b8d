"""What PostgreSQL cannot store (core/serialization.py `unstorable`), wherever it hides in JSON."""
from decimal import Decimal

import pytest

from core.serialization import unstorable


@pytest.mark.parametrize("value, refused", [
    ({"note": "plain", "count": 3, "ok": True, "none": None, "ratio": 0.5}, False),
    ({"note": "a\x00b"}, True),
    ({"key\x00": "value"}, True),
    ({"key\x00": 1}, True),
    ({"outer": {"inner": ["x", {"deepest": "a\x00"}]}}, True),
    ({"outer": {"inner": ["x", {"deepest": float("inf")}]}}, True),
    ({"outer": [float("-inf")]}, True),
    ({"outer": [1.5, -2, "text", [], {}]}, False),
    ("a\x00", True),
    ("plain", False),
    ([[["\x00"]]], True),
    ({}, False),
    # Numbers keep every digit up to 1000 before and after the decimal point (the parser reads Decimals).
    ({"n": Decimal("1e999"), "m": Decimal("-1e999"), "k": Decimal("1e-1000"), "j": 10**999}, False),
    ({"n": Decimal("1e1000")}, True),
    ({"n": [Decimal("1e-1001")]}, True),
    ({"n": 10**1000}, True),
    ([-(10**1000)], True),
])
def test_unstorable_values_are_found_at_any_depth(value, refused):
    assert unstorable(value) is refused
