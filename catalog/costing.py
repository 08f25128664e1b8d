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
- Cache writes have two lifetimes: `cache_write_tokens` (5 minutes) at the cache-write rate, and
  `cache_write_1h_tokens` at the data's 1-hour rate, else the provider's multiple of the input rate in effect
  (Anthropic: 2), else a 5-minute write's rate. Both count in the prompt.
- Service tiers (`Usage.service_tier`: batch, flex, priority): the tier's own rates from the data at the request's
  long-context level; a kind without one costs, for batch, the provider's published share of the standard rate
  (50% at OpenAI, Anthropic, Google), else the standard rate (`priced_at_standard` says so); a cache rate neither
  the tier nor the standard rates publish is the tier's input rate.
- A book's price override (`RateOverride`, `with_override`) replaces the rates it names flat; a provider
  discount (`discounted`) takes a percentage off the cost.
- Any other service (`cost_unit` request, minute, character, image, page, ...): `quantity x unit rate`;
  fractional quantities are kept as sent, never rounded.
- An event with several services costs the sum of its services; if any one is unresolvable (unknown
  service or missing rate), the event's cost is None (`NEEDS_COST_BACKFILL`).
- Precision: costs are exact, then quantized once (half-up) to the 12 decimal places that the event's
  `ExactField` stores. Rounding to cents happens only when an invoice line is written.
