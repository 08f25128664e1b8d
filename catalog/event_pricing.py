"""Pricing one usage event from resolved catalog entries: the adapter between catalog rows and the pure
cost engine, shared by recording (billing) and cost backfill (customers).

Its value types are NamedTuples rather than frozen dataclasses: as immutable, and quicker to build, which
counts when recording builds a few of them for every record (docs/performance.md)."""
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from decimal import Decimal
from typing import NamedTuple

from catalog.costing import (STANDARD, RateOverride, Rates, Usage, discounted, event_total, missing_rates,
                             priced_at_standard, service_cost, with_override)
from catalog.models import PriceOverride, ServiceEntry
from catalog.resolution import provider_rules, rates_for
from catalog.suggestions import did_you_mean
from core.serialization import decimal_text

UNKNOWN_MODEL = "unknown_model"
UNPRICED_USAGE = "unpriced_usage"
OUT_OF_RANGE = "out_of_range"
# The most one event may cost, in USD (docs/decisions/usage-recording.md "Numeric bounds"): an event priced
# beyond it (or with a part beyond it) is refused, not stored, so that event costs stay far inside their
# column and the sums of a book's costs inside any column that holds them.
MAX_EVENT_COST = Decimal(10**6)


# Why an event that names neither a model nor services is unpriced: recording never stores one (a record takes
# one of the two shapes), so it was written outside the API, and nothing can price it.
NAMES_NOTHING = ("The event names neither a model nor services (it was written outside the API): nothing can "
                 "price it.")


class ServiceUsage(NamedTuple):
    """One priced part of an event: a model or API service (normalized names) and how much was used."""

    model: str
    model_provider: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    quantity: Decimal | None = None  # service units for a non-LLM service; None: 1 unit
    cache_write_1h_tokens: int | None = None  # 1-hour cache writes (cache_write_tokens: 5-minute ones)
    service_tier: str | None = None  # batch, flex or priority; None: standard

    @property
    def key(self) -> tuple[str, str]:
        return self.model, self.model_provider

    def engine_usage(self, at: datetime | None = None) -> Usage:
        """The engine's view of this part of an event used at `at` (its usageDate: off-peak windows)."""
        return Usage(input_tokens=self.input_tokens or 0, output_tokens=self.output_tokens or 0,
                     cache_read_tokens=self.cache_read_tokens or 0, cache_write_tokens=self.cache_write_tokens or 0,
                     quantity=self.quantity if self.quantity is not None else Decimal(1), at=at,
                     cache_write_1h_tokens=self.cache_write_1h_tokens or 0,
                     service_tier=self.service_tier or STANDARD)

    def as_json(self) -> dict:
        return {"model": self.model, "modelProvider": self.model_provider, "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens, "cacheReadTokens": self.cache_read_tokens,
                "cacheWriteTokens": self.cache_write_tokens, "cacheWrite1hTokens": self.cache_write_1h_tokens,
                "serviceTier": self.service_tier or STANDARD, "quantity": decimal_text(self.quantity)}

    @classmethod
    def from_json(cls, part: dict) -> "ServiceUsage":
        quantity = part.get("quantity")
        tier = part.get("serviceTier")
        return cls(part["model"], part["modelProvider"], part.get("inputTokens"), part.get("outputTokens"),
                   part.get("cacheReadTokens"), part.get("cacheWriteTokens"),
                   Decimal(quantity) if quantity is not None else None, part.get("cacheWrite1hTokens"),
                   None if tier in (None, STANDARD) else tier)


class PricedPart(NamedTuple):
    usage: ServiceUsage
    service: ServiceEntry | None
    cost: Decimal | None
    rates: Rates | None = None  # the rates it was priced with (the book's override applied)
    override: PriceOverride | None = None  # the book's price override that priced it
    priced_at_standard: bool = False  # a batch/flex/priority part without its tier's rate: standard rates


