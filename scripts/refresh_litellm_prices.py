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
as decimal strings rounded half-up to the catalog's 12 decimal places, which also removes the float
noise of the source (`3.0000000000000004e-07` becomes `"0.0000003"`).

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
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent.parent / "catalog" / "data" / "litellm_prices.json"
PRICE_FILE = re.compile(r"^litellm/model_prices_and_context_window(_backup)?\.json$")
EXACT_PLACES = Decimal("1e-12")
BASE_RATES = {  # LiteLLM field -> reduced field
    "input_cost_per_token": "input",
    "output_cost_per_token": "output",
    "cache_read_input_token_cost": "cache_read",
    "cache_creation_input_token_cost": "cache_write",
}
LONG_CONTEXT_FIELD = re.compile(
    r"^(input_cost_per_token|output_cost_per_token|cache_read_input_token_cost|cache_creation_input_token_cost)"
    r"_above_(\d+)k_tokens$")
# Any other unit price: an entry whose token rates are all zero but that has one of these is priced per
# query, page, second, image... and is not a token-priced model.
OTHER_UNIT_PRICE = re.compile(r"cost_per_(query|page|second|image|pixel|character|request|credit|video)")


def exact_text(value) -> str:
    """A price as a plain decimal string at 12 places, without exponent or trailing zeros."""
    number = Decimal(value).quantize(EXACT_PLACES, rounding=ROUND_HALF_UP)
    text = format(number, "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


def _is_price(value) -> bool:
    return isinstance(value, (Decimal, int)) and not isinstance(value, bool) and value >= 0


def _two_tier_rates(tiers) -> tuple[dict, int, dict] | None:
    """Token `tiered_pricing` with exactly two input-size tiers -> (base rates, threshold, above rates)."""
    if not isinstance(tiers, list) or len(tiers) != 2 or not all("range" in tier for tier in tiers):
        return None
    low, high = sorted(tiers, key=lambda tier: Decimal(tier["range"][0]))
    base = {name: low[field] for field, name in BASE_RATES.items() if _is_price(low.get(field))}
    above = {name: high[field] for field, name in BASE_RATES.items() if _is_price(high.get(field))}
    if "input" not in base or "output" not in base:
        return None
    return base, int(Decimal(high["range"][0])), above


def reduce_entry(key: str, raw: dict) -> dict | None:
    """The fields the catalog uses, or None when the entry is not a token-priced model."""
    provider = raw.get("litellm_provider")
    if key == "sample_spec" or not isinstance(provider, str) or not provider:
        return None
    base = {name: raw[field] for field, name in BASE_RATES.items() if _is_price(raw.get(field))}
    threshold, above = None, {}
    long_context = [(int(match.group(2)) * 1000, BASE_RATES[match.group(1)], value)
                    for field, value in raw.items() if (match := LONG_CONTEXT_FIELD.match(field)) and _is_price(value)]
    if long_context:
        # One threshold per model: where the data has several (rare), the lowest one is kept.
        threshold = min(tokens for tokens, _, _ in long_context)
        above = {name: value for tokens, name, value in long_context if tokens == threshold}
    elif "input" not in base and "output" not in base:
        tiered = _two_tier_rates(raw.get("tiered_pricing"))
        if tiered is None:
            return None
        base, threshold, above = tiered
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
    if threshold and above:
        entry["long_context_threshold"] = threshold
        entry.update({f"{name}_above_threshold": exact_text(value) for name, value in above.items()})
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
                 "Rates are USD per single token, decimal strings at 12 places.",
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
