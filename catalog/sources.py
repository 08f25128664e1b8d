"""The catalog's source data, read into plain rows (field name -> value) for `catalog_load`.

Three files in `catalog/data/`:
- `litellm_prices.json`: LiteLLM's model prices, reduced by `scripts/refresh_litellm_prices.py`
  (`source: litellm`, token-priced, `is_api` false, rates USD per single token);
- `corrections.json`: reviewed corrections of LiteLLM entries (each with its source and the day it was checked
  against the provider's published pricing), laid over the LiteLLM data before it is read into rows;
- `curated_services.json`: non-LLM API services (`source: curated`, `is_api` true, one USD price per
  `costUnit`, kept in `input_cost`).

Naming (docs/decisions/catalog.md): `provider` is LiteLLM's `litellm_provider`, lowercased, with its
variants folded into one name (`PROVIDER_NAMES`); `canonical_name` is the LiteLLM key lowercased, without
a leading `<provider>/`. So `gpt-4o` is (openai, gpt-4o), `gemini/gemini-2.5-pro` is (google,
gemini-2.5-pro), `azure/gpt-4o` is (azure, gpt-4o). `external_id` is `<provider>/<canonical_name>`:
stable across reloads and unique like the pair itself.
"""
import json
from decimal import Decimal
from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent / "data"
LITELLM_FILE = DATA_DIR / "litellm_prices.json"
CURATED_FILE = DATA_DIR / "curated_services.json"
CORRECTIONS_FILE = DATA_DIR / "corrections.json"

# LiteLLM provider ids that name the same provider (or a sub-API of one) as another id. The request side
# (catalog.resolution) folds a `modelProvider` by the same table, so what the loader folds resolves as sent.
PROVIDER_NAMES = {
    "gemini": "google",
    "text-completion-openai": "openai",
    "text-completion-codestral": "codestral",
    "text-completion-inception": "inception",
    "cohere_chat": "cohere",
    "bedrock_converse": "bedrock",
    "azure_text": "azure",
    "fireworks_ai-embedding-models": "fireworks_ai",
    "vertex_ai_beta": "vertex_ai",
}
# Providers that bill the tier above a long-context threshold from the threshold itself (a prompt of exactly
# the threshold pays the higher rates), as LiteLLM prices them; every other provider, above it only.
INCLUSIVE_THRESHOLD_PROVIDERS = frozenset({"xai"})
# Providers whose price lists publish no cache-read price yet bill cached prompt tokens at a fixed share of
# the input price (Fireworks: half), as LiteLLM prices them.
CACHE_READ_SHARE_OF_INPUT = {"fireworks_ai": Decimal("0.5")}
# Providers' published rules for what the price data may not carry (contract.md "Cost fields of a record"):
# a 1-hour cache write where the entry has no 1-hour rate (Anthropic bills it at 2x the input rate in effect),
# and the batch discount where the entry has no batch rate (OpenAI, Anthropic, Google: 50% of standard; Google's
# for both of its APIs, the Gemini API and Vertex AI, whose batch prediction bills half of online prediction for
# every model it sells, Gemini and partner models alike).
CACHE_WRITE_1H_SHARE_OF_INPUT = {"anthropic": Decimal(2)}
BATCH_SHARE_OF_STANDARD = {"openai": Decimal("0.5"), "anthropic": Decimal("0.5"), "google": Decimal("0.5"),
                           "vertex_ai": Decimal("0.5")}
SERVICE_TIERS = ("standard", "batch", "flex", "priority")

RATE_FIELDS = {  # reduced-file key -> ServiceEntry field
    "input": "input_cost",
    "output": "output_cost",
    "cache_read": "cache_read_cost",
    "cache_write": "cache_write_cost",
}
LONG_CONTEXT_RATES = (*RATE_FIELDS, "cache_write_1h")  # a threshold may also set the 1-hour cache-write rate
ENTRY_FIELDS = ("external_id", "canonical_name", "display_name", "provider", "service_type", *RATE_FIELDS.values(),
                "cache_write_1h_cost", "long_context", "long_context_inclusive", "off_peak", "service_tiers",
                "cost_unit", "context_window", "source", "is_api")


