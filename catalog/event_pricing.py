"""Pricing one usage event from resolved catalog entries: the adapter between catalog rows and the pure
cost engine, shared by recording (billing) and cost backfill (customers).

Its value types are NamedTuples rather than frozen dataclasses: as immutable, and quicker to build, which
counts when recording builds a few of them for every record (docs/performance.md)."""
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import NamedTuple

from catalog.costing import Usage, event_total, missing_rates, service_cost
from catalog.models import ServiceEntry
from catalog.resolution import rates_for
from catalog.suggestions import did_you_mean
from config.core.serialization import decimal_text

UNKNOWN_MODEL = "unknown_model"
UNPRICED_USAGE = "unpriced_usage"
OUT_OF_RANGE = "out_of_range"
# The most one event may cost, in USD (docs/decisions/usage-recording.md "Numeric bounds"): an event priced
# beyond it (or with a part beyond it) is refused, not stored, so that event costs stay far inside their
# column and the sums of a book's costs inside any column that holds them.
MAX_EVENT_COST = Decimal(10**6)


class ServiceUsage(NamedTuple):
    """One priced part of an event: a model or API service (normalized names) and how much was used."""

    model: str
    model_provider: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    quantity: Decimal | None = None  # service units for a non-LLM service; None: 1 unit

    @property
    def key(self) -> tuple[str, str]:
        return self.model, self.model_provider

    def engine_usage(self, at: datetime | None = None) -> Usage:
        """The engine's view of this part of an event used at `at` (its usageDate: off-peak windows)."""
        return Usage(input_tokens=self.input_tokens or 0, output_tokens=self.output_tokens or 0,
                     cache_read_tokens=self.cache_read_tokens or 0, cache_write_tokens=self.cache_write_tokens or 0,
                     quantity=self.quantity if self.quantity is not None else Decimal(1), at=at)

    def as_json(self) -> dict:
        return {"model": self.model, "modelProvider": self.model_provider, "inputTokens": self.input_tokens,
                "outputTokens": self.output_tokens, "cacheReadTokens": self.cache_read_tokens,
                "cacheWriteTokens": self.cache_write_tokens, "quantity": decimal_text(self.quantity)}

    @classmethod
    def from_json(cls, part: dict) -> "ServiceUsage":
        quantity = part.get("quantity")
        return cls(part["model"], part["modelProvider"], part.get("inputTokens"), part.get("outputTokens"),
                   part.get("cacheReadTokens"), part.get("cacheWriteTokens"),
                   Decimal(quantity) if quantity is not None else None)


class PricedPart(NamedTuple):
    usage: ServiceUsage
    service: ServiceEntry | None
    cost: Decimal | None


class PricedEvent(NamedTuple):
    parts: tuple[PricedPart, ...]
    total: Decimal | None  # None: unresolvable (the event needs a cost backfill) or beyond MAX_EVENT_COST
    failure_code: str | None = None
    failure_message: list[str] | None = None

    @property
    def storable(self) -> bool:
        """False for an event costing more than MAX_EVENT_COST: it is refused (`out_of_range`), never stored."""
        return self.failure_code != OUT_OF_RANGE

    def services_json(self) -> list[dict]:
        """The parts of a multi-service event as stored on it, each with its own cost."""
        return [{**part.usage.as_json(), "serviceId": str(part.service.pk) if part.service else None,
                 "costUsd": decimal_text(part.cost)} for part in self.parts]


class PriceList:
    """The batch's resolved services and their engine rates, each adapted once."""

    def __init__(self, resolved: Mapping[tuple[str, str], ServiceEntry | None]):
        self.services = resolved
        self.rates = {pair: rates_for(entry) for pair, entry in resolved.items() if entry is not None}


def price_event(parts: Sequence[ServiceUsage], prices: PriceList, *, at: datetime | None = None) -> PricedEvent:
    """Cost of an event used at `at` (its usageDate) whose (model, provider) pairs were resolved once for the
    batch."""
    priced = [PricedPart(usage, prices.services.get(usage.key),
                         service_cost(prices.rates.get(usage.key), usage.engine_usage(at))) for usage in parts]
    total = event_total(part.cost for part in priced)
    costly = [part for part in priced if part.cost is not None and part.cost > MAX_EVENT_COST]
    if costly or (total is not None and total > MAX_EVENT_COST):
        return PricedEvent(tuple(priced), None, OUT_OF_RANGE, [
            f"usageCost: {decimal_text(total if total is not None else costly[0].cost)} USD is more than the "
            f"{decimal_text(MAX_EVENT_COST)} USD one event may cost (the documented maximum); the record is not "
            f"stored."])
    if total is not None:
        return PricedEvent(tuple(priced), total)
    unknown = [p.usage for p in priced if p.service is None]
    if unknown:
        return PricedEvent(tuple(priced), None, UNKNOWN_MODEL, [
            f"model: {u.model!r} from provider {u.model_provider!r} is not in the catalog"
            f"{did_you_mean(u.model, u.model_provider)}; the event is stored "
            f"with cost null until the model is mapped (POST /v1/events/map-model)." for u in unknown])
    return PricedEvent(tuple(priced), None, UNPRICED_USAGE, [
        f"model: {p.usage.model!r} ({p.service.provider}/{p.service.canonical_name}) has no catalog rate for its "
        f"{' and '.join(missing_rates(prices.rates[p.usage.key], p.usage.engine_usage(at)))} "
        f"{'units' if not prices.rates[p.usage.key].is_token_priced else 'tokens'}; the event is stored with cost "
        f"null until the catalog publishes it (a catalog refresh prices it then)."
        for p in priced if p.cost is None])


def unpriced_reason(priced: PricedEvent) -> str:
    """Why an event stored with cost null is unpriced, priced again now (`price_event` with today's catalog and
    aliases): the console shows it beside each such event."""
    if priced.total is not None:
        return "Priceable now with the current catalog: price it again (catalog refresh or the console action)."
    return " ".join(priced.failure_message or [])
