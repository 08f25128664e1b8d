"""The catalog's source data, read into plain rows (field name -> value) for `catalog_load`.

Two files in `catalog/data/`:
- `litellm_prices.json`: LiteLLM's model prices, reduced by `scripts/refresh_litellm_prices.py`
  (`source: litellm`, token-priced, `is_api` false, rates USD per single token).
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

from config.core.money import to_exact

DATA_DIR = Path(__file__).resolve().parent / "data"
LITELLM_FILE = DATA_DIR / "litellm_prices.json"
CURATED_FILE = DATA_DIR / "curated_services.json"

# LiteLLM provider ids that name the same provider (or a sub-API of one) as another id.
PROVIDER_NAMES = {
    "gemini": "google",
    "text-completion-openai": "openai",
    "text-completion-codestral": "codestral",
    "text-completion-inception": "inception",
    "cohere_chat": "cohere",
    "bedrock_converse": "bedrock",
    "azure_text": "azure",
    "fireworks_ai-embedding-models": "fireworks_ai",
}

RATE_FIELDS = {  # reduced-file key -> ServiceEntry field
    "input": "input_cost",
    "output": "output_cost",
    "cache_read": "cache_read_cost",
    "cache_write": "cache_write_cost",
    "input_above_threshold": "input_cost_above_threshold",
    "output_above_threshold": "output_cost_above_threshold",
    "cache_read_above_threshold": "cache_read_cost_above_threshold",
    "cache_write_above_threshold": "cache_write_cost_above_threshold",
}
ENTRY_FIELDS = ("external_id", "canonical_name", "display_name", "provider", "service_type", *RATE_FIELDS.values(),
                "long_context_threshold", "cost_unit", "context_window", "source", "is_api")


def catalog_provider(litellm_provider: str) -> str:
    provider = litellm_provider.strip().lower()
    if provider.startswith("vertex_ai-"):  # vertex_ai-language-models, vertex_ai-anthropic_models, ...
        return "vertex_ai"
    return PROVIDER_NAMES.get(provider, provider)


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
    """A price at the stored precision (12 places, half-up), parsed from its text, never through float."""
    return None if value is None else to_exact(Decimal(str(value)))


def _litellm_row(key: str, entry: dict) -> dict:
    provider = catalog_provider(entry["provider"])
    name = catalog_name(key, entry["provider"])
    row = {
        "external_id": f"{provider}/{name}",
        "canonical_name": name,
        "display_name": key.strip()[-len(name):],  # the name as LiteLLM spells it
        "provider": provider,
        "service_type": entry.get("mode") or "chat",
        "long_context_threshold": entry.get("long_context_threshold"),
        "cost_unit": "token",
        "context_window": entry.get("context_window"),
        "source": "litellm",
        "is_api": False,
    }
    row.update({field: _rate(entry.get(key_)) for key_, field in RATE_FIELDS.items()})
    return row


def _preference(key: str, entry: dict) -> tuple:
    """Among LiteLLM keys that map to one (provider, name), prefer the provider's own id, then the bare key."""
    raw = entry["provider"].strip().lower()
    return (raw != catalog_provider(raw), "/" in key, key)


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
            "long_context_threshold": None,
            "cost_unit": service["costUnit"],
            "context_window": None,
            "source": "curated",
            "is_api": True,
        })
        rows.append(row)
    return rows


def catalog_rows(litellm_file: Path = LITELLM_FILE, curated_file: Path = CURATED_FILE) -> list[dict]:
    """Every catalog row from the data files; a curated service replaces a LiteLLM model of the same name."""
    rows = {row["external_id"]: row for row in litellm_rows(_load(litellm_file))}
    rows.update({row["external_id"]: row for row in curated_rows(_load(curated_file))})
    return list(rows.values())
