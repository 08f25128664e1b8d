"""contract.md "Decisions" (outbound webhooks, price overrides, plan changes, numbers), checked through the HTTP
API. Deliveries are verified with a signature check written here from Standard Webhooks 1.0 (HMAC-SHA256 over
`{id}.{timestamp}.{body}` with the base64-decoded part of the `whsec_` secret), never with the service's code."""
import base64
import hashlib
import hmac
import json
import time
from datetime import datetime, timezone
from decimal import Decimal as D
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from tests.billing.invoice_support import billing_chain, recurring
from tests.billing.support import create_plan, ok
from tests.webhooks.support import create_endpoint

pytestmark = pytest.mark.django_db
UTC = timezone.utc


# --------------------------------------------------------------------------- an independent verifier

def signatures_valid(secret: str, request) -> bool:
    """Standard Webhooks 1.0, from the spec: any `v1,` signature of the header matching ours."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{request.headers['webhook-id']}.{request.headers['webhook-timestamp']}.".encode() + request.body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    sent = [part.split(",", 1) for part in request.headers["webhook-signature"].split(" ")]
    return any(version == "v1" and hmac.compare_digest(value, expected) for version, value in sent)


def envelope(secret: str, request) -> dict:
    assert signatures_valid(secret, request), request.headers
    assert abs(int(request.headers["webhook-timestamp"]) - time.time()) < 300
    body = json.loads(request.body, parse_float=D)
    assert set(body) == {"id", "type", "createdAt", "data"}, body.keys()
    assert body["id"] == request.headers["webhook-id"]
    return body


@pytest.fixture
def hooked(api, receiver, django_capture_on_commit_callbacks, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    endpoint = create_endpoint(api, receiver.url)

    def call(function, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return function(*args, **kwargs)

    def events(event_type=None) -> list[dict]:
        bodies = [envelope(endpoint["secret"], request) for request in receiver.requests]
        return [body for body in bodies if event_type is None or body["type"] == event_type]
    return SimpleNamespace(endpoint=endpoint, call=call, events=events)


# --------------------------------------------------------------------------- webhooks

def test_a_scheduled_plan_change_reports_the_old_sides_end_when_the_job_ends_it(api, hooked, book, frozen_now):
    frozen_now(datetime(2025, 6, 10, 12, tzinfo=UTC))
    chain = hooked.call(billing_chain, api, book, [recurring("20")])
    other = create_plan(api, chain.agent.id, name="Pro")
    new = hooked.call(api.post, f"/v1/subscriptions/{chain.subscription['id']}/change-plan",
                      {"planId": other["id"], "effectiveAt": "2025-07-01T00:00:00Z"})
    assert new.status_code == 201, new.content
    assert hooked.events("subscription.ended") == []
    frozen_now(datetime(2025, 7, 1, 1, tzinfo=UTC))
    hooked.call(call_command, "run_scheduled_jobs", "--now", "2025-07-01T01:00:00Z")
    [ended] = hooked.events("subscription.ended")
    assert ended["data"]["id"] == chain.subscription["id"] and ended["data"]["status"] == "ended"


def test_a_price_overrides_repricing_job_that_fails_is_reported_job_failed(api, hooked, monkeypatch):
    from catalog.models import ServiceEntry
    service = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    record = {"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "gpt-4o",
              "modelProvider": "openai", "inputTokens": 10, "outputTokens": 1, "usageDate": "2026-03-02T00:00:00Z"}
    ok(api.post("/v1/usage/record", {"records": [record]}))

    def breaks(*args, **kwargs):
        raise RuntimeError("the disk is full")
    monkeypatch.setattr("customers.price_overrides.events_price_in_chunks", breaks)
    resp = hooked.call(api.post, "/v1/price-overrides", {"serviceId": str(service.id), "inputCost": "0.000002"})
    assert resp.status_code == 201, resp.content
    job = ok(api.get(f"/v1/jobs/{resp.json()['jobId']}"))
    assert job["status"] == "failed", job
    [failed] = hooked.events("job.failed")
    assert failed["data"]["id"] == job["id"]


# --------------------------------------------------------------------------- exact numbers

def _raw(api, path, text):
    return api.post(path, text, format=None, content_type="application/json")


def test_a_discount_percent_keeps_every_digit_a_client_prints(api):
    """contract "Exact numbers in": 100/3 printed by a client as 33.333333333333336 is stored and applied as written.
    It was a 400 ("no more than 9 digits in total"): the override's discount column kept 6 places, unlike every other
    exact input (core/money.py EXACT_IN_PLACES; an invoice's discountPercent keeps them)."""
    from catalog.models import PriceOverride
    resp = _raw(api, "/v1/price-overrides", '{"modelProvider": "openai", "discountPercent": 33.333333333333336}')
    assert resp.status_code == 201, resp.content
    assert D(json.loads(resp.content)["discountPercent"]) == D("33.333333333333336")
    assert PriceOverride.objects.get().discount_percent == D("33.333333333333336")
    record = {"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "gpt-4o",
              "modelProvider": "openai", "inputTokens": 1_000_000, "outputTokens": 100_000}  # 3.5 at list price
    [entry] = ok(api.post("/v1/usage/record", {"records": [record]}))["results"]["success"]
    # 3.5 x (100 - 33.333333333333336) / 100 = 2.33333333333333324, at 12 places
    assert D(entry["totalCostUsd"]) == D("2.333333333333")


# --------------------------------------------------------------------------- plan changes

def test_a_change_inside_a_first_period_prorates_each_sides_pool_by_its_days(api, book):
    from tests.billing.test_exact_invoices import Book
    from tests.billing.test_plan_changes import fee, lines, pool, subscribe, change
    acme = Book(api, book)
    credits = acme.signals["calls"]
    starter, _ = acme.plan(fee("31"), pool(100, "100", "2", credits))
    pro, _ = acme.plan(fee("62"), pool(100, "100", "2", credits))
    old = subscribe(acme, starter, "2025-03-11T00:00:00Z")
    acme.record(("calls", 40, "2025-03-15T00:00:00Z"), ("calls", 20, "2025-03-25T00:00:00Z"))
    new = ok(change(api, old, pro, effectiveAt="2025-03-20T00:00:00Z"), 201)
    before = acme.generate(old, ("2025-03-11T00:00:00Z", "2025-03-20T00:00:00Z"))
    after = acme.generate(new, ("2025-03-20T00:00:00Z", "2025-04-01T00:00:00Z"))
    # old: 9 of 31 days: fee 9.00; pool 900/31 units for 29.03, 40 used: (40 - 900/31) x 2 = 21.94 -> 50.97
    # new: 12 of 31 days: fee 24.00; pool 1200/31 = 38.71 units for 38.71, 20 used -> 38.71
    assert lines(before) == [("recurring", 1, 9.0), ("usage", 40, 50.97)]
    assert lines(after) == [("recurring", 1, 24.0), ("usage", 20, 38.71)]
