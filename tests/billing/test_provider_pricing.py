"""Recording prices an event as its provider bills it at the event's own instant (docs/decisions/catalog.md):
off-peak windows by `usageDate`, never by the time the record arrives."""
from decimal import Decimal as D

import pytest

from customers.models import UsageEvent

pytestmark = pytest.mark.django_db


def record(api, **fields):
    body = {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "answers", "model": "deepseek-v4-flash",
            "modelProvider": "deepseek", "inputTokens": 1_000_000, "outputTokens": 100_000, **fields}
    resp = api.post("/v1/usage/record", {"records": [body]})
    assert resp.status_code == 200, resp.json()
    return resp.json()["results"]["success"][0]


@pytest.mark.parametrize("usage_date, expected", [
    ("2026-01-05T08:00:00Z", "0.42"),   # Monday 08:00 UTC: peak, $0.30 / $1.20 per million
    ("2026-01-05T12:00:00Z", "0.21"),   # Monday 12:00 UTC: off-peak, $0.15 / $0.60
    ("2026-01-10T08:00:00Z", "0.21"),   # Saturday: off-peak all day
])
def test_off_peak_prices_apply_by_the_events_usage_date(api, usage_date, expected):
    entry = record(api, usageDate=usage_date)
    assert entry["totalCostUsd"] == expected
    assert UsageEvent.objects.get(pk=entry["eventId"]).usage_cost == D(expected)


def test_a_folded_provider_spelling_is_priced_like_its_catalog_provider(api):
    entry = record(api, model="command-a-03-2025", modelProvider="cohere_chat", inputTokens=1000, outputTokens=100,
                   usageDate="2026-01-05T08:00:00Z")
    assert D(entry["totalCostUsd"]) > 0
