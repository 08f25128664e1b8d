"""Model resolution: which catalog entry prices a (model, modelProvider) pair, for a whole batch at once.

    pairs = [(normalize_model(r["model"]), normalize_provider(r["modelProvider"])) for r in records]
    services = resolve_services(book=book, pairs=pairs)   # one query, whatever the batch size
    entry = services[pair]                                # ServiceEntry, or None: unresolvable
    cost = event_cost([(rates_for(entry) if entry else None, Usage(...))])

`resolve_services` accepts raw or normalized pairs and keys its answer by the normalized pair
(`normalize_model`: trimmed and lowercased; `normalize_provider`: trimmed and lowercased). One statement
reads the book's aliases and the catalog; only active catalog entries resolve.

Order, first match wins (docs/decisions/catalog.md):
1. the book's `ModelAlias` for exactly this (model, provider), when its entry is active;
2. the catalog entry (provider, model);
3. a provider-prefixed id whose prefix names the same provider: `openai/gpt-4o` with `openai` is
   (openai, gpt-4o);
4. the same with a known synonym of the provider (`gemini` -> `google`, `vertex` -> `vertex_ai`, ...) or the
   provider name the catalog loader folds it into (`bedrock_converse` -> `bedrock`, `cohere_chat` -> `cohere`,
   `text-completion-openai` -> `openai`, `vertex_ai_beta` -> `vertex_ai`, ...);
5. a dated snapshot that the catalog lacks, without its date: `gpt-4o-2024-08-06` -> `gpt-4o`,
   `claude-x-20250101` -> `claude-x`, `model@20240620` -> `model`. A dated id that the catalog has
   resolves to itself (step 2), never to the undated model.
"""
import json
import re
from collections.abc import Iterable
from datetime import time
from functools import lru_cache
from decimal import Decimal

from accounts.book_generations import Generation, book_cache
from catalog.costing import TOKEN_UNIT, LongContextRates, OffPeakRates, OffPeakWindow, Rates, TierRates
from catalog.models import ModelAlias, PriceOverride, ServiceEntry
from catalog.sources import BATCH_SHARE_OF_STANDARD, CACHE_WRITE_1H_SHARE_OF_INPUT, catalog_provider
from core.database import WholeRows, prepared_cursor
from core.scoping import book_sql

PROVIDER_SYNONYMS = {
    "gemini": "google",
    "google-ai-studio": "google",
    "google_ai_studio": "google",
    "vertex": "vertex_ai",
    "vertexai": "vertex_ai",
    "google-vertex": "vertex_ai",
    "google_vertex": "vertex_ai",
    "amazon-bedrock": "bedrock",
    "aws-bedrock": "bedrock",
    "azure-openai": "azure",
    "azure_openai": "azure",
    "mistralai": "mistral",
    "x-ai": "xai",
    "together": "together_ai",
    "togetherai": "together_ai",
    "fireworks": "fireworks_ai",
}
DATE_SUFFIX = re.compile(r"[-@](?:\d{4}-\d{2}-\d{2}|\d{8})$")

Pair = tuple[str, str]


def normalize_model(model: str) -> str:
    return (model or "").strip().lower()


def normalize_provider(provider: str) -> str:
    return (provider or "").strip().lower()


def too_long_once_normalized(model_class, **names: str) -> list[str]:
    """400 messages for the names (by API field: `model`, `modelProvider`) longer than `model_class`'s columns
    once normalized: lower-casing can lengthen a text ("İ" becomes two characters), after the field's own length
    was checked."""
    problems = []
    for field, name in names.items():
        limit = model_class._meta.get_field(NAME_COLUMNS[field]).max_length
        if len(name) > limit:
            problems.append(f"{field}: {too_long_lower_cased(limit)}")
    return problems


def too_long_lower_cased(limit: int) -> str:
    return (f"Ensure this field has no more than {limit} characters once lower-cased (models and providers are "
            f"stored lower-cased).")


NAME_COLUMNS = {"model": "model", "modelProvider": "model_provider"}


def _providers(provider: str) -> list[str]:
    """The provider as sent, its synonym, and the name the catalog loader folds it into (`bedrock_converse`,
    `cohere_chat`, `text-completion-openai`, `vertex_ai_beta`, `vertex_ai-*`...: catalog.sources)."""
    return list(dict.fromkeys(name for name in (provider, PROVIDER_SYNONYMS.get(provider), catalog_provider(provider))
                              if name))


