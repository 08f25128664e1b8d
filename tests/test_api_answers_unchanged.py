"""The OpenAPI schema and the API's answers stay byte-identical: a refactoring that changes neither may not change
a byte of what a client reads.

Two golden files under tests/golden/:
- `openapi.json`: the schema as `GET /v1/openapi.json` serves it, compared byte for byte.
- `api_answers.txt`: a fixed scenario that calls every /v1 route at least once (valid calls and the error cases
  400, 401, 403, 404, 409, 422), with fixed input times, a frozen clock and time-ordered ids; each call's status
  and response body are recorded. Generated ids (UUIDs) and random values (keys, tokens, secrets) are replaced by
  placeholders numbered in order of first appearance (`<id-1>`, `<token-1>`); every other byte, numbers as the
  server wrote them included, must match.

Regenerate only for a deliberate change of the API (and name it in docs/decisions):

    UPDATE_GOLDEN_ANSWERS=1 scripts/test.sh tests/test_api_answers_unchanged.py -p no:randomly

then read the diff of tests/golden/ before committing it.
"""
import hashlib
import hmac
import json
import os
import re
import time
import uuid
from datetime import datetime, timezone as dt_timezone
from decimal import Decimal
from itertools import count
from pathlib import Path

import pytest
from django.apps import apps
from django.urls import resolve
from django.utils import timezone

from accounts.services import api_key_mint, member_ensure
from tests.conftest import KeyClient
from tests.factories import OrganizationFactory, ServiceEntryFactory
from tests.routes import api_routes, openapi_path

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("UPDATE_GOLDEN_ANSWERS") == "1"
# The server's clock for the whole scenario; every time the scenario sends lies before it.
NOW = datetime(2026, 3, 16, 9, 0, tzinfo=dt_timezone.utc)
STRIPE_SECRET = "whsec_golden_answers"

pytestmark = pytest.mark.django_db


def _compare(name: str, actual: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(actual)
        return
    expected = path.read_text()
    if actual != expected:
        import difflib
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            f"golden/{name}", "now", n=2))
        pytest.fail(f"the API's answers changed (regenerate only for a deliberate API change):\n{diff[:20000]}")


def test_the_openapi_schema_is_unchanged(client):
    resp = client.get("/v1/openapi.json")
    assert resp.status_code == 200
    _compare("openapi.json", resp.content.decode())


# --------------------------------------------------------------------------- a deterministic server

@pytest.fixture
def frozen_server(monkeypatch, settings):
    """The wall clock frozen at NOW, primary keys made from a counter (so rows created at the same instant list
    in creation order), webhook receivers that answer 200 without a network, Stripe's webhook secret known."""
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    counter = count(1)

    def next_id():
        return uuid.UUID(int=(0x10000000_0000_4000_8000_000000000000 | next(counter) << 64 | next(counter)))
    for model in apps.get_models():
        field = model._meta.pk
        if getattr(field, "default", None) is uuid.uuid4:
            monkeypatch.setattr(field, "default", next_id)
            field.__dict__.pop("_get_default", None)  # Django caches the default's callable
    from webhooks import targets
    monkeypatch.setattr(targets, "post", lambda url, body, headers, timeout: targets.Answer(200, "ok", 1))
    settings.STRIPE_WEBHOOK_SECRET = STRIPE_SECRET
    settings.STRIPE_SECRET_KEY = ""
    settings.PAYMENTS_LOCAL_CHECKOUT = False
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    yield
    for model in apps.get_models():
        model._meta.pk.__dict__.pop("_get_default", None)


UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
KEY_RE = re.compile(r"svc_(?:sk|pk)_(?:test|live)_[A-Za-z0-9]+")
# Values the server draws at random, found by the name they are answered under.
RANDOM_FIELDS = ("token", "secret", "emailId", "key", "rawKey")


