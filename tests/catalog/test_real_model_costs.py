"""The engine on real catalog entries (loaded by the data migration), against hand-computed costs."""
import json
from datetime import datetime, timezone
from decimal import Decimal as D

import pytest

from catalog.costing import Usage, event_cost
from catalog.models import ServiceEntry
from catalog.resolution import rates_for
from catalog.sources import LITELLM_FILE

pytestmark = pytest.mark.django_db


def cost_of(provider: str, name: str, usage: Usage):
    entry = ServiceEntry.objects.get(provider=provider, canonical_name=name, is_active=True)
    return event_cost([(rates_for(entry), usage)])


# Rates per million tokens (input / output / cache read / cache write) in comments; costs by hand.
@pytest.mark.parametrize("provider, name, usage, expected", [
    # $2.50 / $10 / $1.25: 0.0025 + 0.005 + 0.0025
    ("openai", "gpt-4o", Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=2000), "0.01"),
    # $0.15 / $0.60 / $0.075: 0.15 + 0.3 + 0.075
    ("openai", "gpt-4o-mini", Usage(input_tokens=1_000_000, output_tokens=500_000, cache_read_tokens=1_000_000),
     "0.525"),
    # $2 / $8 / $0.50: 0.02 + 0.016 + 0.0025
    ("openai", "o3", Usage(input_tokens=10_000, output_tokens=2000, cache_read_tokens=5000), "0.0385"),
    # $0.02 embeddings: 0.0002
    ("openai", "text-embedding-3-small", Usage(input_tokens=10_000), "0.0002"),
    # $3 / $15 / $0.30 / $3.75: 0.03 + 0.03 + 0.015 + 0.015
    ("anthropic", "claude-sonnet-4-5",
     Usage(input_tokens=10_000, output_tokens=2000, cache_read_tokens=50_000, cache_write_tokens=4000), "0.09"),
    # $1 / $5 / $0.10 / $1.25: 0.002 + 0.005 + 0.001 + 0.00125
    ("anthropic", "claude-haiku-4-5",
     Usage(input_tokens=2000, output_tokens=1000, cache_read_tokens=10_000, cache_write_tokens=1000), "0.00925"),
    # $15 / $75 / $1.50 / $18.75: 0.015 + 0.0375 + 0.0015 + 0.01875
    ("anthropic", "claude-opus-4-1",
     Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=1000, cache_write_tokens=1000), "0.07275"),
    # retired from the newest LiteLLM release, kept at its last price: $3 / $15
    ("anthropic", "claude-3-5-sonnet-20241022", Usage(input_tokens=1000, output_tokens=1000), "0.018"),
    # $1.25 / $10 / $0.125 below 200k prompt tokens: 0.125 + 0.1 + 0.0125
    ("google", "gemini-2.5-pro", Usage(input_tokens=100_000, output_tokens=10_000, cache_read_tokens=100_000),
     "0.2375"),
    # long context (> 200k prompt tokens): $2.50 / $15 / $0.25 on everything: 0.625 + 0.15 + 0.0125
    ("google", "gemini-2.5-pro", Usage(input_tokens=250_000, output_tokens=10_000, cache_read_tokens=50_000),
     "0.7875"),
    # long context (> 272k): $5 / $22.50: 1.5 + 0.225
    ("openai", "gpt-5.4", Usage(input_tokens=300_000, output_tokens=10_000), "1.725"),
    # $0.30 / $2.50 / $0.03: 0.3 + 0.25 + 0.003
    ("google", "gemini-2.5-flash", Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=100_000),
     "0.553"),
    # $0.28 / $0.42 / $0.028: 0.28 + 0.042 + 0.0028
    ("deepseek", "deepseek-chat", Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=100_000),
     "0.3248"),
    # $0.59 / $0.79: 0.059 + 0.0079
    ("groq", "llama-3.3-70b-versatile", Usage(input_tokens=100_000, output_tokens=10_000), "0.0669"),
    # $3 / $15: 0.003 + 0.0075
    ("xai", "grok-4", Usage(input_tokens=1000, output_tokens=500), "0.0105"),
    # Bedrock's Claude 3.5 Sonnet v2, $3 / $15 / $0.30 / $3.75: 0.003 + 0.0015 + 0.0003 + 0.00375
    ("bedrock", "anthropic.claude-3-5-sonnet-20241022-v2:0",
     Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=1000, cache_write_tokens=1000), "0.00855"),
])
def test_llm_cost_of_real_models_matches_hand_computation(provider, name, usage, expected):
    assert cost_of(provider, name, usage) == D(expected)


