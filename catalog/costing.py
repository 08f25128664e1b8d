"""The cost engine: what one usage event cost, from catalog rates. Pure functions over Decimal (no ORM,
clock or settings); `catalog.resolution.rates_for(entry)` adapts a catalog row into `Rates`.

Rules (docs/decisions/catalog.md):
- Token-priced service (LLM, `cost_unit == "token"`, rates in USD per single token):
  `input_tokens x input + output_tokens x output + cache_read_tokens x cache_read
  + cache_write_tokens x cache_write`. `input_tokens` are the input tokens NOT read from the cache:
  providers such as OpenAI count cached tokens inside their prompt tokens, so a caller who sends the
  provider's prompt count as `inputTokens` and the cached part as `cacheReadTokens` pays for those
  tokens twice. A token count of zero (or omitted) costs nothing and needs no rate. Cache tokens without a
  published cache rate are billed at the input rate in effect (as providers bill them, and as LiteLLM
  prices them); a positive input or output count whose rate the catalog lacks makes the cost
  unresolvable (None).
- Long context: where a model has a `long_context_threshold`, a request whose prompt tokens
  (`input + cache_read + cache_write`) exceed it is priced at the above-threshold rates for all of its
  tokens, output included (the providers' rule for Gemini and Claude long-context requests). A kind of
  token without an above-threshold rate keeps its base rate. At or below the threshold: base rates.
- Any other service (`cost_unit` request, minute, character, image, page, ...): `quantity x unit rate`;
  fractional quantities are kept as sent, never rounded.
- An event with several services costs the sum of its services; if any one is unresolvable (unknown
  service or missing rate), the event's cost is None (`NEEDS_COST_BACKFILL`).
- Precision: costs are exact, then quantized once (half-up) to the 12 decimal places that the event's
  `ExactField` stores. Rounding to cents happens only when an invoice line is written.
"""
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Context, Decimal

from config.core.money import ZERO, to_exact

TOKEN_UNIT = "token"
# Products of 12-place quantities and 12-place rates need more than the default 28 significant digits.
WORKING_PRECISION = 80
# The engine's arithmetic goes through this context's methods rather than a `localcontext()` per call: the
# same precision, rounding and traps, without copying the thread's context twice per event on the hot path.
WORKING = Context(prec=WORKING_PRECISION)


@dataclass(frozen=True)
class LongContextRates:
    """Rates for requests whose prompt tokens exceed `threshold`; None means "the base rate"."""

    threshold: int
    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None


@dataclass(frozen=True)
class Rates:
    """A catalog service's prices: per token (`cost_unit == "token"`) or `input` per `cost_unit`."""

    cost_unit: str
    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    long_context: LongContextRates | None = None

    @property
    def is_token_priced(self) -> bool:
        return self.cost_unit == TOKEN_UNIT


@dataclass(frozen=True)
class Usage:
    """What one service did in an event: token counts for an LLM, `quantity` units for anything else."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    quantity: Decimal = Decimal(1)

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


def _effective_rates(rates: Rates, usage: Usage) -> tuple:
    """(input, output, cache_read, cache_write) rates for this request size. A cache rate the entry does not
    publish is the input rate in effect: providers bill cached tokens as ordinary input when they publish no
    separate price (and LiteLLM prices them so)."""
    effective = (rates.input, rates.output, rates.cache_read, rates.cache_write)
    long_context = rates.long_context
    if long_context is not None and usage.prompt_tokens > long_context.threshold:
        above = (long_context.input, long_context.output, long_context.cache_read, long_context.cache_write)
        effective = tuple(rate if above_rate is None else above_rate for rate, above_rate in zip(effective, above))
    input_rate, output_rate, cache_read_rate, cache_write_rate = effective
    return (input_rate, output_rate, input_rate if cache_read_rate is None else cache_read_rate,
            input_rate if cache_write_rate is None else cache_write_rate)


TOKEN_KINDS = ("input", "output", "cache read", "cache write")


def missing_rates(rates: Rates, usage: Usage) -> list[str]:
    """The kinds of token this usage has (a positive count) that the rates leave unpriced, by name: why
    `service_cost` is None for a known service. Empty for a per-unit service with a unit rate."""
    if not rates.is_token_priced:
        return [] if rates.input is not None else ["unit"]
    counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    return [kind for kind, count, rate in zip(TOKEN_KINDS, counts, _effective_rates(rates, usage))
            if count and rate is None]


def token_cost(rates: Rates, usage: Usage) -> Decimal | None:
    """Exact USD cost of an LLM request; None when a positive token count has no rate."""
    counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens)
    total = ZERO
    for count, rate in zip(counts, _effective_rates(rates, usage)):
        if not count:
            continue
        if rate is None:
            return None
        total = WORKING.add(total, WORKING.multiply(count, rate))
    return total


def unit_cost(rates: Rates, quantity: Decimal) -> Decimal | None:
    """Exact USD cost of `quantity` units of a per-unit service; None without a unit rate."""
    if rates.input is None:
        return None
    return WORKING.multiply(quantity, rates.input)


def service_cost(rates: Rates | None, usage: Usage) -> Decimal | None:
    """Exact cost of one service's usage; None for an unknown service (no rates) or a missing rate."""
    if rates is None:
        return None
    return token_cost(rates, usage) if rates.is_token_priced else unit_cost(rates, usage.quantity)


def event_cost(parts: Iterable[tuple[Rates | None, Usage]]) -> Decimal | None:
    """The cost of an event: the sum of its services, at the stored precision (12 places, half-up).

    None when any service is unresolvable, so a partly priced event is never stored as if complete.
    """
    return event_total(service_cost(rates, usage) for rates, usage in parts)


def event_total(service_costs: Iterable[Decimal | None]) -> Decimal | None:
    """`event_cost` from costs already worked out with `service_cost` (each part priced once)."""
    total = ZERO
    for cost in service_costs:
        if cost is None:
            return None
        total = WORKING.add(total, cost)
    return to_exact(total, context=WORKING)
