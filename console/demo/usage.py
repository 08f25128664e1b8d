"""The demo's 90 days of usage as `POST /v1/usage/record` records: drawn from a fixed seed, so the same `now`
always gives the same records. Models are catalog entries (catalog/data), priced at record time like any
usage; a few records name an in-house model the catalog does not know (stored with cost null, the
`NEEDS_COST_BACKFILL` events that `map-model` fixes).

Weekdays are busier than weekends and every customer grows over the 90 days. Pure: no ORM, no clock.
"""
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Callable

from console.demo.book import DEVELOPERS, MATTERS, NEAR_EMPTY_POOL, NEAR_EMPTY_USED, POOL_MINUTES

DAYS = 90
SEED = 29
TENTH = Decimal("0.1")
CODING_AGENT = "svc-coding-agent"


def _llm(model: str, provider: str, rng: random.Random, input_tokens: tuple[int, int], output_tokens: tuple[int, int],
         cache_read: tuple[int, int] | None = None) -> dict:
    service = {"model": model, "modelProvider": provider, "inputTokens": rng.randint(*input_tokens),
               "outputTokens": rng.randint(*output_tokens)}
    if cache_read:
        service["cacheReadTokens"] = rng.randint(*cache_read)
    return service


def _ticket(rng: random.Random) -> dict:
    return {**_llm("gpt-4o", "openai", rng, (2500, 4500), (300, 900), (0, 2000)),
            "metadata": {"channel": rng.choice(["chat", "chat", "email"])}}


def _small_ticket(rng: random.Random) -> dict:
    return _llm("claude-haiku-4-5", "anthropic", rng, (1500, 3500), (200, 600))


def _conversations(rng: random.Random) -> dict:
    """One event per hourly batch of conversations: quantity is how many the batch held."""
    quantity = rng.randint(8, 30)
    return {**_llm("gpt-4o-mini", "openai", rng, (1200 * quantity, 2000 * quantity), (200 * quantity, 400 * quantity)),
            "quantity": quantity}


def _report(rng: random.Random) -> dict:
    """Multi-service: the model's tokens plus the web searches the report ran."""
    return {"services": [_llm("claude-sonnet-4-5", "anthropic", rng, (20_000, 60_000), (2000, 6000)),
                         {"model": "search", "modelProvider": "tavily", "quantity": rng.randint(5, 15)}]}


def _call(rng: random.Random) -> dict:
    """A phone call: speech to text by the minute plus the model's tokens; quantity is the call's minutes."""
    minutes = Decimal(rng.randint(20, 130)) * TENTH
    return {"quantity": minutes,
            "services": [{"model": "nova-3", "modelProvider": "deepgram", "quantity": minutes},
                         _llm("gpt-4o-mini", "openai", rng, (3000, 9000), (400, 1500))]}


def _review(rng: random.Random) -> dict:
    """A contract review; a quarter of them are tagged with the second matter's number (tags beat rules)."""
    record = _llm("claude-sonnet-4-5", "anthropic", rng, (30_000, 90_000), (2000, 5000))
    if rng.random() < 0.25:
        record["metadata"] = {"matterId": MATTERS[1]["matterNumber"]}
    return record


def _coding(rng: random.Random) -> dict:
    return _llm("claude-sonnet-4-5", "anthropic", rng, (4000, 16_000), (800, 3500), (20_000, 90_000))


UNPRICED_MODEL = "acme-embed-v2"  # the only model of the demo the catalog does not know


def _embedding_job(rng: random.Random) -> dict:
    return {"model": UNPRICED_MODEL, "modelProvider": "acme", "inputTokens": rng.randint(50_000, 200_000)}


@dataclass(frozen=True)
class Stream:
    """One customer's use of one agent's signal: `per_day` events on a weekday at the end of the 90 days."""

    customer: str
    agent: str
    signal: str
    per_day: float
    draw: Callable[[random.Random], dict]
    weekend: float = 0.35  # share of a weekday's volume on Saturdays and Sundays
    last_days: int | None = None  # only in the last N days
    live_tail: int = 0  # this many more events, one a minute up to now