@pytest.mark.parametrize("provider, name, unit, quantity, expected", [
    ("openai", "whisper-1", "minute", "12.5", "0.075"),               # $0.006 per minute
    ("deepgram", "nova-3", "minute", "60", "0.258"),                  # $0.0043 per minute
    ("openai", "tts-1", "character", "2500", "0.0375"),               # $15 per 1M characters
    ("tavily", "search", "request", "3", "0.024"),                    # $0.008 per basic search
    ("twilio", "sms-us", "message", "10", "0.083"),                   # $0.0083 per segment
    ("openai", "dall-e-3", "image", "4", "0.16"),                     # $0.04 per standard image
    ("firecrawl", "scrape", "page", "1000", "0.99"),                  # $99 per 100,000 pages
    ("aws", "ses-email", "email", "0.5", "0.00005"),                  # fractions kept
])
def test_non_llm_cost_of_real_services_matches_hand_computation(provider, name, unit, quantity, expected):
    entry = ServiceEntry.objects.get(provider=provider, canonical_name=name)
    assert (entry.cost_unit, entry.is_api, entry.output_cost) == (unit, True, None)
    assert cost_of(provider, name, Usage(quantity=D(quantity))) == D(expected)


# Cache tokens on an entry that publishes no cache price bill at the input rate in effect (as providers bill them).
@pytest.mark.parametrize("provider, name, usage, expected", [
    # gpt-4o has no cache-write price: $2.50 / $10, writes at $2.50: 0.0025 + 0.005 + 0.0175
    ("openai", "gpt-4o", Usage(input_tokens=1000, output_tokens=500, cache_write_tokens=7000), "0.025"),
    # gpt-3.5-turbo has no cache prices at all: $0.50 / $1.50: 0.0005 + 0.0025 + 0.00015
    ("openai", "gpt-3.5-turbo", Usage(input_tokens=1000, output_tokens=100, cache_read_tokens=5000), "0.00315"),
    # vertex gemini-2.5-pro below 200k has no cache-write price: $1.25 / $10: 0.125 + 0.0625 + 0.01
    ("vertex_ai", "gemini-2.5-pro", Usage(input_tokens=100_000, output_tokens=1000, cache_write_tokens=50_000),
     "0.1975"),
    # ...and above 200k it has one ($0.25): $2.50 input, $15 output: 0.375 + 0.015 + 0.015
    ("vertex_ai", "gemini-2.5-pro", Usage(input_tokens=150_000, output_tokens=1000, cache_write_tokens=60_000),
     "0.405"),
])
def test_cache_tokens_without_a_published_cache_rate_bill_at_the_input_rate(provider, name, usage, expected):
    assert cost_of(provider, name, usage) == D(expected)


# Off-peak windows by the event's instant: DeepSeek's v4 models bill half price off-peak (weekdays 00:00-01:00,
# 04:00-06:00 and from 10:00 UTC; all weekend). Mon 2026-01-05 is a weekday.
@pytest.mark.parametrize("at, expected", [
    # peak, Monday 08:00: $0.30 / $1.20 / $0.006: 0.3 + 0.12 + 0.0006
    (datetime(2026, 1, 5, 8, 0, tzinfo=timezone.utc), "0.4206"),
    # off-peak, Monday 12:00: $0.15 / $0.60 / $0.003: 0.15 + 0.06 + 0.0003
    (datetime(2026, 1, 5, 12, 0, tzinfo=timezone.utc), "0.2103"),
    (datetime(2026, 1, 5, 9, 59, 59, tzinfo=timezone.utc), "0.4206"),  # the window opens at 10:00 ...
    (datetime(2026, 1, 5, 10, 0, tzinfo=timezone.utc), "0.2103"),       # ... inclusive
    (datetime(2026, 1, 6, 0, 59, tzinfo=timezone.utc), "0.2103"),
    (datetime(2026, 1, 6, 1, 0, tzinfo=timezone.utc), "0.4206"),        # and closes at 01:00, exclusive
    (datetime(2026, 1, 10, 8, 0, tzinfo=timezone.utc), "0.2103"),       # Saturday: all day
])
def test_off_peak_rates_apply_by_the_events_instant(at, expected):
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=100_000, at=at)
    assert cost_of("deepseek", "deepseek-v4-flash", usage) == D(expected)


