"""Money is Decimal end to end. Two precisions, defined once here."""
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

from django.db import models

EXACT_DIGITS, EXACT_PLACES = 28, 12
# An exact input an operator writes (a strategy's rate, tier bounds and minimum, a proratedAmount, top-up units, a cap
# or threshold, a percent) is taken as the client prints it, never rounded: up to 340 decimal places, as a quantity
# (every binary float printed in full, down to the smallest), and below 10^16.
EXACT_IN_PLACES, EXACT_IN_WHOLE_DIGITS = 340, 16
EXACT_IN_DIGITS = EXACT_IN_PLACES + EXACT_IN_WHOLE_DIGITS
CENTS_DIGITS, CENTS_PLACES = 14, 2
CENT = Decimal("0.01")
# What a cents column holds: an amount below 10^12.
CENTS_LIMIT = Decimal(10) ** (CENTS_DIGITS - CENTS_PLACES)
ZERO = Decimal(0)
# Sums of quantities and costs read from the ledger, added in Python: every digit kept (a quantity has up to 340
# decimal places and 309 integer digits, 649 digits, a dozen more summed; Decimal's default context rounds to 28
# significant digits, which moved a volume of 100.000000000000000000000000001 onto the tier of exactly 100). The
# precision is a bound, not a cost: Decimal works on the digits a number has.
SUMS = Context(prec=700)
_EXACT_QUANTUM = Decimal(1).scaleb(-EXACT_PLACES)


def sum_exactly(values) -> Decimal:
    """`sum` of Decimals in SUMS: every digit kept (the built-in adds in the default context, 28 digits)."""
    total = ZERO
    for value in values:
        total = SUMS.add(total, value)
    return total


def ExactField(**kwargs) -> models.DecimalField:
    """Rates, event costs, caps: exact to 12 decimal places (quantities are `QuantityField`s)."""
    return models.DecimalField(max_digits=EXACT_DIGITS, decimal_places=EXACT_PLACES, **kwargs)


def CentsField(**kwargs) -> models.DecimalField:
    """Billed amounts: invoice lines, discounts, taxes, totals, payments, refunds."""
    return models.DecimalField(max_digits=CENTS_DIGITS, decimal_places=CENTS_PLACES, **kwargs)


class UnboundedDecimalField(models.DecimalField):
    """PostgreSQL `numeric` without precision or scale: any finite value, stored exactly as written. For values
    with no natural bound: sums that grow with the ledger (the analytics rollup) and published rates, whose
    digits are the source's. Django's DecimalField insists on both limits; this one has neither."""

    def __init__(self, *args, **kwargs):
        kwargs.pop("max_digits", None)
        kwargs.pop("decimal_places", None)
        super().__init__(*args, **kwargs)

    def check(self, **kwargs):
        return models.Field.check(self, **kwargs)

    def db_type(self, connection):
        return "numeric"

    def cast_db_type(self, connection):
        return "numeric"

    @property
    def validators(self):
        return list(self.default_validators) + list(self._validators)

    @property
    def context(self):
        return Context(prec=EXACT_DIGITS)

    def formfield(self, **kwargs):
        return super().formfield(**{"max_digits": None, "decimal_places": None, **kwargs})


def SumField(**kwargs) -> UnboundedDecimalField:
    """Sums of exact values over an unbounded number of events (a rollup's quantity and cost): never overflow."""
    return UnboundedDecimalField(**kwargs)


def QuantityField(**kwargs) -> UnboundedDecimalField:
    """Quantities (an event's, an invoice line's, a pool's consumption): every digit a client sends, never
    rounded (docs/decisions/numbers.md "Quantities"). Unbounded like a sum, since sums of them are stored too."""
    return UnboundedDecimalField(**kwargs)


def TermField(**kwargs) -> UnboundedDecimalField:
    """A value an operator writes (rates, tier bounds, minimums, caps, thresholds, top-up units, percents): stored
    with every digit it was written with (`EXACT_IN_PLACES`), never rounded to 12 places."""
    return UnboundedDecimalField(**kwargs)


def RateField(**kwargs) -> UnboundedDecimalField:
    """Catalog rates, with every digit the price source publishes (never rounded to 12 places)."""
    return UnboundedDecimalField(**kwargs)


def quantized(amount: Decimal, quantum: Decimal, rounding: str = ROUND_HALF_UP) -> Decimal:
    """`amount` rounded to the places of `quantum`, at any magnitude: the context holds every digit the result
    has (Decimal's default 28 would raise InvalidOperation for a total of 10^27 dollars, and a figure that large
    is for the caller to refuse or show, never a 500)."""
    digits = max(amount.adjusted(), 0) - quantum.as_tuple().exponent + 2
    return amount.quantize(quantum, rounding=rounding, context=Context(prec=max(EXACT_DIGITS, digits)))


def to_cents(amount: Decimal) -> Decimal:
    return quantized(amount, CENT)


def to_exact(amount: Decimal, *, context: Context | None = None) -> Decimal:
    """Quantize to the stored exact precision (half-up), as the database column keeps it; in `context` when
    given (the cost engine's working precision), else wide enough for any magnitude."""
    if context is None:
        return quantized(amount, _EXACT_QUANTUM)
    return amount.quantize(_EXACT_QUANTUM, rounding=ROUND_HALF_UP, context=context)


def to_minor_units(amount: Decimal) -> int:
    """USD to Stripe cents."""
    return int(to_cents(amount) * 100)


def from_minor_units(cents: int) -> Decimal:
    return (Decimal(int(cents)) / 100).quantize(CENT)


def decimal_or_none(value) -> Decimal | None:
    """Parse a JSON/text number exactly (never through float); None for null or garbage."""
    if value is None or isinstance(value, bool):
        return None
    try:
        result = Decimal(str(value).strip())
    except (InvalidOperation, ValueError):
        return None
    return result if result.is_finite() else None
