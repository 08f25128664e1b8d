"""Model resolution for ingestion: spellings, aliases, unknown models, constant query count."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from catalog.models import ModelAlias, ServiceEntry
from catalog.resolution import candidates, normalize_model, normalize_provider, resolve_services

pytestmark = pytest.mark.django_db


def entry(provider, name):
    return ServiceEntry.objects.get(provider=provider, canonical_name=name)


def resolve_one(book, model, provider):
    pair = (normalize_model(model), normalize_provider(provider))
    return resolve_services(book=book, pairs=[(model, provider)])[pair]


@pytest.mark.parametrize("model, provider, expected", [
    ("gpt-4o", "openai", ("openai", "gpt-4o")),
    ("  GPT-4o ", " OpenAI", ("openai", "gpt-4o")),                          # trimmed, case-insensitive
    ("openai/gpt-4o", "openai", ("openai", "gpt-4o")),                       # provider-prefixed id
    ("claude-3-5-sonnet-20241022", "anthropic", ("anthropic", "claude-3-5-sonnet-20241022")),
    ("gpt-4o-2024-08-06", "openai", ("openai", "gpt-4o-2024-08-06")),       # dated id in the catalog: itself
    ("gpt-4o-2031-01-01", "openai", ("openai", "gpt-4o")),                  # unknown snapshot: the undated model
    ("claude-sonnet-4-5-20990101", "anthropic", ("anthropic", "claude-sonnet-4-5")),
    ("anthropic/claude-sonnet-4-5-20990101", "anthropic", ("anthropic", "claude-sonnet-4-5")),
    ("gemini-2.5-pro", "gemini", ("google", "gemini-2.5-pro")),              # LiteLLM's provider id as a synonym
    ("gemini/gemini-2.5-pro", "google", ("google", "gemini-2.5-pro")),
    ("whisper-1", "openai", ("openai", "whisper-1")),
    ("tavily/search", "tavily", ("tavily", "search")),
])
def test_common_spellings_resolve_to_their_catalog_entry(book, model, provider, expected):
    assert resolve_one(book, model, provider) == entry(*expected)


@pytest.mark.parametrize("model, provider, expected", [
    # the provider spellings the catalog loader folds resolve as sent (LiteLLM's provider ids for sub-APIs)
    ("amazon.nova-lite-v1:0", "bedrock_converse", ("bedrock", "amazon.nova-lite-v1:0")),
    ("command-a-03-2025", "cohere_chat", ("cohere", "command-a-03-2025")),
    ("davinci-002", "text-completion-openai", ("openai", "davinci-002")),
    ("gemini-2.5-pro", "vertex_ai_beta", ("vertex_ai", "gemini-2.5-pro")),
    ("gemini-2.5-pro", "vertex_ai-language-models", ("vertex_ai", "gemini-2.5-pro")),
    ("vertex_ai/gemini-2.5-pro", "vertex_ai_beta", ("vertex_ai", "gemini-2.5-pro")),
])
def test_provider_spellings_the_loader_folds_resolve_on_the_request_side(book, model, provider, expected):
    assert resolve_one(book, model, provider) == entry(*expected)


def test_the_request_side_folds_every_provider_the_loader_folds():
    from catalog.resolution import _providers
    from catalog.sources import PROVIDER_NAMES, catalog_provider

    for spelling, folded in PROVIDER_NAMES.items():
        assert folded in _providers(spelling), spelling
    assert catalog_provider("vertex_ai-anthropic_models") in _providers("vertex_ai-anthropic_models")


@pytest.mark.parametrize("model, provider", [
    ("acceptance-unknown-model-1234", "acme"),
    ("gpt-4o", "anthropic"),                 # a known model under the wrong provider
    ("anthropic/gpt-4o", "openai"),          # a prefix naming another provider is not stripped
    ("gpt-4o-0806", "openai"),               # only full dates are snapshot suffixes
    ("", ""),
])
def test_unknown_models_resolve_to_none(book, model, provider):
    assert resolve_one(book, model, provider) is None


def test_inactive_entries_do_not_resolve(book):
    ServiceEntry.objects.filter(provider="openai", canonical_name="gpt-4o").update(is_active=False)
    assert resolve_one(book, "gpt-4o", "openai") is None
    assert resolve_one(book, "gpt-4o-2031-01-01", "openai") is None


def test_a_books_alias_wins_over_the_catalog_and_stays_in_its_book(book, other_book):
    mini = entry("openai", "gpt-4o-mini")
    ModelAlias.objects.create(book=book, model="gpt-4o", model_provider="openai", service=mini)
    ModelAlias.objects.create(book=book, model="my-house-model", model_provider="acme", service=mini)
    assert resolve_one(book, " GPT-4o", "OPENAI") == mini
    assert resolve_one(book, "my-house-model", "acme") == mini
    assert resolve_one(other_book, "gpt-4o", "openai") == entry("openai", "gpt-4o")
    assert resolve_one(other_book, "my-house-model", "acme") is None


def test_an_alias_to_an_inactive_entry_falls_back_to_the_catalog(book):
    retired = entry("openai", "gpt-4o-mini")
    ModelAlias.objects.create(book=book, model="gpt-4o", model_provider="openai", service=retired)
    ServiceEntry.objects.filter(pk=retired.pk).update(is_active=False)
    assert resolve_one(book, "gpt-4o", "openai") == entry("openai", "gpt-4o")


def test_answer_is_keyed_by_the_normalized_pair_for_every_pair_sent(book):
    answer = resolve_services(book=book, pairs=[(" GPT-4o", "OpenAI"), ("gpt-4o", "openai"), ("nope", "acme")])
    assert set(answer) == {("gpt-4o", "openai"), ("nope", "acme")}
    assert answer[("nope", "acme")] is None


def test_one_query_resolves_one_pair_or_a_hundred(book):
    ModelAlias.objects.create(book=book, model="house-0", model_provider="acme", service=entry("openai", "gpt-4o"))
    many = [(f"house-{n}", "acme") for n in range(40)] + [(f"gpt-4o-2030-01-{n % 28 + 1:02d}", "openai")
                                                        for n in range(30)]
    many += [(f"openai/unknown-{n}", "openai") for n in range(30)]
    assert len(many) == 100
    with CaptureQueriesContext(connection) as one:
        single = resolve_services(book=book, pairs=[("gpt-4o", "openai")])
    with CaptureQueriesContext(connection) as hundred:
        answer = resolve_services(book=book, pairs=many)
    assert len(one) == len(hundred) == 1
    assert single[("gpt-4o", "openai")] == entry("openai", "gpt-4o")
    assert answer[("house-0", "acme")] == entry("openai", "gpt-4o")
    assert answer[("gpt-4o-2030-01-05", "openai")] == entry("openai", "gpt-4o")
    assert answer[("openai/unknown-3", "openai")] is None


def test_candidates_list_exact_prefixed_synonym_then_undated_keys():
    assert candidates("gemini/gemini-2.5-pro-20990101", "gemini") == [
        ("gemini", "gemini/gemini-2.5-pro-20990101"), ("google", "gemini/gemini-2.5-pro-20990101"),
        ("gemini", "gemini-2.5-pro-20990101"), ("google", "gemini-2.5-pro-20990101"),
        ("gemini", "gemini/gemini-2.5-pro"), ("google", "gemini/gemini-2.5-pro"),
        ("gemini", "gemini-2.5-pro"), ("google", "gemini-2.5-pro"),
    ]
