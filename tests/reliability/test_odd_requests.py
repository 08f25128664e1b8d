"""Requests a reviewer found answered 500, each now a 4xx naming what is wrong (nothing a client or a payment
provider sends answers 500; nothing is stored half-way)."""
import json

import pytest
from rest_framework.test import APIClient

from accounts.models import Invitation, Membership
from billing.models import Invoice, Payment
from catalog.models import ModelAlias, PriceOverride, ServiceEntry
from customers.models import UsageEvent
from tests.billing.invoice_support import WEBHOOK_SECRET, billing_chain, draft, pay, recurring
from tests.billing.support import ok
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

TURKISH_I = "\u0130"  # "İ": one character, two once lower-cased


def post_raw(api, path, raw: str, content_type="application/json"):
    return APIClient.post(api, path, raw, content_type=content_type)


def test_an_unpaired_surrogate_in_a_field_name_is_shown_escaped_in_the_400(api):
    resp = post_raw(api, "/v1/usage/record", '{"records": [{"\\ud800": 1}]}')
    assert resp.status_code == 400, resp.content
    assert "'\\ud800'" in resp.json()["message"][0]
    # and in a record of the single-service shape, which fails alone
    record = '{"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "m", "modelProvider": "p"'
    resp = post_raw(api, "/v1/usage/record", '{"records": [' + record + ', "\\udfff": 1}]}')
    assert resp.status_code == 200, resp.content
    assert resp.json()["results"]["failed"][0]["code"] == "unknown_field"
    assert not UsageEvent.objects.exists()


def test_a_name_too_long_once_lower_cased_fails_alone_and_is_a_400_elsewhere(api):
    long_model = TURKISH_I * 128  # 128 characters sent, 256 once lower-cased
    base = {"customerExternalId": "c", "agentCode": "a", "signalName": "s", "modelProvider": "openai",
            "inputTokens": 1}
    resp = api.post("/v1/usage/record", {"records": [{**base, "model": long_model}, {**base, "model": "gpt-4o"}]})
    assert resp.status_code == 200, resp.content
    body = resp.json()
    assert (body["successful"], body["failed"]) == (1, 1)
    failure = body["results"]["failed"][0]
    assert (failure["code"], failure["stored"]) == ("invalid_record", False)
    assert failure["message"][0].startswith("model: Ensure this field has no more than 255 characters once lower-cased")
    assert UsageEvent.objects.count() == 1

    override = api.post("/v1/price-overrides", {"model": TURKISH_I * 200, "modelProvider": "acme", "inputCost": "1"})
    assert override.status_code == 400, override.content
    assert override.json()["message"][0].startswith("model: Ensure this field has no more than 255 characters")
    assert not PriceOverride.objects.exists()
    # a provider column holds 100: 60 characters sent are 120 stored
    for body in ({"model": "acme-llm", "modelProvider": TURKISH_I * 60, "inputCost": "1"},
                 {"modelProvider": TURKISH_I * 60, "discountPercent": 10}):
        provider = api.post("/v1/price-overrides", body)
        assert provider.status_code == 400, provider.content
        assert provider.json()["message"][0].startswith("modelProvider: Ensure this field has no more than 100 "
                                                        "characters once lower-cased")
    assert not PriceOverride.objects.exists()
    service = ServiceEntry.objects.filter(is_active=True).first()
    mapped = api.post("/v1/events/map-model", {"model": TURKISH_I * 200, "modelProvider": "acme",
                                               "serviceId": str(service.id)})
    assert mapped.status_code == 400, mapped.content
    assert mapped.json()["message"][0].startswith("model: Ensure this field has no more than 255 characters")
    mapped = api.post("/v1/events/map-model", {"model": "acme-llm", "modelProvider": TURKISH_I * 60,
                                               "serviceId": str(service.id)})
    assert mapped.status_code == 400, mapped.content
    assert mapped.json()["message"][0].startswith("modelProvider: Ensure this field has no more than 100")
    assert not ModelAlias.objects.filter(model__startswith="i").exists()


def test_a_tax_rate_that_takes_a_total_past_what_an_invoice_holds_is_a_422(api, book):
    chain = billing_chain(api, book, [recurring("999999999999")])
    invoice = draft(api, chain)
    resp = api.patch(f"/v1/invoices/{invoice['id']}", {"taxRate": 1})
    assert resp.status_code == 422, resp.content
    assert "total" in " ".join(resp.json()["message"])
    assert Invoice.objects.get(pk=invoice["id"]).tax_percent == 0  # nothing stored


@pytest.fixture
def stripe_settings(settings):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.STRIPE_SECRET_KEY = ""
    settings.PUBLIC_BASE_URL = "http://testserver"


def test_payments_adding_up_past_what_an_invoice_holds_are_a_400_and_change_nothing(api, book, client,
                                                                                   stripe_settings):
    chain = billing_chain(api, book, [recurring("10")])
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    assert pay(client, invoice, 99_999_999_999_999, payment_intent="pi_first").status_code == 200
    second = pay(client, invoice, 99_999_999_999_999, payment_intent="pi_second")
    assert second.status_code == 400, second.content
    assert "more than an invoice holds" in second.json()["message"][0]
    assert Payment.objects.count() == 1
    # the first one sent again is still a replay, answered as before
    assert pay(client, invoice, 99_999_999_999_999, payment_intent="pi_first").status_code == 200
    assert Payment.objects.count() == 1


def test_an_invitation_email_longer_than_its_column_is_a_400(org):
    owner = UserFactory(email="boss@acme.example")
    Membership.objects.create(organization=org, user=owner, role="owner")
    session = APIClient()
    session.force_login(owner)
    resp = session.post("/v1/invitations", {"organizationId": str(org.pk), "email": "a" * 250 + "@example.com",
                                            "role": "member"}, format="json")
    assert resp.status_code == 400, resp.content
    assert "email" in resp.json()["message"][0]
    assert not Invitation.objects.exists()


def test_the_renderer_shows_an_unpaired_surrogate_escaped_rather_than_failing():
    from core.api_json import JSONRenderer

    rendered = JSONRenderer().render({"message": ["name \ud800: refused"], "\udfff": 1})
    assert json.loads(rendered) == {"message": ["name \\ud800: refused"], "\\udfff": 1}
