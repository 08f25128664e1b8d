"""A book holding the largest quantities a record takes (the largest binary float, 1.7976931348623157e308, on
plans of every pricing model) answers every read: every GET of the API, invoices (a 201, or a 422 naming the line
an invoice cannot hold), the portal and every console list, none with a 5xx (docs/decisions/numbers.md
"Quantities")."""
from decimal import Decimal as D

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

from accounts.models import User
from accounts.services import member_ensure
from billing.record_validation import MAX_QUANTITY
from core import exact_json
from core.money import sum_exactly
from tests.billing.invoice_support import TIERS, billing_chain, credit_pool, recurring, tiered, usage
from tests.factories import ServiceEntryFactory
from tests.routes import api_routes

pytestmark = pytest.mark.django_db

DAY = "2026-11-02"
WINDOW = {"startDate": "2026-11-01", "endDate": "2026-11-30", "start": "2026-11-01", "end": "2026-11-30"}
PLANS = {"flat": [recurring("10"), usage("0.25")], "graduated": [tiered("graduated", TIERS)],
         "volume": [tiered("volume", TIERS)], "credit pool": [credit_pool("100", "50", "0.75")],
         "free usage": [recurring("10"), usage("0")]}
INVOICEABLE = {"free usage"}  # any other plan prices these quantities past what an invoice holds (10^12 USD)
# The largest float, and the smallest as C's `%.17g` prints it (340 places): their sum has 649 digits, every one kept.
QUANTITIES = ("1.7976931348623157e+308", "1e+22", "0.30000000000000004", "4.9406564584124654e-324")


def test_the_largest_quantities_are_stored_and_every_read_answers_without_a_5xx(api, book, org):
    ServiceEntryFactory(canonical_name="free-api", provider="boundapi", input_cost=D(0), cost_unit="request",
                        service_type="search", is_api=True)
    chains = {}
    for index, (name, strategies) in enumerate(PLANS.items()):
        chain = billing_chain(api, book, strategies, start="2026-11-01T00:00:00Z")
        record = {"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
                  "signalName": chain.signal.name, "usageDate": f"{DAY}T1{index}:00:00Z",
                  "services": [{"model": "free-api", "modelProvider": "boundapi", "quantity": 1}]}
        body = '{"records": [%s]}' % ", ".join(  # JSON numbers as a client's float encoder writes them
            exact_json.dumps({**record, "quantity": "QUANTITY"}).decode().replace('"QUANTITY"', quantity)
            for quantity in QUANTITIES)
        resp = api.generic("POST", "/v1/usage/record", body, content_type="application/json")
        assert resp.status_code == 200 and resp.json()["successful"] == len(QUANTITIES), resp.content
        chains[name] = chain

    failures, invoices = [], []
    for path, _, method in api_routes():
        if method == "get" and "{" not in path:
            resp = api.get(path, WINDOW)
            if resp.status_code >= 500:
                failures.append(f"GET {path}: {resp.status_code}")
    for name, chain in chains.items():
        for path in (f"/v1/customers/{chain.customer.id}", f"/v1/subscriptions/{chain.subscription['id']}",
                     f"/v1/events?customerExternalId={chain.customer.external_id}"):
            if (resp := api.get(path)).status_code >= 500:
                failures.append(f"GET {path}: {resp.status_code}")
        generated = api.post("/v1/invoices/generate", {
            "customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
            "billingPeriodStart": "2026-11-01T00:00:00Z", "billingPeriodEnd": "2026-12-01T00:00:00Z"})
        if name in INVOICEABLE:
            assert generated.status_code == 201, generated.content
            invoice = exact_json.loads(generated.content.decode())
            assert [(D(str(line["quantity"])), line["amount"]) for line in invoice["lines"]] == [
                (D("1"), 10), (sum_exactly(D(q) for q in QUANTITIES), 0)]
            sent = api.post(f"/v1/invoices/{invoice['id']}/send", {})
            if sent.status_code >= 500:
                failures.append(f"send ({name}): {sent.status_code}")
            invoices.append(invoice["id"])
        else:
            assert generated.status_code == 422, generated.content
            assert "beyond what an invoice holds" in generated.json()["message"][0]
        session = api.post("/v1/portal-sessions", {"customerExternalId": chain.customer.external_id})
        assert session.status_code == 201, session.content
        portal = Client()
        link = "/" + session.json()["url"].split("://", 1)[1].split("/", 1)[1]
        pages = [link, "/portal/s/", "/portal/s/profile"]
        if generated.status_code == 201:
            pages.append(f"/portal/s/invoices/{generated.json()['id']}/pdf")
        for page in pages:
            if (resp := portal.get(page)).status_code >= 500:
                failures.append(f"{page} ({name}): {resp.status_code}")

    email = "ops@largest.example.com"
    member_ensure(organization=org, email=email, role="owner")
    User.objects.filter(email=email).update(is_staff=True, is_superuser=True)
    console = Client()
    console.force_login(User.objects.get(email=email))
    pages = ["/admin/"] + [reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
                           for model in admin.site._registry]
    for name, chain in chains.items():
        pages += [reverse("admin:customers_customer_change", args=[chain.customer.id]),
                  reverse("admin:billing_subscription_change", args=[chain.subscription["id"]])]
    pages += [reverse("admin:billing_invoice_change", args=[invoice]) for invoice in invoices]
    for page in pages:
        if (resp := console.get(page)).status_code >= 500:
            failures.append(f"console {page}: {resp.status_code}")
    assert failures == []