def candidates(model: str, provider: str) -> list[Pair]:
    """Catalog keys (provider, canonical_name) to try for a normalized pair, best first."""
    providers = _providers(provider)
    names = [model]
    prefix, slash, rest = model.partition("/")
    if slash and rest and (prefix in providers or PROVIDER_SYNONYMS.get(prefix) in providers):
        names.append(rest)
    ordered = [(name_provider, name) for name in names for name_provider in providers]
    undated = [(name_provider, DATE_SUFFIX.sub("", name)) for name_provider, name in ordered
               if DATE_SUFFIX.search(name)]
    return list(dict.fromkeys(ordered + undated))


# The book's aliases of the wanted pairs (with their entries) and the catalog entries of every candidate
# key, in ONE statement: the hot path of recording calls this once per batch, and the ORM spent longer
# compiling two queries than PostgreSQL answering them. The alias branch is scoped to the book (`book_sql`).
# The arrays are bound in binary (`%b`), which psycopg writes without quoting each element.
_ENTRY = WholeRows(ServiceEntry, "s")


def _resolve_statement(book, wanted: list[Pair], flat: list[Pair], with_overrides: bool) -> tuple[str, list]:
    alias_in_book, book_params = book_sql(book, "a.book_id")
    # The book's price overrides ride in the same statement (one round trip per batch, docs/performance.md): a
    # last row whose entry columns are null carries them as one JSON array.
    overrides_in_book, override_params = book_sql(book, "o.book_id")
    overrides = (f"""
        UNION ALL
        SELECT {', '.join(['NULL'] * _ENTRY.width)}, NULL, NULL,
               (SELECT json_agg(o)::text FROM {PriceOverride._meta.db_table} o WHERE {overrides_in_book})"""
                 if with_overrides else "")
    sql = f"""
        SELECT {_ENTRY.select}, a.model, a.model_provider, NULL
        FROM {ServiceEntry._meta.db_table} s JOIN {ModelAlias._meta.db_table} a ON a.service_id = s.id
        WHERE {alias_in_book} AND s.is_active
          AND (a.model, a.model_provider) IN (SELECT * FROM unnest(%b::text[], %b::text[]))
        UNION ALL
        SELECT {_ENTRY.select}, NULL, NULL, NULL FROM {ServiceEntry._meta.db_table} s
        WHERE s.is_active AND (s.provider, s.canonical_name) IN (SELECT * FROM unnest(%b::text[], %b::text[])){overrides}
    """.strip()
    return sql, [*book_params, [model for model, _ in wanted], [provider for _, provider in wanted],
                 [provider for provider, _ in flat], [name for _, name in flat],
                 *(override_params if with_overrides else [])]


def resolve_services(*, book, pairs: Iterable[Pair]) -> dict[Pair, ServiceEntry | None]:
    """The catalog entry for each (model, provider) pair, keyed by the normalized pair; None if unknown."""
    return _resolve(book, pairs, with_overrides=False)[0]


# What this process has resolved, per book at its generation (accounts/book_generations.py): each normalized
# pair -> its entry or None, and `_OVERRIDES` -> the book's price overrides. The entries are shared: read only.
resolved_prices = book_cache()
_OVERRIDES = "overrides"  # no pair is a string


def resolve_prices(*, book, pairs: Iterable[Pair], generation: Generation | None = None
                   ) -> tuple[dict[Pair, ServiceEntry | None], list[PriceOverride]]:
    """`resolve_services`, and the book's price overrides, in one statement: what pricing a batch needs. With
    `generation` (the book's generations read with the request's key, for a caller that has changed none of
    these records: recording), from this process's cache when it resolved every pair at it: no statement."""
    wanted = {(normalize_model(model), normalize_provider(provider)) for model, provider in pairs}
    held = resolved_prices.entries(book, generation)
    if held and _OVERRIDES in held and wanted <= held.keys():
        return {pair: held[pair] for pair in sorted(wanted)}, held[_OVERRIDES]
    resolved, overrides = _resolve(book, wanted, with_overrides=True)
    resolved_prices.remember(book, generation, {**resolved, _OVERRIDES: overrides})
    return resolved, overrides


def _resolve(book, pairs: Iterable[Pair], *, with_overrides: bool) -> tuple[dict, list]:
    wanted = sorted({(normalize_model(model), normalize_provider(provider)) for model, provider in pairs})
    if not wanted:
        return {}, []
    keys = {pair: candidates(*pair) for pair in wanted}
    flat = sorted({key for pair_keys in keys.values() for key in pair_keys})
    aliases, catalog, overrides = _read(book, wanted, flat, with_overrides)
    resolved = dict.fromkeys(wanted)
    for pair, pair_keys in keys.items():
        resolved[pair] = aliases.get(pair) or next((catalog[key] for key in pair_keys if key in catalog), None)
    return resolved, overrides


