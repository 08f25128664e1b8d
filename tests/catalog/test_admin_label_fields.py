"""The catalog fields the analytics rollup's model labels are made from (canonical name, is_api) are set when an
entry is added in the console and cannot be changed after: a change split one model across two labels."""
import pytest

from catalog.models import ServiceEntry
from tests.catalog.test_admin import console_for
from tests.customers.test_admin import posted_form

pytestmark = pytest.mark.django_db


def test_a_superuser_cannot_change_the_name_or_is_api_of_an_entry(org):
    gpt = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    assert not gpt.is_api
    console = console_for(org, superuser=True)
    url = f"/admin/catalog/serviceentry/{gpt.id}/change/"
    form = posted_form(console, url, display_name="GPT-4o (renamed)")
    resp = console.post(url, {**form, "canonical_name": "gpt-4o-renamed", "is_api": "on"})
    assert resp.status_code == 302  # the rest of the row is still the superuser's to change
    gpt.refresh_from_db()
    assert (gpt.canonical_name, gpt.is_api, gpt.display_name) == ("gpt-4o", False, "GPT-4o (renamed)")
    page = console.get(url).content.decode()
    assert 'name="canonical_name"' not in page and 'name="is_api"' not in page


def test_a_superuser_still_sets_the_name_and_is_api_of_a_new_entry(org):
    console = console_for(org, superuser=True)
    form = console.get("/admin/catalog/serviceentry/add/").context["adminform"].form
    assert {"canonical_name", "is_api"} <= set(form.fields)