def catalog_provider(litellm_provider: str) -> str:
    provider = litellm_provider.strip().lower()
    if provider.startswith("vertex_ai-"):  # vertex_ai-language-models, vertex_ai-anthropic_models, ...
        return "vertex_ai"
    return PROVIDER_NAMES.get(provider, provider)


def call_provider(litellm_provider: str) -> str:
    """The provider a caller names for a LiteLLM price entry (`custom_llm_provider`): the price map files
    Vertex's models under `vertex_ai-<family>`, but a request goes to `vertex_ai`."""
    provider = litellm_provider.strip().lower()
    return "vertex_ai" if provider.startswith("vertex_ai-") else provider


def catalog_name(key: str, litellm_provider: str) -> str:
    """The LiteLLM key, lowercased, without a leading provider segment (`azure/gpt-4o` -> `gpt-4o`)."""
    name = key.strip().lower()
    raw = litellm_provider.strip().lower()
    for prefix in (raw, catalog_provider(raw), raw.split("-")[0]):
        if name.startswith(prefix + "/"):
            return name[len(prefix) + 1:]
    return name


def _load(path: Path) -> dict:
    with path.open(encoding="utf-8") as handle:
        return json.load(handle, parse_float=Decimal)


def _rate(value) -> Decimal | None:
    """A price exactly as its source writes it (every digit kept), parsed from its text, never through float."""
    return None if value is None else Decimal(str(value))


def _rate_text(value) -> str:
    """A price for a JSON column: a plain decimal string (no exponent), every digit kept."""
    return format(_rate(value), "f")


def _long_context(entry: dict) -> list[dict]:
    """The thresholds as stored (JSON: rates as decimal strings, absent rates left out), ascending."""
    return [{"threshold": int(tier["threshold"]),
             **{name: _rate_text(tier[name]) for name in LONG_CONTEXT_RATES if tier.get(name) is not None}}
            for tier in sorted(entry.get("long_context") or [], key=lambda tier: int(tier["threshold"]))]


def _service_tiers(entry: dict) -> dict:
    """The batch, flex and priority rates as stored: per tier its base rates and its own thresholds."""
    tiers = {}
    for name, block in sorted((entry.get("service_tiers") or {}).items()):
        stored = {rate: _rate_text(block[rate]) for rate in LONG_CONTEXT_RATES if block.get(rate) is not None}
        if block.get("long_context"):
            stored["long_context"] = _long_context(block)
        tiers[name] = stored
    return tiers


def _off_peak(entry: dict) -> dict | None:
    block = entry.get("off_peak")
    if not block:
        return None
    return {"windows": [{"hours": list(window["hours"]), "weekdays": window.get("weekdays")}
                        for window in block["windows"]],
            "weekday_timezone": block.get("weekday_timezone"),
            **{name: _rate_text(block[name]) for name in RATE_FIELDS if block.get(name) is not None}}


def _litellm_row(key: str, entry: dict) -> dict:
    provider = catalog_provider(entry["provider"])
    name = catalog_name(key, entry["provider"])
    row = {
        "external_id": f"{provider}/{name}",
        "canonical_name": name,
        "display_name": key.strip()[-len(name):],  # the name as LiteLLM spells it
        "provider": provider,
        "service_type": entry.get("mode") or "chat",
        "long_context": _long_context(entry),
        "long_context_inclusive": provider in INCLUSIVE_THRESHOLD_PROVIDERS,
        "off_peak": _off_peak(entry),
        "service_tiers": _service_tiers(entry),
        "cache_write_1h_cost": _rate(entry.get("cache_write_1h")),
        "cost_unit": "token",
        "context_window": entry.get("context_window"),
        "source": "litellm",
        "is_api": False,
    }
    row.update({field: _rate(entry.get(key_)) for key_, field in RATE_FIELDS.items()})
    share = CACHE_READ_SHARE_OF_INPUT.get(provider)
    if share is not None and row["cache_read_cost"] is None and row["input_cost"] is not None:
        row["cache_read_cost"] = row["input_cost"] * share
    return row


