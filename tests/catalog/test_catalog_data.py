"""The catalog's data: LiteLLM prices as loaded, curated services, load_catalog idempotency, the refresh script."""
import json
import zipfile
from decimal import Decimal

import pytest
from django.core.management import call_command

from catalog.models import ServiceEntry
from catalog.services import catalog_load
from catalog.sources import (CURATED_FILE, LITELLM_FILE, catalog_name, catalog_provider, catalog_rows, corrected,
                             corrections)
from core import clock
from scripts import refresh_litellm_prices as refresh

pytestmark = pytest.mark.django_db

RATE_FIELDS = {"input": "input_cost", "output": "output_cost", "cache_read": "cache_read_cost",
               "cache_write": "cache_write_cost"}


def price_data() -> dict:
    with LITELLM_FILE.open() as handle:
        return json.load(handle, parse_float=Decimal)


def test_fifty_catalog_llm_entries_carry_the_price_file_rates_exactly():
    """As the price file says, with the reviewed corrections laid over it (catalog/data/corrections.json)."""
    models = corrected(price_data(), corrections())["models"]
    keys = sorted(models)[::max(1, len(models) // 50)][:50] + ["gpt-4o", "claude-sonnet-4-5", "gemini/gemini-2.5-pro"]
    checked = 0
    for key in keys:
        source = models[key]
        entry = ServiceEntry.objects.get(provider=catalog_provider(source["provider"]),
                                         canonical_name=catalog_name(key, source["provider"]))
        if entry.display_name != key.strip()[-len(entry.canonical_name):]:
            continue  # another LiteLLM key of the same (provider, name) was preferred
        assert (entry.source, entry.is_api, entry.cost_unit, entry.is_active) == ("litellm", False, "token", True)
        for name, field in RATE_FIELDS.items():
            expected = Decimal(source[name]) if name in source else None
            if name == "cache_read" and expected is None and entry.provider == "fireworks_ai":
                expected = entry.input_cost / 2  # Fireworks bills cached prompt tokens at half the input price
            assert getattr(entry, field) == expected, (key, field)
        assert entry.long_context == source.get("long_context", [])
        assert entry.off_peak == source.get("off_peak")
        assert entry.context_window == source.get("context_window")
        assert entry.cache_write_1h_cost == (Decimal(source["cache_write_1h"]) if "cache_write_1h" in source else None)
        assert entry.service_tiers == source.get("service_tiers", {})
        checked += 1
    assert checked >= 50


def test_catalog_names_and_providers_are_lowercase_and_unique_per_provider():
    rows = catalog_rows()
    assert len({(row["provider"], row["canonical_name"]) for row in rows}) == len(rows)
    assert all(row["provider"] == row["provider"].lower() and row["canonical_name"] == row["canonical_name"].lower()
               for row in rows)
    assert ServiceEntry.objects.filter(is_active=True).count() == len(rows)


def test_litellm_keys_map_to_the_names_users_send():
    assert (catalog_provider("openai"), catalog_name("gpt-4o", "openai")) == ("openai", "gpt-4o")
    assert (catalog_provider("gemini"), catalog_name("gemini/gemini-2.5-pro", "gemini")) == ("google", "gemini-2.5-pro")
    assert (catalog_provider("vertex_ai-anthropic_models"),
            catalog_name("vertex_ai/claude-3-5-sonnet@20240620", "vertex_ai-anthropic_models")) \
        == ("vertex_ai", "claude-3-5-sonnet@20240620")
    assert catalog_name("Azure/GPT-4o", "azure") == "gpt-4o"


def test_curated_services_are_priced_per_named_unit():
    services = json.loads(CURATED_FILE.read_text())["services"]
    assert len(services) >= 15
    entries = ServiceEntry.objects.filter(source="curated")
    assert entries.count() == len(services)
    assert {entry.service_type for entry in entries} >= {"web_search", "speech_to_text", "text_to_speech", "sms",
                                                         "image_generation", "web_scraping"}
    for entry in entries:
        assert entry.is_api and entry.cost_unit != "token" and entry.input_cost > 0 and entry.output_cost is None


def test_fresh_database_has_the_catalog_from_the_data_migration():
    assert ServiceEntry.objects.filter(source="litellm").count() > 3000
    assert ServiceEntry.objects.filter(provider="openai", canonical_name="gpt-4o", is_active=True).exists()


def test_reloading_keeps_ids_updates_rates_and_deactivates_dropped_entries(capsys):
    rows = catalog_rows()
    before = dict(ServiceEntry.objects.values_list("external_id", "id"))
    now = clock.now()
    assert catalog_load(now=now, rows=rows).created == 0

    changed = [dict(row) for row in rows if row["external_id"] != "openai/whisper-1"]
    for row in changed:
        if row["external_id"] == "openai/gpt-4o":
            row["input_cost"] = Decimal("0.000003")
    result = catalog_load(now=now, rows=changed)
    assert (result.created, result.updated, result.deactivated) == (0, 1, 1)
    gpt = ServiceEntry.objects.get(external_id="openai/gpt-4o")
    assert (gpt.id, gpt.input_cost) == (before["openai/gpt-4o"], Decimal("0.000003"))
    whisper = ServiceEntry.objects.get(external_id="openai/whisper-1")
    assert (whisper.id, whisper.is_active) == (before["openai/whisper-1"], False)

    call_command("load_catalog")  # back to the data files: the rate returns, the entry is reactivated
    assert "0 created, 2 updated" in capsys.readouterr().out
    assert dict(ServiceEntry.objects.values_list("external_id", "id")) == before
    assert ServiceEntry.objects.get(external_id="openai/gpt-4o").input_cost == Decimal("0.0000025")
    assert ServiceEntry.objects.get(external_id="openai/whisper-1").is_active
    assert catalog_load(now=now).unchanged == len(rows)


def test_load_catalog_on_a_loaded_catalog_says_it_is_up_to_date(capsys):
    """The migrations load the catalog, so `make run`'s first load changes nothing: its line says so rather than
    a row of zeros that reads as if nothing had loaded."""
    call_command("load_catalog")
    summary = capsys.readouterr().out.splitlines()[0]
    active = ServiceEntry.objects.filter(is_active=True).count()
    assert summary.startswith(f"catalog: already up to date, {active} entries (none created, updated or deactivated);")


RAW_PRICES = """{
 "sample_spec": {"litellm_provider": "one of the providers", "input_cost_per_token": 0.0},
 "gpt-x": {"litellm_provider": "openai", "mode": "chat", "max_input_tokens": 128000,
           "input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05,
           "cache_read_input_token_cost": 3.0000000000000004e-07, "input_cost_per_token_batches": 1.25e-06,
           "cache_creation_input_token_cost_above_1hr": 5e-06},
 "gemini/gemini-x": {"litellm_provider": "gemini", "input_cost_per_token": 1.25e-06, "output_cost_per_token": 1e-05,
           "input_cost_per_token_above_200k_tokens": 2.5e-06, "output_cost_per_token_above_200k_tokens": 1.5e-05,
           "input_cost_per_token_above_1000k_tokens": 5e-06, "input_cost_per_token_above_200k_tokens_priority": 9e-06},
 "dashscope/qwen-x": {"litellm_provider": "dashscope", "tiered_pricing": [
           {"input_cost_per_token": 5e-08, "output_cost_per_token": 4e-07, "cache_read_input_token_cost": 1e-08,
            "range": [0, 256000.0]},
           {"input_cost_per_token": 2.5e-07, "output_cost_per_token": 2e-06, "range": [256000.0, 1000000.0]}]},
 "deepseek/deepseek-x": {"litellm_provider": "deepseek", "input_cost_per_token": 2.8e-07,
           "output_cost_per_token": 4.2e-07, "off_peak_pricing": {"input_cost_per_token": 1.4e-07,
           "windows": [{"hours_utc": ["16:30-00:30"], "weekdays": [1, 2, 3, 4, 5]}, {"hours_utc": "00:00-00:00",
           "weekdays": [6, 7]}], "weekday_timezone": "Asia/Shanghai"}},
 "gpt-image-x": {"litellm_provider": "openai", "mode": "image_generation", "input_cost_per_token": 5e-06,
           "output_cost_per_image_token": 4e-05},
 "glm-x": {"litellm_provider": "bigmodel", "input_cost_per_token": 2.857142857142857e-07,
           "output_cost_per_token": 1.41953125e-07},
 "rerank-x": {"litellm_provider": "cohere", "mode": "rerank", "input_cost_per_token": 0.0,
           "output_cost_per_token": 0.0, "input_cost_per_query": 0.002},
 "whisper-x": {"litellm_provider": "openai", "mode": "audio_transcription", "input_cost_per_second": 0.0001},
 "local-x": {"litellm_provider": "ollama", "mode": "chat", "input_cost_per_token": 0.0, "output_cost_per_token": 0.0}
}"""


def test_refresh_script_reduces_the_wheel_json_exactly(tmp_path):
    wheel = tmp_path / "litellm-9.9.9-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("litellm/model_prices_and_context_window_backup.json", RAW_PRICES)
    output = tmp_path / "prices.json"
    output.write_text(json.dumps({"litellm_version": "9.9.8", "retired": {}, "models": {
        "old-x": {"provider": "openai", "mode": "chat", "input": "0.000001", "output": "0.000002"}}}))
    refresh.main(["--wheel", str(wheel), "--output", str(output)])
    data = json.loads(output.read_text())
    assert data["litellm_version"] == "9.9.9"
    assert data["models"] == {
        # every digit of the source, the float noise included: the price LiteLLM computes with
        # the 1-hour cache-write rate, and a service tier's own rates
        "gpt-x": {"provider": "openai", "mode": "chat", "context_window": 128000,
                  "input": "0.0000025", "output": "0.00001", "cache_read": "0.00000030000000000000004",
                  "cache_write_1h": "0.000005", "service_tiers": {"batch": {"input": "0.00000125"}}},
        # every threshold, ascending; a service tier's thresholds are its own
        "gemini/gemini-x": {"provider": "gemini", "mode": "chat", "input": "0.00000125", "output": "0.00001",
                            "long_context": [{"threshold": 200000, "input": "0.0000025", "output": "0.000015"},
                                             {"threshold": 1000000, "input": "0.000005"}],
                            "service_tiers": {"priority": {"long_context": [{"threshold": 200000,
                                                                             "input": "0.000009"}]}}},
        # a tier table: the first tier is the base, each further tier a threshold at its start; a tier without a
        # cache rate bills cache tokens at its own input rate
        "dashscope/qwen-x": {"provider": "dashscope", "mode": "chat", "input": "0.00000005", "output": "0.0000004",
                             "cache_read": "0.00000001", "tiered": True,
                             "long_context": [{"threshold": 256000, "input": "0.00000025", "output": "0.000002",
                                               "cache_read": "0.00000025"}]},
        "deepseek/deepseek-x": {"provider": "deepseek", "mode": "chat", "input": "0.00000028",
                                "output": "0.00000042", "off_peak": {
                                    "input": "0.00000014", "weekday_timezone": "Asia/Shanghai",
                                    "windows": [{"hours": ["16:30-00:30"], "weekdays": [1, 2, 3, 4, 5]},
                                                {"hours": ["00:00-00:00"], "weekdays": [6, 7]}]}},
        "gpt-image-x": {"provider": "openai", "mode": "image_generation", "input": "0.000005", "output": "0.00004"},
        "glm-x": {"provider": "bigmodel", "mode": "chat", "input": "0.0000002857142857142857",
                  "output": "0.000000141953125"},
        "local-x": {"provider": "ollama", "mode": "chat", "input": "0", "output": "0"},
    }
    assert data["retired"] == {"old-x": {"provider": "openai", "mode": "chat", "input": "0.000001",
                                         "output": "0.000002", "last_release": "9.9.8"}}

    refresh.main(["--wheel", str(wheel), "--output", str(output), "--replace"])
    assert json.loads(output.read_text())["retired"] == {}


def test_exact_text_never_goes_through_float_and_keeps_every_digit():
    assert refresh.exact_text(Decimal("1.41953125E-7")) == "0.000000141953125"
    assert refresh.exact_text(Decimal("3.0000000000000004E-7")) == "0.00000030000000000000004"
    assert refresh.exact_text(Decimal("0.0000029999900000000002")) == "0.0000029999900000000002"
    assert refresh.exact_text(Decimal("2E-6")) == "0.000002"
    assert refresh.exact_text(0) == "0"


def test_load_catalog_names_the_reviewed_corrections_and_what_changed(capsys):
    sonnet = ServiceEntry.objects.get(external_id="anthropic/claude-sonnet-4-5")
    assert (sonnet.context_window, sonnet.long_context[0]["input"]) == (1000000, "0.000006")  # the correction
    ServiceEntry.objects.filter(pk=sonnet.pk).update(long_context=[], context_window=200000)  # LiteLLM's data
    call_command("load_catalog")
    summary = capsys.readouterr().out.splitlines()[0]
    assert "1 updated" in summary and "its prices include 11 reviewed corrections of the price data" in summary
    assert "changed: anthropic/claude-sonnet-4-5 (long_context, context_window)" in summary
    call_command("load_catalog", verbosity=2)
    listed = capsys.readouterr().out
    assert ("reviewed correction anthropic/claude-sonnet-4-5: context_window, long_context (checked 2026-11-28 "
            "against https://docs.claude.com/en/docs/about-claude/pricing#long-context-pricing)") in listed
