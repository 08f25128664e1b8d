"""The plain-English sentence of a cap (pure function, table-driven)."""
from decimal import Decimal

import pytest

from controls.sentences import cap_sentence, usd

ORG, DEV = ("org", None), ("dev", "dev@x.com")


@pytest.mark.parametrize("target, amount, period, mode, cool_off, thresholds, expected", [
    (ORG, "100", "month", "track", None, [50, 80, 100],
     "Alert at 50%, 80% and 100% of $100.00 per month of AI tool spend for the whole team; "
     "tool calls are not blocked."),
    (DEV, "20", "day", "track", 4, [100],
     "Alert at 100% of $20.00 per day of AI tool spend for dev@x.com; tool calls are not blocked."),
    (DEV, "20", "day", "enforce", None, [50, 100],
     "Stop dev@x.com's AI tool calls at $20.00 per day; alerts at 50% and 100%."),
    (ORG, "1500", "week", "enforce", 1, [80],
     "Stop the whole team's AI tool calls at $1,500.00 per week; alerts at 80%; "
     "after a stop, calls stay refused for 1 hour."),
    (DEV, "0.005", "month", "enforce", 48, [],
     "Stop dev@x.com's AI tool calls at $0.005 per month; no alert emails; "
     "after a stop, calls stay refused for 48 hours."),
    (ORG, "10", "month", "track", None, [],
     "Track AI tool spend for the whole team against $10.00 per month; no alert emails; tool calls are not blocked."),
    (ORG, "10", "month", "enforce", 0, [100],
     "Stop the whole team's AI tool calls at $10.00 per month; alerts at 100%."),
])
def test_sentence_grammar(target, amount, period, mode, cool_off, thresholds, expected):
    scope, scope_value = target
    assert cap_sentence(scope=scope, scope_value=scope_value, amount_usd=Decimal(amount), period=period, mode=mode,
                        cool_off_hours=cool_off, alert_thresholds=thresholds) == expected


@pytest.mark.parametrize("amount, text", [("0", "$0.00"), ("1234567.5", "$1,234,567.50"), ("0.10", "$0.10"),
                                          ("2.125", "$2.125"), ("100.000000000000", "$100.00")])
def test_usd_keeps_cents_and_finer_digits(amount, text):
    assert usd(Decimal(amount)) == text
