"""The operator console: the catalog is searchable; model aliases are scoped to the operator's organizations."""
import pytest
from django.test import Client

from catalog.models import ModelAlias, ServiceEntry
from catalog.resolution import rates_for
from accounts.services import member_ensure
from tests.customers.test_admin import posted_form

pytestmark = pytest.mark.django_db


def console_for(org, *, superuser=False):
    user = member_ensure(organization=org, email=f"staff-{superuser}@{org.id}.example.com", role="owner").user
    user.is_staff, user.is_superuser = True, superuser
    user.save()
    client = Client()
    client.force_login(user)
    return client


def test_operator_searches_and_filters_the_catalog(org):
    console = console_for(org)
    resp = console.get("/admin/catalog/serviceentry/", {"q": "whisper-1", "is_api__exact": "1"})
    assert resp.status_code == 200
    assert list(resp.context["cl"].result_list) == [ServiceEntry.objects.get(provider="openai",
                                                                              canonical_name="whisper-1")]


def test_only_a_superuser_changes_catalog_rows(org):
    gpt = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    assert console_for(org).post(f"/admin/catalog/serviceentry/{gpt.id}/change/", {}).status_code == 403


def test_a_superuser_cannot_edit_the_rates_pricing_reads_in_the_loaders_shapes(org):
    # load_catalog writes them; pricing (catalog/resolution.py rates_for) reads them in its shapes only.
    gpt = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    shapes = (gpt.long_context, gpt.off_peak, gpt.service_tiers)
    console = console_for(org, superuser=True)
    url = f"/admin/catalog/serviceentry/{gpt.id}/change/"
    broken = {"long_context": '[{"threshold": "many"}]', "off_peak": '{"input": "0.1"}',
              "service_tiers": '{"batch": 5}', "is_active": ""}
    resp = console.post(url, posted_form(console, url, **broken))
    assert resp.status_code == 302  # the rest of the row is still the superuser's to change (deactivating it)
    gpt.refresh_from_db()
    assert (gpt.long_context, gpt.off_peak, gpt.service_tiers) == shapes and not gpt.is_active
    rates_for(gpt)  # still priceable


def test_model_aliases_of_other_organizations_are_invisible(org, book, other_book):
    gpt = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    mine = ModelAlias.objects.create(book=book, model="house-model", model_provider="acme", service=gpt)
    ModelAlias.objects.create(book=other_book, model="their-model", model_provider="acme", service=gpt)
    resp = console_for(org).get("/admin/catalog/modelalias/")
    assert resp.status_code == 200
    assert list(resp.context["cl"].result_list) == [mine]