class Recorder:
    """Calls the API and writes down each answer, with placeholders for generated values."""

    def __init__(self):
        self.lines: list[str] = []
        self.placeholders: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.called: set[tuple[str, str]] = set()

    def placeholder(self, kind: str, value: str) -> str:
        if value not in self.placeholders:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.placeholders[value] = f"<{kind}-{self.counts[kind]}>"
        return self.placeholders[value]

    def _random_values(self, data) -> None:
        if isinstance(data, dict):
            for name, value in data.items():
                if name in RANDOM_FIELDS and isinstance(value, str) and value and not KEY_RE.fullmatch(value):
                    self.placeholder("token", value)
                else:
                    self._random_values(value)
        elif isinstance(data, list):
            for item in data:
                self._random_values(item)

    def normalized(self, text: str) -> str:
        text = KEY_RE.sub(lambda m: self.placeholder("key", m.group()), text)
        text = UUID_RE.sub(lambda m: self.placeholder("id", m.group().lower()), text)
        for value, name in self.placeholders.items():
            if name.startswith("<token-"):
                text = text.replace(value, name)
        return text

    def call(self, client, method: str, path: str, body=None, *, query: str = "", raw: bytes | None = None,
             note: str = "", **headers):
        url = path + (f"?{query}" if query else "")
        data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
        resp = client.generic(method, url, data, content_type="application/json", **headers)
        self.called.add((method.lower(), openapi_path(resolve(path).route) if path.startswith("/v1/") else path))
        content_type = resp.get("Content-Type", "")
        content = b"".join(resp.streaming_content) if resp.streaming else resp.content
        if "json" in content_type and content:
            answer = content.decode()
            try:
                self._random_values(json.loads(answer))
            except ValueError:
                pass
        elif content_type.startswith("text/"):
            answer = content.decode()
        else:  # a PDF: its bytes carry the moment it was drawn
            answer = f"<binary {content[:5]!r}>" if content else ""
        self.lines.append(f"### {method} {self.normalized(url)}{f'  ({note})' if note else ''}\n"
                          f"{resp.status_code} {content_type}\n{self.normalized(answer)}\n")
        return json.loads(content) if "json" in content_type and content else None


def _key(org, role="owner", key_type="secret", scope="full", email=None):
    membership = member_ensure(organization=org, email=email or f"{role}-{scope}@golden.example.com", role=role)
    return KeyClient(api_key_mint(membership=membership, key_type=key_type, environment="test", scope=scope)[1])


def _stripe(client, rec: Recorder, invoice_id: str, cents: int, intent: str):
    body = json.dumps({"id": f"evt_{intent}", "object": "event", "type": "checkout.session.completed",
                       "livemode": False, "created": 1773651600,
                       "data": {"object": {"id": f"cs_{intent}", "object": "checkout.session", "amount_total": cents,
                                           "currency": "usd", "payment_intent": intent, "payment_status": "paid",
                                           "status": "complete", "mode": "payment",
                                           "metadata": {"invoiceId": invoice_id}}}},
                      separators=(",", ":")).encode()
    stamp = int(time.time())  # the receiver checks the signature's age against the real time
    digest = hmac.new(STRIPE_SECRET.encode(), f"{stamp}.".encode() + body, hashlib.sha256).hexdigest()
    return rec.call(client, "POST", "/v1/webhooks/stripe", raw=body, HTTP_STRIPE_SIGNATURE=f"t={stamp},v1={digest}")


