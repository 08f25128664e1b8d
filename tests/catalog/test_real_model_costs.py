"""The engine on real catalog entries (loaded by the data migration), against hand-computed costs."""
from decimal import Decimal as D

import pytest

from catalog.costing import Usage, event_cost
from catalog.models import ServiceEntry
from catalog.resolution import rates_for

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
