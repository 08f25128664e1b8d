#!/usr/bin/env python3
"""Differential check of the cost engine against LiteLLM's own cost functions.

    make litellm-diff                      # makes var/litellm-venv (LiteLLM pinned), then runs this
    .venv/bin/python bench/litellm_diff.py [--litellm-python var/litellm-venv/bin/python] [--json out.json]

Over a grid of (model, tokens, cache tokens, instant) cases across the major providers, each case is priced
twice on the same price data (the LiteLLM release the catalog file was reduced from):
- ours: the catalog entry the service resolves for (model, provider) as a caller sends them, from the rows
  `load_catalog` writes (catalog.sources), priced by the pure engine (catalog.costing) at the case's instant,
  rounded to the 12 places an event stores;
- LiteLLM's: `litellm.cost_per_token` in LiteLLM's own virtualenv (bench/litellm_costs.py), the billing
  instant pinned to the case's.

A case is equal when the two differ by at most 1e-9 USD. Every other case must fall in one of the deliberate
differences listed in `EXPLAINED` (and in docs/decisions/catalog.md, "Differential check against LiteLLM");
the script exits 1 if any case is unexplained. LiteLLM is never imported here: it is no dependency of the
service.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LITELLM_PYTHON = ROOT / "var" / "litellm-venv" / "bin" / "python"
TOLERANCE = Decimal("1e-9")
# A float carries 53 bits: LiteLLM's arithmetic on rates and counts loses about 1e-16 of the cost per step.
FLOAT_RELATIVE = Decimal("1e-13")

# Providers a caller names (LiteLLM's `custom_llm_provider`) and how many of their models the grid samples;
# the models the issue names are always in.
SAMPLED_PROVIDERS = {
    "openai": 16, "anthropic": 10, "gemini": 10, "vertex_ai": 14, "bedrock": 6, "bedrock_converse": 6, "azure": 8,
    "azure_ai": 4, "deepseek": 16, "xai": 8, "mistral": 6, "groq": 6, "cohere_chat": 3, "together_ai": 5,
    "fireworks_ai": 6, "dashscope": 8, "perplexity": 4, "openrouter": 6, "tencent": 4, "kyma": 3, "volcengine": 4,
    "text-completion-openai": 2, "databricks": 4, "deepinfra": 3, "zai": 4, "moonshot": 3,
}
NAMED = ["gpt-4o", "gpt-4o-mini", "gpt-3.5-turbo", "o3", "gpt-5.4", "claude-sonnet-4-5", "gemini/gemini-2.5-pro",
         "gemini-2.5-pro", "gemini/gemini-exp-1206", "deepseek/deepseek-chat", "deepseek/deepseek-v4-flash",
         "deepseek/deepseek-v4-pro", "tencent/deepseek-v4-pro-0813", "xai/grok-4", "kyma/qwen3.7-flash",
         "dashscope/qwen-flash", "dashscope/qwen-plus-2025-07-28", "glm-5.3-flashx"]
# (input not from the cache, output, cache read, cache write)
TOKEN_SHAPES = [
    (1_000, 500, 0, 0), (12_000, 800, 3_000, 0), (5_000, 1_000, 0, 7_000), (40_000, 2_000, 20_000, 10_000),
    (150_000, 4_000, 60_000, 0), (30_000, 0, 0, 0), (0, 800, 5_000, 0), (0, 1_000, 0, 0),
]
# Provider spellings a caller may use that the catalog loader folds (resolved on the request side alike).
ALIASED_PROVIDERS = {"vertex_ai": "vertex_ai_beta"}
# Instants across a week (Mon 2026-01-05 .. Sun 2026-01-11) and the day, for the off-peak windows.
INSTANTS = [datetime(2026, 1, 5, tzinfo=timezone.utc) + timedelta(days=day, hours=hour, minutes=minute)
            for day, hour, minute in [(0, 0, 30), (0, 8, 0), (1, 3, 0), (1, 5, 0), (2, 9, 59), (2, 10, 0),
                                      (3, 16, 45), (4, 23, 59), (5, 8, 0), (6, 12, 0), (2, 16, 30), (0, 1, 0)]]


def django_setup():
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    django.setup()


def call_provider(litellm_provider: str) -> str:
    """The provider a caller names for a price-map entry: LiteLLM's map files Vertex's models under
    `vertex_ai-<family>`, but a call goes to `vertex_ai`."""
    return "vertex_ai" if litellm_provider.startswith("vertex_ai-") else litellm_provider


def sample_models(price_data: dict) -> list[tuple[str, dict]]:
    """(price-map key, entry): the named models plus an even sample of each provider's current models."""
    models = price_data["models"]
    by_provider = defaultdict(list)
    for key in sorted(models):
        by_provider[call_provider(models[key]["provider"])].append(key)
    chosen = [key for key in NAMED if key in models]
    for provider, count in SAMPLED_PROVIDERS.items():
        keys = by_provider.get(provider, [])
        step = max(1, len(keys) // count)
        chosen += keys[::step][:count]
    # Every model whose price data has off-peak windows, several thresholds or a tier table.
    chosen += [key for key, entry in models.items()
               if entry.get("off_peak") or len(entry.get("long_context", [])) > 1 or entry.get("tiered")]
    return [(key, models[key]) for key in dict.fromkeys(chosen)]


def thresholds_of(entry: dict) -> list[int]:
    return sorted({tier["threshold"] for tier in entry.get("long_context", [])})


def grid(price_data: dict) -> list[dict]:
    from catalog.sources import catalog_name

    cases = []
    for model_index, (key, entry) in enumerate(sample_models(price_data)):
        provider = call_provider(entry["provider"])
        shapes = list(TOKEN_SHAPES)
        for threshold in thresholds_of(entry):
            shapes += [(threshold - 2_000, 700, 1_000, 1_000), (threshold + 1 - 2_000, 700, 1_000, 1_000),
                       (threshold + 50_000, 700, 0, 0)]
        if model_index % 10 == 0:
            shapes.append((10**13 + 7, 3 * 10**12 + 1, 0, 0))  # far past float's exact integers
        instants = INSTANTS if entry.get("off_peak") else None
        providers = [provider] + ([ALIASED_PROVIDERS[provider]] if provider in ALIASED_PROVIDERS else [])
        for shape_index, (input_tokens, output, cache_read, cache_write) in enumerate(shapes):
            for instant in instants or [INSTANTS[(model_index + shape_index) % len(INSTANTS)]]:
                for spelling in providers:
                    cases.append({
                        "id": f"{len(cases)}", "key": key, "model": catalog_name(key, entry["provider"]),
                        "provider": spelling, "input": input_tokens, "output": output, "cache_read": cache_read,
                        "cache_write": cache_write, "at": instant.isoformat(),
                    })
    return cases


class Catalog:
    """The catalog as `load_catalog` writes it, resolved as recording resolves a (model, provider) pair,
    without a database: the same rows, the same candidate keys, the same adapter to the engine."""

    def __init__(self, *, corrected: bool = True):
        from catalog.models import ServiceEntry
        from catalog.sources import CORRECTIONS_FILE, catalog_rows

        rows = catalog_rows(corrections_file=CORRECTIONS_FILE if corrected else ROOT / "var" / "no-corrections.json")
        self.entries = {(row["provider"], row["canonical_name"]): ServiceEntry(**row) for row in rows}

    def resolve(self, model: str, provider: str):
        from catalog.resolution import candidates, normalize_model, normalize_provider

        pair = (normalize_model(model), normalize_provider(provider))
        return next((self.entries[key] for key in candidates(*pair) if key in self.entries), None)

    def cost(self, case: dict) -> Decimal | None:
        from catalog.costing import Usage, event_total, service_cost
        from catalog.resolution import rates_for

        entry = self.resolve(case["model"], case["provider"])
        if entry is None:
            return None
        usage = Usage(input_tokens=case["input"], output_tokens=case["output"], cache_read_tokens=case["cache_read"],
                      cache_write_tokens=case["cache_write"], at=datetime.fromisoformat(case["at"]))
        return event_total([service_cost(rates_for(entry), usage)])


def litellm_costs(cases: list[dict], python: Path) -> dict:
    if not python.exists():
        raise SystemExit(f"{python} is missing: run `make litellm-diff` (it makes LiteLLM's virtualenv)")
    with tempfile.TemporaryDirectory() as directory:
        output = Path(directory) / "costs.json"
        subprocess.run([str(python), str(ROOT / "bench" / "litellm_costs.py"), str(output)], input=json.dumps(cases),
                       capture_output=True, text=True, check=True,
                       env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_LOG": "ERROR"})
        answer = json.loads(output.read_text())
    return answer


# Deliberate differences, each a predicate over (case, ours, LiteLLM's (prompt, completion) cost, the entry's
# price data) that checks the reason holds, not only that the numbers differ; the text is the reason, as
# docs/decisions/catalog.md states it.
def _total(theirs) -> Decimal:
    return Decimal(repr(theirs[0])) + Decimal(repr(theirs[1]))


def _float_arithmetic(case, ours, theirs, entry):
    return ours is not None and abs(ours - _total(theirs)) <= FLOAT_RELATIVE * max(abs(ours), 1)


def _tier_table_without_prompt(case, ours, theirs, entry):
    prompt = case["input"] + case["cache_read"] + case["cache_write"]
    if prompt or not entry.get("tiered") or "output" not in entry:
        return False
    return theirs[1] == 0 and ours == case["output"] * Decimal(entry["output"])  # the first tier's output rate


def _no_output_price(case, ours, theirs, entry):
    return ours is None and case["output"] > 0 and entry.get("output") is None and theirs[1] == 0


def _perplexity_ignores_cache_prices(case, ours, theirs, entry):
    """LiteLLM's Perplexity calculator bills every prompt token at the input rate (cache prices at 0 when
    cached tokens are reported apart): what the check below recomputes."""
    if case["provider"] != "perplexity" or not (case["cache_read"] or case["cache_write"]) or ours is None:
        return False
    prompt = case["input"] + case["cache_read"] + case["cache_write"]
    expected = prompt * Decimal(entry.get("input", "0")) + case["output"] * Decimal(entry.get("output", "0"))
    return abs(_total(theirs) - expected) <= TOLERANCE


# The catalog without the reviewed corrections (catalog/data/corrections.json), set by `main`.
UNCORRECTED: dict = {}


def _reviewed_correction(case, ours, theirs, entry):
    """A case whose entry a reviewed correction changes (a provider's published rate the LiteLLM data lacks or
    gets wrong): LiteLLM's cost is what the engine computes from the uncorrected data."""
    if case["key"] not in UNCORRECTED.get("keys", ()):
        return False
    uncorrected = UNCORRECTED["catalog"].cost(case)
    return uncorrected is not None and abs(uncorrected - _total(theirs)) <= TOLERANCE


EXPLAINED = [
    ("reviewed-correction", "a rate of catalog/data/corrections.json, checked against the provider's published "
                            "pricing (source and date in the file), where the LiteLLM data differs; LiteLLM's cost "
                            "is the engine's on the uncorrected data", _reviewed_correction),
    ("exact-arithmetic", "exact decimal arithmetic: LiteLLM multiplies floats, which lose digits past 2^53 "
                         "(10^13 tokens and more); the service keeps every digit", _float_arithmetic),
    ("tier-table-no-prompt", "a request without prompt tokens on an entry priced by a tier table: LiteLLM selects "
                             "no tier and bills its output at 0, the service bills it at the first tier's rate",
     _tier_table_without_prompt),
    ("no-output-price", "output tokens on an entry that publishes no output price (embedding models): LiteLLM "
                        "bills them at 0, the service leaves the event unpriced (unpriced_usage) until a price "
                        "exists, rather than call them free", _no_output_price),
    ("perplexity-cache", "cache tokens on Perplexity: the service bills them at the cache prices the data "
                         "publishes; LiteLLM's Perplexity calculator (its fallback when a response carries no "
                         "cost) bills every prompt token at the input rate", _perplexity_ignores_cache_prices),
]


def classify(case: dict, ours: Decimal | None, theirs, entry: dict) -> str:
    if isinstance(theirs, dict):
        return "unexplained: LiteLLM error " + theirs["error"][:80]
    if ours is not None and abs(ours - _total(theirs)) <= TOLERANCE:
        return "equal"
    for name, _, predicate in EXPLAINED:
        if predicate(case, ours, theirs, entry):
            return name
    return "unexplained"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--litellm-python", type=Path, default=DEFAULT_LITELLM_PYTHON)
    parser.add_argument("--json", type=Path, help="write every case and its verdict here")
    parser.add_argument("--show", type=int, default=40, help="unexplained cases to print")
    args = parser.parse_args(argv)

    django_setup()
    from catalog.sources import LITELLM_FILE

    from catalog.sources import corrected, corrections
    # The grid probes the thresholds of the corrected data too (a correction may add one).
    price_data = corrected(json.loads(LITELLM_FILE.read_text()), corrections())
    cases = grid(price_data)
    catalog = Catalog()
    UNCORRECTED.update(catalog=Catalog(corrected=False), keys={correction["key"] for correction in corrections()})
    answer = litellm_costs(cases, args.litellm_python)
    theirs = answer["costs"]
    verdicts = Counter()
    rows = []
    providers = Counter(case["provider"] for case in cases)
    for case in cases:
        ours = catalog.cost(case)
        entry = price_data["models"][case["key"]]
        verdict = classify(case, ours, theirs[case["id"]], entry)
        verdicts[verdict.split(":")[0]] += 1
        rows.append({**case, "ours": None if ours is None else str(ours), "litellm": theirs[case["id"]],
                     "verdict": verdict})
    print(f"LiteLLM {answer['litellm_version']} against the catalog reduced from {price_data['litellm_version']}: "
          f"{len(cases)} cases, "
          f"{len({case['key'] for case in cases})} models, {len(providers)} providers")
    for verdict, count in sorted(verdicts.items()):
        print(f"  {verdict}: {count}")
    unexplained = [row for row in rows if row["verdict"].startswith("unexplained")]
    for row in unexplained[:args.show]:
        print(f"  UNEXPLAINED {row['provider']}/{row['model']} ({row['key']}) in={row['input']} out={row['output']} "
              f"cr={row['cache_read']} cw={row['cache_write']} at={row['at']}: ours {row['ours']}, "
              f"LiteLLM {row['litellm']}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
