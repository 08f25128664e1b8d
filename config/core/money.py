"""Money is Decimal end to end. Two precisions, defined once here."""
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation

from django.db import models

EXACT_DIGITS, EXACT_PLACES = 28, 12
CENTS_DIGITS, CENTS_PLACES = 14, 2
CENT = Decimal("0.01")
ZERO = Decimal(0)
_EXACT_QUANTUM = Decimal(1).scaleb(-EXACT_PLACES)


def ExactField(**kwargs) -> models.DecimalField:
    """Rates, event costs, quantities, caps: exact to 12 decimal places."""
    return models.DecimalField(max_digits=EXACT_DIGITS, decimal_places=EXACT_PLACES, **kwargs)


def CentsField(**kwargs) -> models.DecimalField:
    """Billed amounts: invoice lines, discounts, taxes, totals, payments, refunds."""
    return models.DecimalField(max_digits=CENTS_DIGITS, decimal_places=CENTS_PLACES, **kwargs)


def to_cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def to_exact(amount: Decimal, *, context: Context | None = None) -> Decimal:
    """Quantize to the stored exact precision (half-up), as the database column keeps it; in `context` when
    given (the cost engine's working precision), else the thread's."""
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