class PricedEvent(NamedTuple):
    parts: tuple[PricedPart, ...]
    total: Decimal | None  # None: unresolvable (the event needs a cost backfill) or beyond MAX_EVENT_COST
    failure_code: str | None = None
    failure_message: list[str] | None = None

    @property
    def priced_at_standard(self) -> bool:
        for part in self.parts:  # a loop rather than any(): no generator for each recorded event
            if part.priced_at_standard:
                return True
        return False

    @property
    def storable(self) -> bool:
        """False for an event costing more than MAX_EVENT_COST: it is refused (`out_of_range`), never stored."""
        return self.failure_code != OUT_OF_RANGE

    def services_json(self) -> list[dict]:
        """The parts of a multi-service event as stored on it, each with its own cost."""
        return [{**part.usage.as_json(), "serviceId": str(part.service.pk) if part.service else None,
                 "costUsd": decimal_text(part.cost), "pricedAtStandardTier": part.priced_at_standard,
                 "priceOverrideId": str(part.override.pk) if part.override else None} for part in self.parts]


class PriceList:
    """The batch's resolved services and their engine rates, each adapted once, and the book's price overrides
    (contract.md "Price overrides": the most specific one in effect at an event's date wins: the service's, then
    the model's, then its provider's discount)."""

    def __init__(self, resolved: Mapping[tuple[str, str], ServiceEntry | None],
                 overrides: Sequence[PriceOverride] = ()):
        self.services = resolved
        self.rates = {pair: rates_for(entry) for pair, entry in resolved.items() if entry is not None}
        self.overrides: dict[tuple, list[PriceOverride]] = {}
        # Latest first; one without `effective_from` (every date) last, in effect where no dated one is.
        for override in sorted(overrides, key=_since, reverse=True):
            self.overrides.setdefault(override_key(override), []).append(override)

    def _in_effect(self, key: tuple, at: datetime | None) -> PriceOverride | None:
        return next((o for o in self.overrides.get(key, ())
                     if o.effective_from is None or (at is not None and o.effective_from <= at)), None)

    def part_rates(self, usage: ServiceUsage, at: datetime | None) -> tuple:
        """(service, rates, override, discount percent) for one part of an event dated `at`."""
        service = self.services.get(usage.key)
        rates = self.rates.get(usage.key)
        if not self.overrides:
            return service, rates, None, None
        override = ((self._in_effect(("service", service.pk), at) if service is not None else None)
                    or self._in_effect(("model", *usage.key), at))
        if override is not None:
            base = rates if rates is not None else provider_rules(usage.model_provider)
            return service, with_override(base, override_rates(override)), override, None
        if service is not None:
            discount = self._in_effect(("provider", service.provider), at)
            if discount is not None:
                return service, rates, discount, discount.discount_percent
        return service, rates, None, None


def _since(override: PriceOverride) -> datetime:
    return override.effective_from or datetime.min.replace(tzinfo=timezone.utc)


def override_key(override: PriceOverride) -> tuple:
    if override.service_id is not None:
        return ("service", override.service_id)
    if override.model is not None:
        return ("model", override.model, override.model_provider)
    return ("provider", override.model_provider)


def override_rates(override: PriceOverride) -> RateOverride:
    return RateOverride(input=override.input_cost, output=override.output_cost, cache_read=override.cache_read_cost,
                        cache_write=override.cache_write_cost, cache_write_1h=override.cache_write_1h_cost,
                        unit=override.unit_cost)


def _price_part(usage: ServiceUsage, prices: PriceList, at: datetime | None) -> PricedPart:
    if prices.overrides:
        service, rates, override, discount = prices.part_rates(usage, at)
    else:  # the usual case: a book without overrides (recording prices every record here)
        key = usage.key
        service, rates, override, discount = prices.services.get(key), prices.rates.get(key), None, None
    engine_usage = usage.engine_usage(at)
    cost = service_cost(rates, engine_usage)
    if discount is not None:
        cost = discounted(cost, discount)
    if usage.service_tier is None:
        return PricedPart(usage, service, cost, rates, override)
    return PricedPart(usage, service, cost, rates, override,
                      cost is not None and priced_at_standard(rates, engine_usage))