"""
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, time, timezone, tzinfo
from decimal import Context, Decimal
from functools import cached_property, lru_cache
from typing import NamedTuple
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.money import EXACT_PLACES, ZERO, to_exact

TOKEN_UNIT = "token"
STANDARD = "standard"
BATCH = "batch"
# Products of token counts and rates with every digit their source publishes need more than the default 28
# significant digits.
WORKING_PRECISION = 80
# The engine's arithmetic goes through this context's methods rather than a `localcontext()` per call: the
# same precision, rounding and traps, without copying the thread's context twice per event on the hot path.
WORKING = Context(prec=WORKING_PRECISION)
# The highest power of ten a cost written at 12 places keeps every digit of in the working precision.
_LARGEST_EXACT_DIGIT = WORKING_PRECISION - EXACT_PLACES - 1


@dataclass(frozen=True)
class LongContextRates:
    """Rates for requests whose prompt tokens are above `threshold`; None keeps the rate of the tier below."""

    threshold: int
    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    cache_write_1h: Decimal | None = None


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
class TierRates:
    """A service tier's own rates (batch, flex, priority) as the price data publishes them: base rates and its
    own long-context thresholds; a kind of token it leaves out has no rate of this tier."""

    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    cache_write_1h: Decimal | None = None
    long_context: tuple[LongContextRates, ...] = ()


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
    cache_write_1h: Decimal | None = None  # the price data's 1-hour cache-write rate
    # The provider's published rules where the data has no rate: a 1-hour cache write at this multiple of the
    # input rate in effect (Anthropic: 2), a batch request at this share of the standard rates (0.5).
    cache_write_1h_share_of_input: Decimal | None = None
    batch_share: Decimal | None = None
    service_tiers: Mapping[str, "TierRates"] = field(default_factory=dict)  # batch, flex, priority

    @property
    def is_token_priced(self) -> bool:
        return self.cost_unit == TOKEN_UNIT

    @cached_property
    def same_for_every_request(self) -> tuple | None:
        """The standard rates of every request when no long-context tier or off-peak window can change them (most
        models), worked out once; None otherwise. Cached on the instance: `Rates` is frozen."""
        if self.long_context or self.off_peak is not None:
            return None
        return _rates_of_request(self, 0, None)


class Usage(NamedTuple):
    """What one service did in an event: token counts for an LLM, `quantity` units for anything else, and
    when (`at`, the event's usageDate; None: never off-peak). A NamedTuple rather than a frozen dataclass:
    recording builds one for every part of every record (docs/performance.md)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    quantity: Decimal = Decimal(1)
    at: datetime | None = None
    cache_write_1h_tokens: int = 0
    service_tier: str = STANDARD

    @property
    def prompt_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens + self.cache_write_1h_tokens

    @property
    def counts(self) -> tuple[int, int, int, int, int]:
        return (self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens,
                self.cache_write_1h_tokens)


def _standard_rates(rates: Rates, usage: Usage) -> tuple:
    """(input, output, cache_read, cache_write, cache_write_1h) rates of a standard request: its long-context
    tier, then its off-peak window. Rates without either are the same for every request: worked out once per
    `Rates` (`Rates.same_for_every_request`). A cache rate the entry does not publish is the input rate in effect:
    providers bill cached tokens as ordinary input when they publish no separate price (and LiteLLM prices them
    so). A 1-hour cache write without a rate of the tier it falls in costs the provider's published multiple of
    the input rate in effect (Anthropic: 2x), else the data's 1-hour rate of the tier below, else a 5-minute
    write's rate."""
    same = rates.same_for_every_request
    if same is not None:
        return same
    return _rates_of_request(rates, usage.prompt_tokens, usage.at)


def _rates_of_request(rates: Rates, prompt: int, at: datetime | None) -> tuple:
    """`_standard_rates` for a request of `prompt` tokens at `at`."""
    return _resolved(rates, *_published_rates_of_request(rates, prompt, at))


def _published_rates_of_request(rates: Rates, prompt: int, at: datetime | None) -> tuple:
    """The standard rates the data publishes for a request of `prompt` tokens at `at` (its long-context tier, then
    its off-peak window), None for a kind it leaves out, and whether the 1-hour rate is the tier's own."""
    input_rate, output_rate, cache_read_rate, cache_write_rate, cache_write_1h_rate = (
        rates.input, rates.output, rates.cache_read, rates.cache_write, rates.cache_write_1h)
    one_hour_from_level = cache_write_1h_rate is not None
    for tier in rates.long_context:
        if prompt > tier.threshold or (rates.threshold_inclusive and prompt == tier.threshold):
            input_rate = input_rate if tier.input is None else tier.input
            output_rate = output_rate if tier.output is None else tier.output
            cache_read_rate = cache_read_rate if tier.cache_read is None else tier.cache_read
            cache_write_rate = cache_write_rate if tier.cache_write is None else tier.cache_write
            one_hour_from_level = tier.cache_write_1h is not None
            cache_write_1h_rate = cache_write_1h_rate if tier.cache_write_1h is None else tier.cache_write_1h
    off_peak = rates.off_peak
    if off_peak is not None and at is not None and off_peak.is_open(at):
        input_rate = input_rate if off_peak.input is None else off_peak.input
        output_rate = output_rate if off_peak.output is None else off_peak.output
        cache_read_rate = cache_read_rate if off_peak.cache_read is None else off_peak.cache_read
        cache_write_rate = cache_write_rate if off_peak.cache_write is None else off_peak.cache_write
    return input_rate, output_rate, cache_read_rate, cache_write_rate, cache_write_1h_rate, one_hour_from_level


def _resolved(rates: Rates, input_rate, output_rate, cache_read_rate, cache_write_rate, cache_write_1h_rate,
              one_hour_from_level: bool) -> tuple:
    """The five rates a request pays from those published: a cache rate left out is the input rate in effect; a
    1-hour write without a rate of its level, the provider's multiple of that input rate, else a 5-minute write's."""
    cache_write_rate = input_rate if cache_write_rate is None else cache_write_rate
    if not one_hour_from_level and rates.cache_write_1h_share_of_input is not None and input_rate is not None:
        cache_write_1h_rate = WORKING.multiply(rates.cache_write_1h_share_of_input, input_rate)
    elif cache_write_1h_rate is None:
        cache_write_1h_rate = cache_write_rate
    return (input_rate, output_rate, input_rate if cache_read_rate is None else cache_read_rate,
            cache_write_rate, cache_write_1h_rate)


def _tier_level(rates: Rates, usage: Usage) -> int | None:
    """The highest long-context threshold the request is above (None: below them all)."""
    prompt, level = usage.prompt_tokens, None
    for tier in rates.long_context:
        if prompt > tier.threshold or (rates.threshold_inclusive and prompt == tier.threshold):
            level = tier.threshold
    return level


def _effective_rates(rates: Rates, usage: Usage) -> tuple[tuple, tuple[bool, ...]]:
    """The five rates this request pays, and for each whether a non-standard service tier fell back to the
    standard rate for want of one (the event says so).

    Batch, flex and priority: the tier's own rate from the price data, at the request's long-context level (its
    base rates below every threshold, its rates for the threshold crossed above one); a kind it lacks is priced,
    for batch, at the provider's published batch share of the standard rate (OpenAI, Anthropic, Google: 50%),
    otherwise at the standard rate."""
    standard = _standard_rates(rates, usage)
    if usage.service_tier == STANDARD:
        return standard, NOT_FALLEN_BACK
    tier = rates.service_tiers.get(usage.service_tier)
    own = (None,) * 5
    if tier is not None:
        level = _tier_level(rates, usage)
        if level is None:
            own = (tier.input, tier.output, tier.cache_read, tier.cache_write, tier.cache_write_1h)
        else:
            match = next((above for above in tier.long_context if above.threshold == level), None)
            if match is not None:
                own = (match.input, match.output, match.cache_read, match.cache_write, match.cache_write_1h)
    share = rates.batch_share if usage.service_tier == BATCH else None
    if share is None:
        return _tier_over_published(rates, usage, own)
    chosen, fallen_back = [], []
    for tier_rate, standard_rate in zip(own, standard):
        if tier_rate is not None:
            chosen.append(tier_rate)
            fallen_back.append(False)
        elif standard_rate is not None:
            chosen.append(WORKING.multiply(share, standard_rate))
            fallen_back.append(False)
        else:
            chosen.append(standard_rate)
            fallen_back.append(True)
    return tuple(chosen), tuple(fallen_back)


def _tier_over_published(rates: Rates, usage: Usage, own: tuple) -> tuple[tuple, tuple[bool, ...]]:
    """A tier without a published share of the standard rates (flex, priority; batch elsewhere): each kind at the
    tier's own rate, else at the standard rate the data publishes (the event says so); then a cache rate neither
    publishes is the input rate of this request, the tier's where it has one (cached tokens bill as ordinary input
    of the tier, as LiteLLM prices them), as a standard request's is the standard input."""
    *published, one_hour_from_level = _published_rates_of_request(rates, usage.prompt_tokens, usage.at)
    merged = [tier_rate if tier_rate is not None else standard_rate for tier_rate, standard_rate in zip(own, published)]
    fell = [tier_rate is None and standard_rate is not None for tier_rate, standard_rate in zip(own, published)]
    one_hour_from_level = one_hour_from_level or own[4] is not None
    # A kind resolved from another is at standard where that one is: a cache rate from the input rate; a 1-hour
    # write from the input rate (the provider's multiple) or from a 5-minute write.
    for kind in (2, 3):
        if merged[kind] is None:
            fell[kind] = fell[0]
    if not one_hour_from_level and rates.cache_write_1h_share_of_input is not None and merged[0] is not None:
        fell[4] = fell[0]
    elif merged[4] is None:
        fell[4] = fell[3]
    return _resolved(rates, *merged, one_hour_from_level), tuple(fell)


NOT_FALLEN_BACK = (False,) * 5
TOKEN_KINDS = ("input", "output", "cache read", "cache write", "1-hour cache write")


def missing_rates(rates: Rates, usage: Usage) -> list[str]:
    """The kinds of token this usage has (a positive count) that the rates leave unpriced, by name: why
    `service_cost` is None for a known service. Empty for a per-unit service with a unit rate."""
    if not rates.is_token_priced:
        return [] if rates.input is not None else ["unit"]
    effective, _ = _effective_rates(rates, usage)
    return [kind for kind, count, rate in zip(TOKEN_KINDS, usage.counts, effective) if count and rate is None]


def priced_at_standard(rates: Rates | None, usage: Usage) -> bool:
    """Whether a batch, flex or priority request paid the standard rate for some of its usage because neither the
    price data nor the provider's published discount gives that tier's rate (the event says so)."""
    if rates is None or usage.service_tier == STANDARD:
        return False
    if not rates.is_token_priced:
        return True  # a per-unit service has no tier prices
    _, fallen_back = _effective_rates(rates, usage)
    return any(count and fell for count, fell in zip(usage.counts, fallen_back))


def token_cost(rates: Rates, usage: Usage) -> Decimal | None:
    """Exact USD cost of an LLM request; None when a positive token count has no rate."""
    effective, _ = _effective_rates(rates, usage)
    total = ZERO
    for count, rate in zip(usage.counts, effective):
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


@dataclass(frozen=True)
class RateOverride:
    """A book's own rates for a service (USD per token; `unit`: per unit of quantity). A rate it names replaces
    the catalog's standard rate of that kind flat, whatever the request's size or time and whatever tier rate the
    price data has (a batch request still gets the provider's published batch share of it); a rate it leaves out
    keeps the catalog's rules."""

    input: Decimal | None = None
    output: Decimal | None = None
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    cache_write_1h: Decimal | None = None
    unit: Decimal | None = None


OVERRIDE_KINDS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")


def _without(block, names: dict):
    return replace(block, **{name: None for name in names if hasattr(block, name)}) if names else block


def with_override(rates: Rates | None, override: RateOverride) -> Rates:
    """The rates a book pays for a service under its override (`rates`: the catalog's, or for a model the catalog
    lacks its provider's published rules alone, `catalog.resolution.provider_rules`). A unit rate prices the
    event's quantity. A per-unit service's `input` is its rate per unit (as the catalog's own is), so an override's
    `input` is too; token kinds do not price it. Token rates replace those kinds flat: the kinds they name leave
    every long-context, off-peak and service-tier rate of the catalog (the provider's published batch share still
    applies to them)."""
    if override.unit is not None:
        return Rates(cost_unit="unit", input=override.unit)
    if rates is not None and not rates.is_token_priced:
        return rates if override.input is None else Rates(cost_unit=rates.cost_unit, input=override.input)
    named = {kind: getattr(override, kind) for kind in OVERRIDE_KINDS if getattr(override, kind) is not None}
    base = rates if rates is not None else Rates(cost_unit=TOKEN_UNIT)
    return replace(
        base, **named,
        long_context=tuple(_without(tier, named) for tier in base.long_context),
        off_peak=_without(base.off_peak, named) if base.off_peak is not None else None,
        service_tiers={name: replace(_without(tier, named), long_context=tuple(
            _without(above, named) for above in tier.long_context)) for name, tier in base.service_tiers.items()},
        cache_write_1h_share_of_input=None if "cache_write_1h" in named else base.cache_write_1h_share_of_input)


def discounted(cost: Decimal | None, percent: Decimal) -> Decimal | None:
    """A cost with `percent` off (a book's discount on its provider's list prices), exact."""
    if cost is None:
        return None
    return WORKING.multiply(cost, WORKING.divide(WORKING.subtract(100, percent), 100))


def event_cost(parts: Iterable[tuple[Rates | None, Usage]]) -> Decimal | None:
    """The cost of an event: the sum of its services, at the stored precision (12 places, half-up).

    None when any service is unresolvable, so a partly priced event is never stored as if complete.
    """
    return event_total(service_cost(rates, usage) for rates, usage in parts)


def event_total(service_costs: Iterable[Decimal | None]) -> Decimal | None:
    """`event_cost` from costs already worked out with `service_cost` (each part priced once). A total too large
    to write at 12 places in the working precision (10^67 USD and more: a quantity may be as large as a binary
    float) comes back whole, for the caller to refuse as beyond what an event may cost."""
    total = ZERO
    for cost in service_costs:
        if cost is None:
            return None
        total = WORKING.add(total, cost)
    if total.adjusted() >= _LARGEST_EXACT_DIGIT:
        return total
    return to_exact(total, context=WORKING)