def test_off_peak_on_a_provider_with_its_own_calendar():
    # Tencent's DeepSeek (weekdays on Asia/Shanghai's calendar): Saturday off-peak at half price, Monday 08:00 peak.
    usage = dict(input_tokens=1_000_000)
    assert cost_of("tencent", "deepseek-v4-pro-0813",
                   Usage(**usage, at=datetime(2026, 1, 10, 8, 0, tzinfo=timezone.utc))) == D("0.66")
    assert cost_of("tencent", "deepseek-v4-pro-0813",
                   Usage(**usage, at=datetime(2026, 1, 5, 8, 0, tzinfo=timezone.utc))) == D("1.32")


# Every long-context threshold the data carries, each provider's boundary rule.
@pytest.mark.parametrize("provider, name, usage, expected", [
    # kyma qwen3.7-flash: base $0.0435 / $0.1886; above 32k $0.135 / $0.54; above 256k $0.27 / $1.08
    ("kyma", "qwen3.7-flash", Usage(input_tokens=32_000, output_tokens=1000), "0.0015806"),
    ("kyma", "qwen3.7-flash", Usage(input_tokens=32_001, output_tokens=1000), "0.004860135"),
    ("kyma", "qwen3.7-flash", Usage(input_tokens=256_000, output_tokens=1000), "0.03510"),
    ("kyma", "qwen3.7-flash", Usage(input_tokens=256_001, output_tokens=1000), "0.07020027"),
    # xAI bills the higher tier from the threshold itself: grok-4.20 $1.25 / $2.50 (cache $0.20), from 200k
    # prompt tokens $2.50 / $5 (cache $0.40)
    ("xai", "grok-4.20", Usage(input_tokens=199_999, output_tokens=1000), "0.25249875"),
    ("xai", "grok-4.20", Usage(input_tokens=200_000, output_tokens=1000), "0.505"),
    ("xai", "grok-4.20", Usage(input_tokens=190_000, cache_read_tokens=10_000, output_tokens=1000), "0.484"),
    # a tier table (Alibaba, all-or-nothing by prompt size): qwen3-coder-flash $0.30 / $1.50 to 32k, then
    # $0.50 / $2.50 to 128k, $0.80 / $4 to 256k, $1.60 / $9.60 above
    ("dashscope", "qwen3-coder-flash", Usage(input_tokens=32_000, output_tokens=1000), "0.0111"),
    ("dashscope", "qwen3-coder-flash", Usage(input_tokens=32_001, output_tokens=1000), "0.0185005"),
    ("dashscope", "qwen3-coder-flash", Usage(input_tokens=300_000, output_tokens=1000), "0.4896"),
])
def test_every_threshold_applies_with_the_providers_boundary_rule(provider, name, usage, expected):
    assert cost_of(provider, name, usage) == D(expected)


def test_rates_keep_every_digit_the_source_publishes():
    glm = ServiceEntry.objects.get(provider="bigmodel", canonical_name="glm-5.3-flashx")
    assert (glm.input_cost, glm.cache_read_cost) == (D("0.0000002857142857142857"), D("0.00000008142857142857142"))
    # 7 million input tokens: 1.9999999999999999, stored at 12 places as 2 (at a rate rounded to 12 places,
    # 0.000000285714, it would be 1.999998)
    assert cost_of("bigmodel", "glm-5.3-flashx", Usage(input_tokens=7_000_000)) == D("2")


@pytest.mark.parametrize("provider, name, expected_key", [
    # two LiteLLM keys fold into one entry: the provider-prefixed one wins, as LiteLLM's lookup prefers it
    ("deepseek", "deepseek-chat", "deepseek/deepseek-chat"),
    ("google", "gemini-exp-1206", "gemini/gemini-exp-1206"),
])
def test_the_provider_prefixed_key_is_preferred_where_two_keys_fold(provider, name, expected_key):
    entry = ServiceEntry.objects.get(provider=provider, canonical_name=name)
    source = json.loads(LITELLM_FILE.read_text())["models"][expected_key]
    assert (entry.input_cost, entry.output_cost) == (D(source["input"]), D(source["output"]))
    assert entry.cache_write_cost == (D(source["cache_write"]) if "cache_write" in source else None)


def test_output_without_prompt_tokens_on_a_tier_table_entry_bills_at_the_first_tier():
    # qwen3-coder-flash's first tier: $1.50 per million output tokens (LiteLLM selects no tier and bills 0)
    assert cost_of("dashscope", "qwen3-coder-flash", Usage(output_tokens=1000)) == D("0.0015")


def test_a_trillion_tokens_are_priced_exactly():
    # gpt-4o at $2.50 / $10 per million: floats lose digits here, the engine does not
    usage = Usage(input_tokens=10**12 + 7, output_tokens=10**12 + 3)
    assert cost_of("openai", "gpt-4o", usage) == D("12500000.0000475")
