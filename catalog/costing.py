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
- Long context: a model may price larger requests higher, at one or more thresholds of prompt tokens
  (`input + cache_read + cache_write`). A request priced above a threshold pays that tier's rates for all of
  its tokens, output included (the providers' rule for Gemini, Claude, Qwen...); with several thresholds the
  highest one crossed applies, a kind of token the tier does not price keeping the rate of the tier below. A
  request is above a threshold when its prompt exceeds it; where the provider bills the higher tier from the
  threshold itself (xAI: `threshold_inclusive`), when it reaches it.
- Off-peak: a model with off-peak prices (DeepSeek, ...) bills a request whose instant (the event's
  `usageDate`) falls in one of its windows at the off-peak rates, which replace whatever rate would apply
  (long context included); a kind of token without an off-peak rate keeps its rate. Windows are UTC times of
  day, `[start, end)`, wrapping past midnight when start > end, the whole day when start == end, on the
  ISO weekdays they name (read on the provider's calendar, `weekday_timezone`, UTC by default).
- Cache tokens without a published cache rate (after tiers and off-peak) are billed at the input rate in
  effect, off-peak input included.
- Any other service (`cost_unit` request, minute, character, image, page, ...): `quantity x unit rate`;
  fractional quantities are kept as sent, never rounded.
- An event with several services costs the sum of its services; if any one is unresolvable (unknown
  service or missing rate), the event's cost is None (`NEEDS_COST_BACKFILL`).
- Precision: costs are exact, then quantized once (half-up) to the 12 decimal places that the event's
  `ExactField` stores. Rounding to cents happens only when an invoice line is written.
"""
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, time, timezone, tzinfo
from decimal import Context, Decimal
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from config.core.money import ZERO, to_exact

TOKEN_UNIT = "token"
# Products of token counts and rates with every digit their source publishes need more than the default 28
# significant digits.
WORKING_PRECISION = 80
# The engine's arithmetic goes through this context's methods rather than a `localcontext()` per call: the
# same precision, rounding and traps, without copying the thread's context twice per event on the hot path.
WORKING = Context(prec=WORKING_PRECISION)


@dataclass(frozen=True)
class LongContextRates:
    """Rates for requests whose prompt tokens are above `threshold`; None keeps the rate of the tier below."""

    threshold: int
    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None


@dataclass(frozen=True)
class OffPeakWindow:
    """UTC times of day `[start, end)` (past midnight when start > end, all day when start == end), on the
    ISO `weekdays` named (None: every day)."""

    hours: tuple[tuple[time, time], ...]
    weekdays: frozenset[int] | None = None


@lru_cache(maxsize=None)
def _calendar(name: str | None) -> tzinfo:
    if not name:
        return timezone.utc
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        return timezone.utc


@dataclass(frozen=True)
class OffPeakRates:
    """Off-peak prices: in effect while one of `windows` is open; None keeps the rate that would apply."""

    windows: tuple[OffPeakWindow, ...]
    weekday_timezone: str | None = None  # the calendar whose weekdays the windows name
    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None

    def is_open(self, at: datetime) -> bool:
        instant = at.astimezone(timezone.utc)
        now = instant.time().replace(tzinfo=None)
        weekday = None
        for window in self.windows:
            if window.weekdays is not None:
                if weekday is None:
                    weekday = instant.astimezone(_calendar(self.weekday_timezone)).isoweekday()
                if weekday not in window.weekdays:
                    continue
            for start, end in window.hours:
                if start < end:
                    if start <= now < end:
                        return True
                elif now >= start or now < end:
                    return True
        return False


@dataclass(frozen=True)
class Rates:
    """A catalog service's prices: per token (`cost_unit == "token"`) or `input` per `cost_unit`."""

    cost_unit: str
    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    long_context: tuple[LongContextRates, ...] = ()  # ascending thresholds
    threshold_inclusive: bool = False  # the tier above a threshold applies from the threshold itself (xAI)
    off_peak: OffPeakRates | None = None

    @property
    def is_token_priced(self) -> bool:
        return self.cost_unit == TOKEN_UNIT


@dataclass(frozen=True)
class Usage:
    """What one service did in an event: token counts for an LLM, `quantity` units for anything else, and
    when (`at`, the event's usageDate; None: never off-peak)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    quantity: Decimal = Decimal(1)
    at: datetime | None = None

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


def _effective_rates(rates: Rates, usage: Usage) -> tuple:
    """(input, output, cache_read, cache_write) rates for this request: its long-context tier, then its
    off-peak window. A cache rate the entry does not publish is the input rate in effect: providers bill cached
    tokens as ordinary input when they publish no separate price (and LiteLLM prices them so)."""
    input_rate, output_rate, cache_read_rate, cache_write_rate = (
        rates.input, rates.output, rates.cache_read, rates.cache_write)
    prompt = usage.prompt_tokens
    for tier in rates.long_context:
        if prompt > tier.threshold or (rates.threshold_inclusive and prompt == tier.threshold):
            input_rate = input_rate if tier.input is None else tier.input
            output_rate = output_rate if tier.output is None else tier.output
            cache_read_rate = cache_read_rate if tier.cache_read is None else tier.cache_read
            cache_write_rate = cache_write_rate if tier.cache_write is None else tier.cache_write
    off_peak = rates.off_peak
    if off_peak is not None and usage.at is not None and off_peak.is_open(usage.at):
        input_rate = input_rate if off_peak.input is None else off_peak.input
        output_rate = output_rate if off_peak.output is None else off_peak.output
        cache_read_rate = cache_read_rate if off_peak.cache_read is None else off_peak.cache_read
        cache_write_rate = cache_write_rate if off_peak.cache_write is None else off_peak.cache_write
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
