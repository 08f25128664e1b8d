#!/usr/bin/env python3
"""Refresh catalog/data/litellm_prices.json from LiteLLM's public model price data.

    python scripts/refresh_litellm_prices.py                   # the newest litellm release on PyPI
    python scripts/refresh_litellm_prices.py --version 1.109.1
    python scripts/refresh_litellm_prices.py --wheel path/to/litellm-*.whl
    python scripts/refresh_litellm_prices.py --version 1.80.0 --replace   # start over from one release

The `litellm` wheel ships `model_prices_and_context_window.json` (named `..._backup.json` inside the
package). This script downloads the wheel with `pip download --no-deps` (nothing is installed or
imported), reads that JSON with every number parsed as Decimal (never through float), keeps only the
token-priced models and the fields the catalog uses, and rewrites the reduced file. Prices are written
as plain decimal strings with every digit the source publishes (`1.41953125e-07` is "0.000000141953125";
nothing is rounded), so the catalog prices exactly what LiteLLM prices.

What a model keeps (each a rate in USD per token, as a decimal string):
- `input`, `output`, `cache_read`, `cache_write`: the base rates (absent when the source has none; an
  image model without an output price has its output-image-token price as `output`);
- `long_context`: every threshold the source carries (`*_above_<N>k_tokens`), ascending, each
  `{"threshold", "input", "output", "cache_read", "cache_write"}` with the rates it changes; or, for a
  model priced by a tier table (`tiered_pricing`, Alibaba's all-or-nothing tiers by prompt size), the first
  tier as the base rates and each further tier as a threshold at its range's start, with `"tiered": true`;
- `off_peak`: the off-peak windows and rates (`off_peak_pricing`): `windows` (each `hours` as "HH:MM-HH:MM"
  UTC, `weekdays` ISO numbers or null for every day), `weekday_timezone`, and the rates it replaces;
- `cache_write_1h`: the 1-hour cache-write rate (`cache_creation_input_token_cost_above_1hr`), also per
  long-context threshold (`..._above_1hr_above_<N>k_tokens`);
- `service_tiers`: the rates of the batch, flex and priority tiers (`*_batches`, `*_flex`, `*_priority`),
  each `{"input", "output", "cache_read", "cache_write", "long_context": [...]}` with only what the source
  publishes for that tier.

Models that an earlier release listed and this one dropped are kept under `retired` with their last
published prices (agents still report them, and their past usage cost what it cost), unless
`--replace` is given. The catalog loader then maps LiteLLM keys to provider and canonical name.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from decimal import Decimal
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "catalog" / "data" / "litellm_prices.json"
PRICE_FILE = re.compile(r"^litellm/model_prices_and_context_window(_backup)?\.json$")
BASE_RATES = {  # LiteLLM field -> reduced field
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_read_input_token_cost": "cache_read",
    "cache_creation_input_token_cost": "cache_write",
}
# Long-context keys of the standard tier (the `_batches`, `_flex` and `_priority` variants are the service
# tiers' own, read by `_service_tiers`), and of the 1-hour cache write.
LONG_CONTEXT_FIELD = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost"
    r"|cache_creation_input_token_cost_above_1hr)_above_(\d+)(k?)_tokens$")
CACHE_WRITE_1H_FIELD = "cache_creation_input_token_cost_above_1hr"
# The source's suffix of each service tier -> the tier's name in the reduced file (and in a record's serviceTier).
SERVICE_TIER_SUFFIXES = {"batches": "batch", "flex": "flex", "priority": "priority"}
# Any other unit price: an entry whose token rates are all zero but that has one of these is priced per
# query, page, second, image... and is not a token-priced model.
OTHER_UNIT_PRICE = re.compile(r"cost_per_(query|page|second|image|pixel|character|request|credit|video)")
RATE_NAMES = (*BASE_RATES.values(), "cache_write_1h")
LONG_CONTEXT_RATES = {**BASE_RATES, CACHE_WRITE_1H_FIELD: "cache_write_1h"}


def exact_text(value) -> str:
    """A price as a plain decimal string with every digit of the source, without exponent or trailing zeros."""
    number = Decimal(value)
    text = format(number, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def _is_price(value) -> bool:
    return isinstance(value, (Decimal, int)) and not isinstance(value, bool) and value >= 0


def _rates(source: dict) -> dict:
    return {name: source[field] for field, name in BASE_RATES.items() if _is_price(source.get(field))}


def _threshold_tiers(raw: dict) -> list[dict]:
    """Every `*_above_<N>k_tokens` threshold of the source, ascending, with the rates it sets."""
    by_threshold: dict[int, dict] = {}
    for field, value in raw.items():
        match = LONG_CONTEXT_FIELD.match(field)
        if match and _is_price(value):
            threshold = int(match.group(2)) * (1000 if match.group(3) else 1)
            by_threshold.setdefault(threshold, {})[LONG_CONTEXT_RATES[match.group(1)]] = value
    return [{"threshold": threshold, **rates} for threshold, rates in sorted(by_threshold.items())]


def _service_tiers(raw: dict) -> dict:
    """The batch, flex and priority rates the source publishes: `<field>_<suffix>` for the base rates and
    `<field>_above_<N>k_tokens_<suffix>` per threshold, as exact strings; tiers without a rate are left out."""
    tiers = {}
    for suffix, name in SERVICE_TIER_SUFFIXES.items():
        ending = f"_{suffix}"
        fields = {field[:-len(ending)]: value for field, value in raw.items()
                  if field.endswith(ending) and _is_price(value)}
        if not fields:
            continue
        block = {rate: exact_text(fields[field]) for field, rate in BASE_RATES.items() if field in fields}
        thresholds = _threshold_tiers(fields)
        if thresholds:
            block["long_context"] = [{"threshold": tier["threshold"],
                                      **{rate: exact_text(tier[rate]) for rate in RATE_NAMES if rate in tier}}
                                     for tier in thresholds]
        if block:
            tiers[name] = block
    return tiers


def _tier_table(raw: dict) -> tuple[dict, list[dict]] | None:
    """A token `tiered_pricing` table (all-or-nothing: the request's prompt size picks one tier for all of its
    tokens) -> (the first tier's rates, each further tier as a threshold at its range's start).

    LiteLLM's reading of a tier, kept here so the engine needs no rule of its own: a tier without a cache rate
    bills cache tokens at its input rate (written out where a lower tier has a cache rate, which the engine
    would otherwise carry up), and a tier without an output rate bills output at the model's own output rate.
    """
    tiers = raw.get("tiered_pricing")
    if not isinstance(tiers, list) or len(tiers) < 2 or not all(
            isinstance(tier, dict) and isinstance(tier.get("range"), list)
            and _is_price(tier.get("input_cost_per_token")) for tier in tiers):
        return None
    ordered = sorted(tiers, key=lambda tier: Decimal(str(tier["range"][0])))
    flat_output = raw.get("output_cost_per_token") if _is_price(raw.get("output_cost_per_token")) else None
    resolved, cached = [], {"cache_read": False, "cache_write": False}
    for tier in ordered:
        rates = _rates(tier)
        if "output" not in rates and flat_output is not None:
            rates["output"] = flat_output
        for name in cached:
            if name in rates:
                cached[name] = True
            elif cached[name]:
                rates[name] = rates["input"]
        resolved.append(rates)
    above = [{"threshold": int(Decimal(str(tier["range"][0]))), **rates}
             for tier, rates in zip(ordered[1:], resolved[1:])]
    return resolved[0], above


def _off_peak(raw: dict) -> dict | None:
    block = raw.get("off_peak_pricing")
    if not isinstance(block, dict):
        return None
    windows = []
    if block.get("hours_utc"):
        hours = block["hours_utc"]
        windows.append({"hours": [hours] if isinstance(hours, str) else list(hours), "weekdays": None})
    for rule in block.get("windows") or []:
        hours = rule.get("hours_utc")
        if hours:
            windows.append({"hours": [hours] if isinstance(hours, str) else list(hours),
                            "weekdays": rule.get("weekdays")})
    rates = _rates(block)
    if not windows or not rates:
        return None
    return {"windows": windows, "weekday_timezone": block.get("weekday_timezone"),
            **{name: exact_text(value) for name, value in rates.items()}}


def reduce_entry(key: str, raw: dict) -> dict | None:
    """The fields the catalog uses, or None when the entry is not a token-priced model."""
    provider = raw.get("litellm_provider")
    if key == "sample_spec" or not isinstance(provider, str) or not provider:
        return None
    base, tiers, tiered = _rates(raw), _threshold_tiers(raw), False
    # An image model without an output price bills its output tokens, all image tokens, at the image-token rate.
    if not base.get("output") and _is_price(raw.get("output_cost_per_image_token")):
        base["output"] = raw["output_cost_per_image_token"]
    table = _tier_table(raw)
    if table is not None:  # LiteLLM prices by the table whenever it has one (a request with prompt tokens)
        base, tiers, tiered = table[0], table[1], True
    if "input" not in base and "output" not in base:
        return None
    if not any(base.get(name) for name in ("input", "output")) and any(
            OTHER_UNIT_PRICE.search(field) and _is_price(value) and value > 0 for field, value in raw.items()):
        return None
    context = raw.get("max_input_tokens") or raw.get("max_tokens")
    entry = {"provider": provider, "mode": raw.get("mode") or "chat"}
    if isinstance(context, (int, Decimal)) and not isinstance(context, bool) and context > 0:
        entry["context_window"] = int(context)
    entry.update({name: exact_text(value) for name, value in base.items()})
    if not tiered and _is_price(raw.get(CACHE_WRITE_1H_FIELD)):
        entry["cache_write_1h"] = exact_text(raw[CACHE_WRITE_1H_FIELD])
    if tiers:
        entry["long_context"] = [{"threshold": tier["threshold"],
                                  **{name: exact_text(tier[name]) for name in RATE_NAMES if name in tier}}
                                 for tier in tiers]
    if tiered:
        entry["tiered"] = True
    off_peak = _off_peak(raw)
    if off_peak:
        entry["off_peak"] = off_peak
    service_tiers = _service_tiers(raw)
    if service_tiers and not tiered:
        entry["service_tiers"] = service_tiers
    return entry


def reduce_prices(prices: dict) -> dict:
    reduced = {}
    for key, raw in prices.items():
        entry = reduce_entry(key, raw) if isinstance(raw, dict) else None
        if entry is not None:
            reduced[key] = entry
    return reduced


def download_wheel(version: str | None, directory: Path) -> Path:
    requirement = f"litellm=={version}" if version else "litellm"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                    "--disable-pip-version-check", "--quiet", "-d", str(directory), requirement], check=True)
    return next(directory.glob("litellm-*.whl"))


def read_wheel(wheel: Path) -> tuple[str, dict]:
    """(litellm version, the price JSON with every number as Decimal) from a wheel."""
    version = wheel.name.split("-")[1]
    with zipfile.ZipFile(wheel) as archive:
        names = sorted(name for name in archive.namelist() if PRICE_FILE.match(name))
        if not names:
            raise SystemExit(f"{wheel.name} has no model_prices_and_context_window JSON")
        text = archive.read(names[0]).decode("utf-8")
    return version, json.loads(text, parse_float=Decimal)


def merge(previous: dict | None, version: str, current: dict, *, replace: bool) -> dict:
    retired = {}
    if previous and not replace:
        for key, entry in {**previous.get("retired", {}), **previous.get("models", {})}.items():
            if key not in current:
                retired[key] = {**entry, "last_release": entry.get("last_release") or previous["litellm_version"]}
    return {
        "about": "Reduced from LiteLLM's model_prices_and_context_window.json by scripts/refresh_litellm_prices.py. "
                 "Rates are USD per single token, decimal strings with every digit of the source.",
        "litellm_version": version,
        "models": dict(sorted(current.items())),
        "retired": dict(sorted(retired.items())),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", help="litellm release to read (default: the newest)")
    parser.add_argument("--wheel", type=Path, help="a litellm wheel already on disk")
    parser.add_argument("--replace", action="store_true", help="drop models that this release no longer lists")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as directory:
        wheel = args.wheel or download_wheel(args.version, Path(directory))
        version, prices = read_wheel(wheel)
    previous = json.loads(args.output.read_text()) if args.output.exists() else None
    data = merge(previous, version, reduce_prices(prices), replace=args.replace)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"litellm {version}: {len(data['models'])} models, {len(data['retired'])} retired -> {args.output}")


if __name__ == "__main__":
    main()