def run_scenario(rec: Recorder) -> None:  # noqa: C901 (one long script, read top to bottom)
    org = OrganizationFactory(name="Golden Answers")
    other = OrganizationFactory(name="Other Golden")
    api = _key(org)
    finance, legal, member = _key(org, "finance"), _key(org, "legal", scope="legal"), _key(org, "member")
    ingest = _key(org, "admin", scope="ingest")
    publishable = _key(org, "owner", key_type="publishable", email="owner-pk@golden.example.com")
    other_api = _key(other, email="owner@other.example.com")
    anonymous, bad_key = KeyClient(None), KeyClient("svc_sk_test_" + "x" * 32)
    ServiceEntryFactory(external_id="golden:llm", canonical_name="golden-llm", display_name="Golden LLM",
                        provider="goldenai", input_cost=Decimal("0.000003"), output_cost=Decimal("0.000015"),
                        cache_read_cost=Decimal("0.0000003"), cache_write_cost=Decimal("0.00000375"))
    search = ServiceEntryFactory(external_id="golden:search", canonical_name="golden-search",
                                 display_name="Golden Search", provider="goldensearch", input_cost=Decimal("0.005"),
                                 cost_unit="request", service_type="search", is_api=True)
    call = rec.call

    # identity and keys
    call(api, "GET", "/v1/verify")
    call(publishable, "GET", "/v1/verify")
    call(api, "GET", "/v1/me/key")
    call(anonymous, "GET", "/v1/verify", note="no key")
    call(bad_key, "GET", "/v1/verify", note="unknown key")
    call(api, "GET", "/v1/users/me", note="API key on a user-session route")
    call(api, "POST", "/v1/invitations", {"email": "new@golden.example.com", "role": "member"})
    call(api, "POST", "/v1/invitations/accept/not-a-token", {})

    # catalog
    call(api, "GET", "/v1/services", query="provider=goldenai")
    call(api, "GET", "/v1/services", query="isApi=true&search=golden&limit=5")
    call(api, "GET", "/v1/services", query="limit=0")
    call(api, "GET", f"/v1/services/{search.pk}")
    call(api, "GET", f"/v1/services/{uuid.UUID(int=1)}")

    # customers
    acme = call(api, "POST", "/v1/customers", {
        "name": "Acme Corp", "externalId": "acme", "email": "billing@acme.example.com", "phone": "+1 555 0100",
        "addressLine1": "1 Main St", "city": "Springfield", "country": "US", "netTerms": 15,
        "invoiceEmailRecipients": ["ap@acme.example.com"], "metadata": {"tier": "gold", "score": 1.50}})
    beta = call(api, "POST", "/v1/customers", {"name": "Beta LLC", "externalId": "beta"})
    call(api, "POST", "/v1/customers", {"externalId": "nameless"}, note="400 missing name")
    call(api, "POST", "/v1/customers", {"name": "Dup", "externalId": "acme"}, note="409 duplicate externalId")
    call(api, "POST", "/v1/customers", {"name": "Bad", "email": "not-an-email", "status": "gone"})
    call(api, "POST", "/v1/customers", {"name": 5, "netTerms": "soon", "metadata": []})
    call(publishable, "POST", "/v1/customers", {"name": "Nope"}, note="403 publishable write")
    call(api, "GET", "/v1/customers")
    call(api, "GET", "/v1/customers", query="limit=1&offset=1")
    call(api, "GET", "/v1/customers", query="limit=101")
    call(api, "GET", f"/v1/customers/{acme['id']}")
    call(other_api, "GET", f"/v1/customers/{acme['id']}", note="404 other organization")
    call(api, "GET", "/v1/customers/not-a-uuid")
    call(api, "PATCH", f"/v1/customers/{beta['id']}", {"phone": "+1 555 0199", "status": "inactive"})
    call(api, "PATCH", f"/v1/customers/{beta['id']}", {"externalId": "acme"}, note="409")
    call(legal, "GET", "/v1/customers", note="403 legal key")

    # agents
    agent = call(api, "POST", "/v1/agents", {"name": "Research Agent", "agentCode": "research",
                                             "description": "Writes reports", "context": {"version": 2}})
    spare = call(api, "POST", "/v1/agents", {"name": "Spare", "agentCode": "spare", "isActive": False})
    call(api, "POST", "/v1/agents", {"name": "Dup", "agentCode": "research"}, note="409")
    call(api, "POST", "/v1/agents", {"name": "x" * 256, "agentCode": ""}, note="400")
    call(api, "POST", "/v1/agents", {"name": "Flag", "agentCode": "flag", "isActive": "yes"}, note="400 boolean")
    call(api, "GET", "/v1/agents")
    call(api, "GET", f"/v1/agents/{agent['id']}")
    call(api, "PATCH", f"/v1/agents/{spare['id']}", {"description": "kept aside"})

    # signals
    pages = call(api, "POST", "/v1/signals", {"name": "Pages", "shortName": "pages", "agentId": agent["id"]})
    reports = call(api, "POST", "/v1/signals", {"name": "Reports", "agentId": agent["id"], "type": "volume"})
    seats_signal = call(api, "POST", "/v1/signals", {"name": "Pool Units", "shortName": "units",
                                                     "agentId": agent["id"]})
    call(api, "POST", "/v1/signals", {"name": "Pages", "agentId": agent["id"]}, note="409")
    call(api, "POST", "/v1/signals", {"name": "Bad", "agentId": "nope", "type": "other"}, note="400")
    call(api, "POST", "/v1/signals", {"name": "Lost", "agentId": str(uuid.UUID(int=7))}, note="404 agent")
    bulk = call(api, "POST", "/v1/signals/bulk", {"agentId": spare["id"], "signals": [{"name": "a"}, {"name": "b"}]})
    call(api, "GET", "/v1/signals", query=f"agentId={agent['id']}")
    call(api, "GET", f"/v1/signals/{pages['id']}")
    call(api, "PATCH", f"/v1/signals/{reports['id']}", {"shortName": "reports"})
    call(api, "PATCH", f"/v1/signals/{reports['id']}", {"agentId": spare["id"]}, note="agentId fixed")
    if isinstance(bulk, list) and bulk:
        call(api, "DELETE", f"/v1/signals/{bulk[0]['id']}")
    else:
        call(api, "DELETE", f"/v1/signals/{uuid.UUID(int=9)}")
    call(api, "DELETE", f"/v1/agents/{agent['id']}", note="409 signals attached")

    # pricing plans and strategies
    plan = call(api, "POST", "/v1/pricing-plans", {"name": "Pro", "agentId": agent["id"], "description": "Main plan",
                                                   "featuresList": {"support": "email"}})
    pool_plan = call(api, "POST", "/v1/pricing-plans", {"name": "Pool", "agentId": agent["id"]})
    next_plan = call(api, "POST", "/v1/pricing-plans", {"name": "Next", "agentId": agent["id"]})
    call(api, "POST", "/v1/pricing-plans", {"description": "nameless"}, note="400")
    call(api, "POST", f"/v1/pricing-plans/{plan['id']}/agents", {"agentId": spare["id"]})
    call(api, "POST", f"/v1/pricing-plans/{plan['id']}/agents", {"agentId": spare["id"]}, note="409 linked")
    call(api, "DELETE", f"/v1/pricing-plans/{plan['id']}/agents/{spare['id']}")
    call(api, "GET", "/v1/pricing-plans", query=f"agentId={agent['id']}&isActive=true")
    call(api, "GET", f"/v1/pricing-plans/{plan['id']}")
    call(api, "PATCH", f"/v1/pricing-plans/{plan['id']}", {"description": "The main plan"})
    strategies = call(api, "POST", f"/v1/pricing-plans/{plan['id']}/pricing-strategies", [
        {"name": "per page", "agentId": agent["id"], "chargeType": "usage", "signalId": pages["id"],
         "pricingModel": "flat", "rate": "0.25", "tags": ["core"]},
        {"name": "reports graduated", "agentId": agent["id"], "chargeType": "usage", "signalId": reports["id"],
         "pricingModel": "graduated", "tiers": [{"lower": 0, "upper": 10, "rate": 2},
                                                {"lower": 10, "upper": None, "rate": 1.5}]},
        {"name": "platform fee", "agentId": agent["id"], "chargeType": "recurring", "rate": 20},
        {"name": "setup", "agentId": agent["id"], "chargeType": "onetime", "rate": 99.99},
        {"name": "seats", "agentId": agent["id"], "chargeType": "seat_based", "pricingModel": "volume",
         "tiers": [{"lower": 0, "upper": 5, "rate": 10}, {"lower": 5, "upper": None, "rate": 8}],
         "minimumCommitment": 2}])
    call(api, "POST", f"/v1/pricing-plans/{pool_plan['id']}/pricing-strategies", [
        {"name": "pool", "agentId": agent["id"], "chargeType": "usage", "signalId": seats_signal["id"],
         "pricingModel": "credit_pool", "tiers": [{"lower": 0, "upper": 100, "rate": 50},
                                                  {"lower": 100, "upper": None, "rate": "0.75"}]}])
    call(api, "POST", f"/v1/pricing-plans/{next_plan['id']}/pricing-strategies", [
        {"name": "per page", "agentId": agent["id"], "chargeType": "usage", "signalId": pages["id"],
         "pricingModel": "volume", "tiers": [{"lower": 0, "upper": 100, "rate": "0.2"},
                                             {"lower": 100, "upper": None, "rate": "0.1"}]}])
    call(api, "POST", f"/v1/pricing-plans/{plan['id']}/pricing-strategies",
         [{"name": "no signal", "agentId": agent["id"], "chargeType": "usage", "pricingModel": "flat", "rate": 1}],
         note="400 usage without signalId")
    call(api, "POST", f"/v1/pricing-plans/{plan['id']}/pricing-strategies", {"name": "not an array"}, note="400")
    call(api, "GET", f"/v1/pricing-plans/{plan['id']}/pricing-strategies", query="chargeType=usage&limit=5")
    first = strategies[0]["id"] if isinstance(strategies, list) else str(uuid.UUID(int=3))
    call(api, "GET", f"/v1/pricing-plans/{plan['id']}/pricing-strategies/{first}")
    call(api, "PATCH", f"/v1/pricing-plans/{plan['id']}/pricing-strategies/{first}", {"tags": ["core", "pages"]})
    batch = call(api, "PATCH", f"/v1/pricing-plans/{plan['id']}/pricing-strategies", {"strategies": {
        "new": [{"name": "extra", "agentId": agent["id"], "chargeType": "recurring", "rate": 5,
                 "billingFrequency": "yearly"}],
        "update": [{"id": first, "rate": "0.30"}]}})
    extra = next((item["id"] for item in (batch or {}).get("created", []) or []), None) \
        if isinstance(batch, dict) else None
    call(api, "DELETE", f"/v1/pricing-plans/{plan['id']}/pricing-strategies/{extra or uuid.UUID(int=4)}")
    copy = call(api, "POST", f"/v1/pricing-plans/{plan['id']}/copy", {"newName": "Pro copy", "discount": 10})
    call(api, "DELETE", f"/v1/pricing-plans/{copy['id'] if copy else uuid.UUID(int=5)}")

    # subscriptions
    subscription = call(api, "POST", "/v1/subscriptions", {
        "name": "Acme Pro", "planId": plan["id"], "agentId": agent["id"], "customerId": acme["id"],
        "startDate": "2026-01-01T00:00:00Z", "seatsCount": 3, "invoiceMemo": "Thank you", "billingDay": 1,
        "metadata": {"po": "PO-1"}})
    pool = call(api, "POST", "/v1/subscriptions", {
        "name": "Beta Pool", "planId": pool_plan["id"], "agentId": agent["id"], "customerId": beta["id"],
        "startDate": "2026-02-01T00:00:00Z", "isForever": True})
    call(api, "POST", "/v1/subscriptions", {"name": "Bad", "planId": plan["id"], "agentId": agent["id"],
                                            "customerId": acme["id"], "startDate": "yesterday"}, note="400")
    call(api, "POST", "/v1/subscriptions", {"name": "Backwards", "planId": plan["id"], "agentId": agent["id"],
                                            "customerId": beta["id"], "startDate": "2026-02-01T00:00:00Z",
                                            "endDate": "2026-01-01"}, note="422 end before start")
    call(api, "POST", "/v1/subscriptions", {"name": "Custom", "planId": plan["id"], "agentId": agent["id"],
                                            "customerId": beta["id"], "startDate": "2026-02-01T00:00:00Z",
                                            "billingCycle": "custom"}, note="422 custom without days")
    call(api, "GET", "/v1/subscriptions", query=f"customerId={acme['id']}")
    call(api, "GET", f"/v1/subscriptions/{subscription['id']}")
    call(api, "PATCH", f"/v1/subscriptions/{subscription['id']}", {"invoiceMemo": "Thanks again", "seatsCount": 4})
    call(api, "PATCH", f"/v1/subscriptions/{subscription['id']}", {"startDate": "2026-01-02T00:00:00Z"},
         note="400 start fixed")
    call(api, "PATCH", f"/v1/subscriptions/{subscription['id']}/invoice-dates", {"billingDay": 1})
    call(api, "DELETE", f"/v1/customers/{acme['id']}", note="409 active subscription")

    # usage
    record = {"customerExternalId": "acme", "agentCode": "research"}
    call(api, "POST", "/v1/usage/record", {"records": [
        {**record, "signalName": "pages", "model": "Golden-LLM ", "modelProvider": "goldenai", "inputTokens": 1200,
         "outputTokens": 300, "quantity": 50, "usageDate": "2026-01-10T10:00:00Z", "idempotencyKey": "evt-1",
         "metadata": {"matterId": "M-1"}, "environment": "production"},
        {**record, "signalName": "reports", "services": [
            {"model": "golden-llm", "modelProvider": "goldenai", "inputTokens": 10, "cacheReadTokens": 5},
            {"model": "golden-search", "modelProvider": "goldensearch", "quantity": 2.75}],
         "quantity": 12, "usageDate": "2026-01-11T10:00:00Z"},
        {**record, "signalName": "pages", "model": "mystery", "modelProvider": "nobody", "quantity": 0.30000000000000004,
         "usageDate": "2026-01-12T10:00:00Z"},
        {**record, "signalName": "pages", "model": "golden-llm", "modelProvider": "goldenai", "inputTokens": -1,
         "usageDate": "2026-01-13T10:00:00Z"},
        {**record, "signalName": "pages", "model": "golden-llm", "modelProvider": "goldenai", "surprise": 1,
         "usageDate": "2026-01-14T10:00:00Z"},
        {"customerExternalId": "newco", "agentCode": "newbot", "signalName": "tasks", "model": "golden-search",
         "modelProvider": "goldensearch", "usageDate": "2026-02-10T10:00:00Z"},
        {"customerExternalId": "beta", "agentCode": "research", "signalName": "units", "model": "golden-search",
         "modelProvider": "goldensearch", "quantity": 120, "usageDate": "2026-03-02T10:00:00Z"},
        {"customerExternalId": "dev@golden.example.com", "agentCode": "svc-coding-agent", "signalName": "edits",
         "model": "golden-llm", "modelProvider": "goldenai", "inputTokens": 1000, "outputTokens": 100,
         "usageDate": "2026-03-16T08:00:00Z"},
    ]})
    call(api, "POST", "/v1/usage/record", {"records": [
        {**record, "signalName": "pages", "model": "golden-llm", "modelProvider": "goldenai", "inputTokens": 1200,
         "outputTokens": 300, "quantity": 50, "usageDate": "2026-01-10T10:00:00Z", "idempotencyKey": "evt-1"}]},
         note="replay")
    call(api, "POST", "/v1/usage/record", {"records": [
        {**record, "signalName": "pages", "model": "golden-llm", "modelProvider": "goldenai",
         "services": [{"model": "golden-llm", "modelProvider": "goldenai"}]}]}, note="400 mixed shapes")
    call(api, "POST", "/v1/usage/record", {"records": []}, note="400 no records")
    call(api, "POST", "/v1/usage/record", raw=b'{"records": [', note="400 malformed JSON")
    call(ingest, "POST", "/v1/usage/record", {"records": [
        {**record, "signalName": "pages", "model": "golden-search", "modelProvider": "goldensearch",
         "usageDate": "2026-01-15T10:00:00Z"}]}, note="ingest key")
    call(ingest, "GET", "/v1/customers", note="403 ingest key")
    call(publishable, "POST", "/v1/usage/record", {"records": []}, note="403 publishable")
    call(api, "GET", "/v1/events", query="limit=20")
    call(api, "GET", "/v1/events/export", query="startDate=2026-01-01&endDate=2026-03-31")
    call(api, "POST", "/v1/events/map-model", {"model": "mystery", "modelProvider": "nobody",
                                               "serviceId": str(search.pk)})

    # price overrides and jobs
    override = call(api, "POST", "/v1/price-overrides", {"modelProvider": "goldenai", "discountPercent": 10,
                                                         "effectiveFrom": "2026-03-01T00:00:00Z", "note": "deal"})
    call(api, "POST", "/v1/price-overrides", {"serviceId": "nope"}, note="400")
    call(member, "POST", "/v1/price-overrides", {}, note="403 member")
    call(api, "GET", "/v1/price-overrides")
    override_id = (override or {}).get("id") or str(uuid.UUID(int=6))
    call(api, "GET", f"/v1/price-overrides/{override_id}")
    job_id = (override or {}).get("jobId") or str(uuid.UUID(int=8))
    call(api, "GET", f"/v1/jobs/{job_id}")
    call(api, "GET", f"/v1/jobs/{uuid.UUID(int=8)}", note="404")
    call(api, "DELETE", f"/v1/price-overrides/{override_id}")

    # matters
    matter = call(legal, "POST", "/v1/matters", {"matterNumber": "M-1", "name": "Acme v. Beta",
                                                 "clientName": "Acme"})
    matter2 = call(legal, "POST", "/v1/matters", {"matterNumber": "M-2", "name": "Second", "clientName": "Beta",
                                                  "status": "closed"})
    call(legal, "POST", "/v1/matters", {"matterNumber": "M-1", "name": "Dup", "clientName": "X"}, note="409")
    call(member, "GET", "/v1/matters", note="403 member")
    call(legal, "GET", "/v1/matters", query="limit=5")
    call(legal, "GET", f"/v1/matters/{matter['id']}")
    call(legal, "PATCH", f"/v1/matters/{matter2['id']}", {"status": "open", "responsibleUserId": None})
    call(legal, "PATCH", f"/v1/matters/{matter2['id']}", {"matterNumber": "M-1"}, note="409")
    rule = call(legal, "POST", "/v1/matter-rules", {"matterId": matter2["id"], "priority": 10,
                                                    "signalPattern": "REP"})
    call(legal, "POST", "/v1/matter-rules", {"matterId": matter2["id"]}, note="400 no matcher")
    call(legal, "GET", "/v1/matter-rules")
    call(legal, "PATCH", f"/v1/matter-rules/{rule['id']}", {"agentCode": "research"})
    call(legal, "POST", "/v1/matter-rules/apply", {})
    unassigned = call(legal, "GET", "/v1/matters/unassigned", query="limit=3")
    event_id = ((unassigned or {}).get("results") or [{}])[0].get("eventId") or str(uuid.UUID(int=2))
    call(legal, "POST", "/v1/matters/assign", {"eventId": event_id, "matterId": matter["id"]})
    call(legal, "POST", "/v1/matters/assign", {"eventId": str(uuid.UUID(int=2)), "matterId": None}, note="404")
    call(legal, "GET", "/v1/matters/audit", query="startDate=2026-01-01&endDate=2026-03-31")
    call(legal, "DELETE", f"/v1/matter-rules/{rule['id']}")
    call(legal, "DELETE", f"/v1/matters/{matter2['id']}")

    # invoices and payments
    draft = call(api, "POST", "/v1/invoices/generate", {
        "customerId": acme["id"], "subscriptionId": subscription["id"],
        "billingPeriodStart": "2026-01-01T00:00:00Z", "billingPeriodEnd": "2026-01-31T23:59:59Z"})
    call(api, "POST", "/v1/invoices/generate", {"customerId": "x"}, note="400")
    call(api, "POST", "/v1/invoices/generate", {"customerId": beta["id"], "subscriptionId": subscription["id"]},
         note="404 not the customer's")
    call(api, "GET", "/v1/invoices", query="customerExternalId=acme&status=draft")
    call(api, "GET", f"/v1/invoices/{draft['id']}")
    call(api, "PATCH", f"/v1/invoices/{draft['id']}", {"memo": "Reviewed"})
    call(api, "GET", f"/v1/invoices/{draft['id']}/pdf")
    call(api, "POST", f"/v1/invoices/{draft['id']}/send", {"message": "Your January invoice"})
    _stripe(api, rec, draft["id"], 100, "pi_golden_partial")
    paid = call(api, "GET", f"/v1/invoices/{draft['id']}")
    payment = ((paid or {}).get("payments") or [{}])[0].get("id") or str(uuid.UUID(int=10))
    call(api, "POST", f"/v1/invoices/{draft['id']}/payments/{payment}/refund", {"amount": "0.50"})
    call(api, "POST", "/v1/webhooks/stripe", raw=b"{}", note="400 unsigned", HTTP_STRIPE_SIGNATURE="t=1,v1=00")
    february = call(api, "POST", "/v1/invoices/generate", {
        "customerId": acme["id"], "subscriptionId": subscription["id"],
        "billingPeriodStart": "2026-02-01T00:00:00Z", "billingPeriodEnd": "2026-03-01T00:00:00Z"})
    call(api, "POST", f"/v1/invoices/{february['id']}/void", {"reason": "duplicate"})
    call(api, "POST", f"/v1/invoices/{february['id']}/send", {}, note="400 void")
    call(api, "GET", f"/v1/invoices/{uuid.UUID(int=11)}", note="404")

    # credit pools
    call(api, "GET", "/v1/credit-balances")
    call(api, "GET", "/v1/credit-balances", query="belowPercent=200", note="400")
    call(api, "GET", f"/v1/subscriptions/{pool['id']}/credit-balance")
    call(api, "POST", f"/v1/subscriptions/{pool['id']}/credit-topup", {"units": 25, "idempotencyKey": "top-1",
                                                                        "note": "goodwill"})
    call(api, "POST", f"/v1/subscriptions/{pool['id']}/credit-topup", {"units": 25, "idempotencyKey": "top-1"},
         note="replay")
    call(api, "POST", f"/v1/subscriptions/{pool['id']}/credit-topup", {"units": 30, "idempotencyKey": "top-1"},
         note="409 other units")
    call(api, "POST", f"/v1/subscriptions/{pool['id']}/credit-topup", {"units": 0, "idempotencyKey": " "},
         note="400")
    call(member, "POST", f"/v1/subscriptions/{pool['id']}/credit-topup", {"units": 1, "idempotencyKey": "m"},
         note="403 member")
    call(api, "POST", f"/v1/subscriptions/{pool['id']}/credit-alerts-pause", {"paused": True})
    call(api, "POST", f"/v1/subscriptions/{pool['id']}/credit-alerts-pause", {"paused": "yes"}, note="400")

    # analytics
    call(api, "GET", "/v1/analytics/usage", query="startDate=2026-01-01&endDate=2026-03-31&groupBy=monthly"
                                                  "&breakdownBy=signal")
    call(api, "GET", "/v1/analytics/usage", query="groupBy=hourly", note="400")
    call(api, "GET", "/v1/analytics/cost", query="startDate=2026-01-01&endDate=2026-03-31&includePriorWindow=true")
    call(api, "GET", "/v1/analytics/cost", query="startDate=2026-01-01", note="400 no endDate")
    call(api, "GET", "/v1/analytics/mrr", query="variant=all")
    call(api, "GET", "/v1/analytics/mrr", query="variant=weird", note="400")
    call(api, "GET", "/v1/analytics/revenue", query="startDate=2026-01-01&endDate=2026-03-31")
    call(api, "GET", f"/v1/customers/{acme['id']}/revenue", query="startDate=2026-01-01&endDate=2026-01-31")
    call(api, "GET", f"/v1/subscriptions/{subscription['id']}/revenue")
    call(legal, "GET", "/v1/analytics/usage", note="403 legal")

    # plan changes and the changelog
    changed = call(api, "POST", f"/v1/subscriptions/{subscription['id']}/change-plan", {
        "planId": next_plan["id"], "effectiveAt": "2026-03-10T00:00:00Z"})
    call(api, "POST", f"/v1/subscriptions/{subscription['id']}/change-plan", {
        "planId": next_plan["id"], "effectiveAt": "2026-01-15T00:00:00Z"}, note="409 invoiced period")
    call(api, "GET", f"/v1/subscriptions/{subscription['id']}/changelog")
    call(api, "DELETE", f"/v1/subscriptions/{(changed or subscription)['id']}/change-plan")

    # spend controls
    org_cap = call(finance, "POST", "/v1/control/caps", {"scope": "org", "providerScope": "all", "amountUsd": 100,
                                                         "period": "month", "mode": "track"})
    call(finance, "POST", "/v1/control/caps", {"scope": "dev", "scopeValue": "dev@golden.example.com",
                                               "providerScope": "all", "amountUsd": 500, "period": "week",
                                               "mode": "enforce"}, note="400 above ceiling")
    dev_cap = call(finance, "POST", "/v1/control/caps", {
        "scope": "dev", "scopeValue": "dev@golden.example.com", "providerScope": "all", "amountUsd": "12.5",
        "period": "week", "mode": "enforce", "coolOffHours": 2, "alertThresholds": [50, 90]})
    call(finance, "POST", "/v1/control/caps", {"scope": "org", "providerScope": "all", "amountUsd": 1,
                                               "period": "day", "mode": "track"}, note="409")
    call(member, "POST", "/v1/control/caps", {}, note="403 member")
    call(api, "GET", "/v1/control/caps")
    call(finance, "PATCH", f"/v1/control/caps/{dev_cap['id']}", {"amountUsd": 10, "alertThresholds": [25, 50, 100]})
    call(ingest, "GET", "/v1/control/spend", query="period=month&customerExternalId=dev@golden.example.com")
    call(ingest, "POST", "/v1/control/devices/heartbeat", {"customerExternalId": "dev@golden.example.com",
                                                           "deviceId": "laptop-1", "armed": True})
    call(ingest, "GET", "/v1/control/coverage")
    call(ingest, "GET", "/v1/control/check", query="customerExternalId=dev@golden.example.com")
    call(finance, "DELETE", f"/v1/control/caps/{org_cap['id']}", note="400 dev cap left without ceiling")
    call(finance, "DELETE", f"/v1/control/caps/{dev_cap['id']}")

    # customer alerts
    alert = call(finance, "POST", "/v1/customer-alerts", {
        "customerId": acme["id"], "metric": "cost", "thresholdUsd": 10, "windowMode": "month",
        "notifyEmail": "finance-full@golden.example.com"})
    call(finance, "POST", "/v1/customer-alerts", {
        "customerId": acme["id"], "metric": "cost", "thresholdUsd": 10, "windowMode": "month",
        "notifyEmail": "finance-full@golden.example.com"}, note="409 identical")
    call(finance, "POST", "/v1/customer-alerts", {
        "customerId": acme["id"], "metric": "revenue", "thresholdUsd": -1, "windowMode": "custom",
        "notifyEmail": "member-full@golden.example.com"}, note="400")
    call(publishable, "GET", "/v1/customer-alerts", note="403 publishable")
    call(finance, "GET", "/v1/customer-alerts")
    alert_id = (alert or {}).get("id") or str(uuid.UUID(int=12))
    call(finance, "PATCH", f"/v1/customer-alerts/{alert_id}", {"thresholdUsd": "25.50", "windowMode": "custom",
                                                               "customStartDate": "2026-03-01",
                                                               "customEndDate": "2026-03-31"})
    call(finance, "DELETE", f"/v1/customer-alerts/{alert_id}")

    # portal sessions
    session = call(api, "POST", "/v1/portal-sessions", {"customerExternalId": "acme", "returnUrl": "https://x.test",
                                                         "features": ["invoices", "usage"]})
    call(api, "POST", "/v1/portal-sessions", {"returnUrl": "https://x.test"}, note="400 no customer")
    call(api, "POST", "/v1/portal-sessions", {"customerExternalId": "ghost"}, note="404")
    call(publishable, "GET", "/v1/portal-sessions", note="401 publishable")
    call(api, "GET", "/v1/portal-sessions", query="includeExpired=true")
    call(api, "GET", f"/v1/portal-sessions/{session['id']}")
    call(api, "DELETE", f"/v1/portal-sessions/{session['id']}")
    call(api, "GET", f"/v1/portal-sessions/{session['id']}", note="revoked")

    # outbound webhooks
    endpoint = call(api, "POST", "/v1/webhook-endpoints", {"url": "http://127.0.0.1:9/hooks",
                                                           "eventTypes": ["invoice.paid"], "description": "ledger"})
    call(api, "POST", "/v1/webhook-endpoints", {"url": "ftp://x", "eventTypes": ["invoice.eaten"]}, note="400")
    call(api, "GET", "/v1/webhook-endpoints")
    call(api, "GET", f"/v1/webhook-endpoints/{endpoint['id']}")
    call(api, "PATCH", f"/v1/webhook-endpoints/{endpoint['id']}", {"enabled": False, "eventTypes": []})
    call(api, "PATCH", f"/v1/webhook-endpoints/{endpoint['id']}", {"enabled": True})
    call(api, "POST", f"/v1/webhook-endpoints/{endpoint['id']}/test", {})
    call(api, "POST", f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret", {})
    call(api, "POST", f"/v1/webhook-endpoints/{endpoint['id']}/replay", {"since": "2026-03-01T00:00:00Z"})
    deliveries = call(api, "GET", f"/v1/webhook-endpoints/{endpoint['id']}/deliveries")
    delivery = ((deliveries or {}).get("data") or [{}])[0].get("id") or str(uuid.UUID(int=13))
    call(api, "POST", f"/v1/webhook-endpoints/{endpoint['id']}/deliveries/{delivery}/resend", {})
    call(api, "DELETE", f"/v1/webhook-endpoints/{endpoint['id']}")

    # deletes last, and what stays 404
    call(api, "DELETE", f"/v1/pricing-plans/{pool_plan['id']}", note="409 active subscription")
    call(api, "DELETE", f"/v1/pricing-plans/{plan['id']}/pricing-strategies/{first}")
    call(api, "DELETE", f"/v1/customers/{beta['id']}", note="409 active subscription")
    call(api, "DELETE", f"/v1/agents/{spare['id']}")
    call(api, "GET", "/v1/no-such-route")


def test_every_answer_of_the_scenario_is_unchanged(frozen_server):
    rec = Recorder()
    run_scenario(rec)
    missing = sorted(f"{method.upper()} {path}" for path, _, method in api_routes() if (method, path) not in rec.called)
    assert not missing, f"the scenario calls no such route: {missing}"
    _compare("api_answers.txt", "\n".join(rec.lines))