def price_event(parts: Sequence[ServiceUsage], prices: PriceList, *, at: datetime | None = None) -> PricedEvent:
    """Cost of an event used at `at` (its usageDate) whose (model, provider) pairs were resolved once for the
    batch. An event of no parts is unpriced (`NAMES_NOTHING`), never free."""
    if not parts:
        return PricedEvent((), None, UNPRICED_USAGE, [NAMES_NOTHING])
    priced = [_price_part(usage, prices, at) for usage in parts]
    total = event_total(part.cost for part in priced)
    costly = [part for part in priced if part.cost is not None and part.cost > MAX_EVENT_COST]
    if costly or (total is not None and total > MAX_EVENT_COST):
        return PricedEvent(tuple(priced), None, OUT_OF_RANGE, [
            f"usageCost: {decimal_text(total if total is not None else costly[0].cost)} USD is more than the "
            f"{decimal_text(MAX_EVENT_COST)} USD one event may cost (the documented maximum); the record is not "
            f"stored."])
    if total is not None:
        return PricedEvent(tuple(priced), total)
    unknown = [p.usage for p in priced if p.rates is None]
    if unknown:
        return PricedEvent(tuple(priced), None, UNKNOWN_MODEL,
                           [_not_in_catalog(usage, MAP_MODEL_BY_API) for usage in unknown])
    return PricedEvent(tuple(priced), None, UNPRICED_USAGE, [
        f"model: {p.usage.model!r} ({_named(p)}) has no {'catalog ' if p.override is None else ''}rate for its "
        f"{' and '.join(missing_rates(p.rates, p.usage.engine_usage(at)))} "
        f"{'units' if not p.rates.is_token_priced else 'tokens'}; the event is stored with cost "
        f"null until the catalog publishes it (a catalog refresh prices it then) or the book prices it "
        f"(POST /v1/price-overrides)."
        for p in priced if p.cost is None])


# How a model the catalog lacks gets mapped, as the API's answers say it; the console names its own action.
MAP_MODEL_BY_API = "POST /v1/events/map-model"


def _not_in_catalog(usage: ServiceUsage, how_to_map: str) -> str:
    return (f"model: {usage.model!r} from provider {usage.model_provider!r} is not in the catalog"
            f"{did_you_mean(usage.model, usage.model_provider)}; the event is stored with cost null until the "
            f"model is mapped ({how_to_map}).")


def _named(part: PricedPart) -> str:
    if part.service is not None:
        return f"{part.service.provider}/{part.service.canonical_name}"
    return f"the book's price override for {part.usage.model_provider}/{part.usage.model}"


def standard_tier_reason(priced: PricedEvent) -> str:
    """Why a batch, flex or priority event was priced at standard rates (the console's "why" column)."""
    return " ".join(
        f"{part.usage.model_provider}/{part.usage.model}: no {part.usage.service_tier} rate in the price data and no "
        f"published {part.usage.service_tier} discount of the provider; priced at the standard rate."
        for part in priced.parts if part.priced_at_standard)


def unpriced_reason(priced: PricedEvent, *, how_to_map: str = MAP_MODEL_BY_API) -> str:
    """Why an event stored with cost null is unpriced, priced again now (`price_event` with today's catalog and
    aliases): the console shows it beside each such event, a model the catalog lacks with `how_to_map` it."""
    if priced.total is not None:
        return "Priceable now with the current catalog: price it again (catalog refresh or the console action)."
    if priced.failure_code == UNKNOWN_MODEL:
        return " ".join(_not_in_catalog(part.usage, how_to_map) for part in priced.parts if part.rates is None)
    return " ".join(priced.failure_message or [])