def _preference(key: str, entry: dict) -> tuple:
    """Among LiteLLM keys that map to one (provider, name), prefer the one LiteLLM's own lookup finds for a
    call naming that provider and model: `<provider>/<name>` first, then the bare key, then the rest (the
    provider's own id before a variant's)."""
    raw = entry["provider"].strip().lower()
    name = catalog_name(key, raw)
    spelled = key.strip().lower()
    return (spelled != f"{call_provider(raw)}/{name}", spelled != name, raw != catalog_provider(raw), key)


def litellm_rows(data: dict) -> list[dict]:
    """One row per (provider, canonical name): current models first, then retired ones not yet present."""
    rows: dict[str, dict] = {}
    for section in ("models", "retired"):
        chosen: dict[str, tuple] = {}
        for key, entry in data.get(section, {}).items():
            row = _litellm_row(key, entry)
            external_id = row["external_id"]
            if external_id in rows:
                continue  # a current model wins over a retired one
            rank = _preference(key, entry)
            if external_id not in chosen or rank < chosen[external_id][0]:
                chosen[external_id] = (rank, row)
        rows.update({external_id: row for external_id, (_, row) in chosen.items()})
    return list(rows.values())


def curated_rows(data: dict) -> list[dict]:
    rows = []
    for service in data["services"]:
        provider = service["provider"].strip().lower()
        name = service["canonicalName"].strip().lower()
        row = {field: None for field in RATE_FIELDS.values()}
        row.update({
            "external_id": f"{provider}/{name}",
            "canonical_name": name,
            "display_name": service["displayName"],
            "provider": provider,
            "service_type": service["serviceType"],
            "input_cost": _rate(service["unitPrice"]),
            "long_context": [],
            "long_context_inclusive": False,
            "off_peak": None,
            "service_tiers": {},
            "cache_write_1h_cost": None,
            "cost_unit": service["costUnit"],
            "context_window": None,
            "source": "curated",
            "is_api": True,
        })
        rows.append(row)
    return rows


def corrections(corrections_file: Path = CORRECTIONS_FILE) -> list[dict]:
    """The reviewed corrections: each `{key, set, source, checked, why}`, `key` a LiteLLM key of the price data."""
    if not corrections_file.exists():
        return []
    return _load(corrections_file)["corrections"]


def corrected(data: dict, reviewed: list[dict]) -> dict:
    """The LiteLLM data with each correction's fields set on the entry it names (current or retired)."""
    sections = {section: dict(data.get(section, {})) for section in ("models", "retired")}
    for correction in reviewed:
        for entries in sections.values():
            if correction["key"] in entries:
                entries[correction["key"]] = {**entries[correction["key"]], **correction["set"]}
    return {**data, **sections}


def corrected_external_ids(reviewed: list[dict] | None = None) -> dict[str, dict]:
    """external id -> the correction applied to that catalog entry."""
    reviewed = corrections() if reviewed is None else reviewed
    data = _load(LITELLM_FILE)
    found = {}
    for correction in reviewed:
        entry = data["models"].get(correction["key"]) or data.get("retired", {}).get(correction["key"])
        if entry is not None:
            found[_litellm_row(correction["key"], entry)["external_id"]] = correction
    return found


def catalog_rows(litellm_file: Path = LITELLM_FILE, curated_file: Path = CURATED_FILE,
                 corrections_file: Path = CORRECTIONS_FILE) -> list[dict]:
    """Every catalog row from the data files: LiteLLM's with the reviewed corrections laid over it; a curated
    service replaces a LiteLLM model of the same name."""
    rows = {row["external_id"]: row for row in litellm_rows(corrected(_load(litellm_file),
                                                                      corrections(corrections_file)))}
    rows.update({row["external_id"]: row for row in curated_rows(_load(curated_file))})
    return list(rows.values())
