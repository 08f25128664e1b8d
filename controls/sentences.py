"""The plain-English sentence of a spend cap (pure: plain values in, a string out).

Grammar (docs/decisions/spend-controls.md):
- track:   "Alert at 50%, 80% and 100% of $100.00 per month of AI tool spend for the whole team; tool calls
            are not blocked."
- enforce: "Stop dev@x.com's AI tool calls at $20.00 per day; alerts at 50%, 80% and 100%; after a stop, calls
            stay refused for 4 hours."
"""
from decimal import Decimal

from core.money import CENT, quantized


def usd(amount: Decimal) -> str:
    """$1,234.50; amounts finer than a cent keep their digits ($0.005)."""
    if amount == quantized(amount, CENT):
        return f"${amount:,.2f}"
    return f"${amount.normalize():,f}"


def and_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"


def percents(thresholds) -> str:
    return and_list([f"{int(value)}%" for value in thresholds])


def hours(count: int) -> str:
    return f"{count} hour{'' if count == 1 else 's'}"


def cap_sentence(*, scope: str, scope_value: str | None, amount_usd: Decimal, period: str, mode: str,
                 cool_off_hours: int | None, alert_thresholds) -> str:
    whole_team = scope == "org"
    limit = f"{usd(amount_usd)} per {period}"
    if mode == "enforce":
        whose = "the whole team's" if whole_team else f"{scope_value}'s"
        sentence = f"Stop {whose} AI tool calls at {limit}"
        sentence += f"; alerts at {percents(alert_thresholds)}" if alert_thresholds else "; no alert emails"
        if cool_off_hours:
            sentence += f"; after a stop, calls stay refused for {hours(cool_off_hours)}"
        return sentence + "."
    target = "the whole team" if whole_team else scope_value
    if not alert_thresholds:
        return f"Track AI tool spend for {target} against {limit}; no alert emails; tool calls are not blocked."
    return (f"Alert at {percents(alert_thresholds)} of {limit} of AI tool spend for {target}; "
            "tool calls are not blocked.")