STREAMS = [
    Stream("globex", "support-bot", "tickets_resolved", 9, _ticket, weekend=0.5, live_tail=3),
    Stream("initech", "support-bot", "conversations", 7, _conversations),
    Stream("umbrella-health", "research-agent", "reports_generated", 5, _report),
    Stream("umbrella-health", "research-agent", "embedding_jobs", 1, _embedding_job, last_days=5),
    Stream(NEAR_EMPTY_POOL, "voice-agent", "call_minutes", 11, _call, weekend=0.6),
    Stream("wayne-enterprises", "voice-agent", "call_minutes", 5, _call, weekend=0.6),
    Stream("acme-legal", "contract-reviewer", "documents_reviewed", 4, _review, weekend=0.1),
    Stream("hooli", "support-bot", "tickets_resolved", 6, _small_ticket, weekend=0.5),
    *(Stream(developer, CODING_AGENT, "coding_sessions", per_day, _coding, weekend=0.1)
      for developer, per_day in zip(DEVELOPERS, (6, 10))),
]


def _instants(stream: Stream, rng: random.Random, *, first: datetime, now: datetime) -> list[datetime]:
    """When the stream's events happen: working hours (13:00-23:00 UTC) of each day in [first, now), plus, for
    a stream with `live_tail`, the last few minutes (never before the 1st of the month, whose figures the
    console dashboard shows: they are never all zero, even in the first hours of a month)."""
    month_start = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    instants = [max(now - timedelta(minutes=minutes), month_start) for minutes in range(stream.live_tail, 0, -1)]
    start_day = (now - timedelta(days=DAYS)).replace(hour=0, minute=0, second=0, microsecond=0)
    for offset in range(DAYS + 1):
        day = start_day + timedelta(days=offset)
        if stream.last_days is not None and day < now - timedelta(days=stream.last_days):
            continue
        growth = Decimal("0.7") + Decimal("0.5") * Decimal(offset) / DAYS
        weekday = 1 if day.weekday() < 5 else stream.weekend
        count = int(stream.per_day * weekday * float(growth) + rng.random())
        for _ in range(count):
            instant = day + timedelta(hours=13, seconds=rng.randrange(10 * 3600))
            if first <= instant < now:
                instants.append(instant)
    return sorted(instants)


def _scale_pool_period(records: list[dict], *, period: tuple[datetime, datetime]) -> None:
    """Make the near-empty pool's current period use exactly its share of the pool (calls keep their
    proportions; the minutes stay in tenths)."""
    start, end = period
    calls = [record for record in records if start <= record["at"] < end]
    if not calls:
        return
    target = Decimal(POOL_MINUTES) * Decimal(NEAR_EMPTY_USED)
    drawn = sum(record["quantity"] for record in calls)
    for record in calls:
        record["quantity"] = (record["quantity"] * target / drawn).quantize(TENTH, rounding=ROUND_HALF_UP)
    longest = max(calls, key=lambda record: record["quantity"])
    longest["quantity"] += target - sum(record["quantity"] for record in calls)  # the rounding's remainder
    for record in calls:
        record["services"][0]["quantity"] = record["quantity"]


def usage_records(*, now: datetime, starts: dict[str, datetime], pool_period: tuple[datetime, datetime]) -> list[dict]:
    """Every record of the 90 days before `now`, oldest first, each with its `usageDate` and an `idempotencyKey`.

    `starts` holds, per customer externalId, when its subscription starts (no usage before it); `pool_period`
    is the near-empty pool's current billing period."""
    rng = random.Random(SEED)
    records = []
    for stream in STREAMS:
        first = max(starts.get(stream.customer, now - timedelta(days=DAYS)), now - timedelta(days=DAYS))
        stream_records = [{"at": at, "customerExternalId": stream.customer, "agentCode": stream.agent,
                           "signalName": stream.signal, "environment": "production", **stream.draw(rng)}
                          for at in _instants(stream, rng, first=first, now=now)]
        if stream.customer == NEAR_EMPTY_POOL:
            _scale_pool_period(stream_records, period=pool_period)
        records.extend(stream_records)
    records.sort(key=lambda record: (record["at"], record["customerExternalId"], record["signalName"]))
    for index, record in enumerate(records):
        record["usageDate"] = record.pop("at").isoformat().replace("+00:00", "Z")
        record["idempotencyKey"] = f"demo-{index:05d}"
    return records