def _read(book, wanted: list[Pair], flat: list[Pair], with_overrides: bool) -> tuple[dict, dict, list]:
    """(the book's active aliases by pair, the active catalog entries by (provider, name), its overrides)."""
    aliases, catalog, overrides = {}, {}, []
    with prepared_cursor() as cursor:
        cursor.execute(*_resolve_statement(book, wanted, flat, with_overrides))
        rows = cursor.fetchall()
    for row in rows:
        alias_model, alias_provider, overrides_json = row[_ENTRY.width:]
        if row[0] is None:  # the overrides' row
            overrides = _overrides(overrides_json)
            continue
        entry = _ENTRY.instance(row)
        if alias_model is not None:
            aliases[(alias_model, alias_provider)] = entry
        else:
            catalog[(entry.provider, entry.canonical_name)] = entry
    return aliases, catalog, overrides


_OVERRIDE_FIELDS = {field.attname: field for field in PriceOverride._meta.concrete_fields}


def _overrides(text: str | None) -> list[PriceOverride]:
    """Price overrides from the JSON PostgreSQL writes of their rows (numbers read as the decimals they spell)."""
    overrides = []
    for row in json.loads(text, parse_float=Decimal) if text else ():
        values = {name: None if value is None else _OVERRIDE_FIELDS[name].to_python(value)
                  for name, value in row.items() if name in _OVERRIDE_FIELDS}
        overrides.append(PriceOverride(**values))
    return overrides


def _thresholds(tiers) -> tuple[LongContextRates, ...]:
    return tuple(LongContextRates(threshold=int(tier["threshold"]),
                                  **{name: _decimal(tier.get(name)) for name in THRESHOLD_RATE_NAMES})
                 for tier in tiers or ())


def rates_for(entry: ServiceEntry) -> Rates:
    """The cost engine's view of a catalog entry, with its provider's published rules (1-hour cache writes, the
    batch discount) where the price data has no rate."""
    long_context = _thresholds(_json(entry.long_context))
    service_tiers = {name: TierRates(**{rate: _decimal(block.get(rate)) for rate in THRESHOLD_RATE_NAMES},
                                     long_context=_thresholds(block.get("long_context")))
                     for name, block in (_json(entry.service_tiers) or {}).items()}
    off_peak = None
    block = _json(entry.off_peak)
    if block:
        off_peak = OffPeakRates(
            windows=tuple(OffPeakWindow(hours=tuple(_hours(span) for span in window["hours"]),
                                        weekdays=frozenset(window["weekdays"]) if window.get("weekdays") else None)
                          for window in block["windows"]),
            weekday_timezone=block.get("weekday_timezone"),
            **{name: _decimal(block.get(name)) for name in RATE_NAMES})
    return Rates(cost_unit=entry.cost_unit, input=entry.input_cost, output=entry.output_cost,
                 cache_read=entry.cache_read_cost, cache_write=entry.cache_write_cost, long_context=long_context,
                 threshold_inclusive=entry.long_context_inclusive, off_peak=off_peak,
                 cache_write_1h=entry.cache_write_1h_cost, service_tiers=service_tiers,
                 cache_write_1h_share_of_input=CACHE_WRITE_1H_SHARE_OF_INPUT.get(entry.provider),
                 batch_share=BATCH_SHARE_OF_STANDARD.get(entry.provider))


def catalog_provider_name(provider: str) -> str:
    """The catalog's name of a normalized provider name: its synonyms and the names the catalog loader folds count
    as it (`google_ai_studio` and `gemini` are `google`, `mistralai` is `mistral`), as records resolve them."""
    return catalog_provider(PROVIDER_SYNONYMS.get(provider, provider))


@lru_cache(maxsize=256)
def provider_rules(provider: str) -> Rates:
    """Token rates without a rate, with the provider's published rules (1-hour cache writes, the batch discount):
    what a book's override of a model the catalog lacks adds its rates to."""
    name = catalog_provider_name(provider)
    return Rates(cost_unit=TOKEN_UNIT, cache_write_1h_share_of_input=CACHE_WRITE_1H_SHARE_OF_INPUT.get(name),
                 batch_share=BATCH_SHARE_OF_STANDARD.get(name))


RATE_NAMES = ("input", "output", "cache_read", "cache_write")
THRESHOLD_RATE_NAMES = (*RATE_NAMES, "cache_write_1h")


def _json(value):
    """A JSON column's value: an entry built from a raw row (`_read`, `WholeRows`) holds its text, as psycopg
    hands jsonb to Django; one loaded through the ORM, the decoded value."""
    return json.loads(value) if isinstance(value, str) else value


def _decimal(text) -> Decimal | None:
    return None if text is None else Decimal(str(text))


def _hours(span: str) -> tuple[time, time]:
    """"HH:MM-HH:MM" -> (start, end), UTC times of day."""
    start, end = (time.fromisoformat(part.strip()) for part in span.split("-"))
    return start, end
