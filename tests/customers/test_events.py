"""GET /v1/events: the book's ledger as a bare array with filters (docs/decisions/usage-recording.md)."""
from decimal import Decimal

import pytest

from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def llm(db):
    return ServiceEntryFactory(canonical_name="list-llm", provider="listai", input_cost=Decimal("0.000001"),
                               output_cost=Decimal("0.000002"))


def record(api, **fields):
    body = {"customerExternalId": "c-1", "agentCode": "a-1", "signalName": "s-1", "model": "list-llm",
            "modelProvider": "listai", "inputTokens": 100, "outputTokens": 50, **fields}
    resp = api.post("/v1/usage/record", {"records": [body]})
    assert resp.status_code == 200, resp.json()
    results = resp.json()["results"]
    return (results["success"] or results["failed"])[0]


def test_events_are_a_bare_array_with_strings_for_cost_and_quantity(api, llm):
    entry = record(api, quantity=2.5, metadata={"ticketId": "T-1", "nested": {"camelCase": True}},
                   usageDate="2025-03-01T10:00:00Z", environment="production", idempotencyKey="e-1")
    resp = api.get("/v1/events")
    assert resp.status_code == 200 and resp["X-Total-Count"] == "1"
    (row,) = resp.json()
    assert row["id"] == entry["eventId"] and row["rawEventId"] == entry["rawEventId"]
    assert (row["quantity"], row["usageCost"], row["eventStatus"]) == ("2.5", "0.0002", "PROCESSED")
    assert row["metadata"] == {"ticketId": "T-1", "nested": {"camelCase": True}}
    assert (row["usageDate"], row["environment"], row["idempotencyKey"]) == ("2025-03-01T10:00:00Z", "production",
                                                                             "e-1")
    assert (row["customerExternalId"], row["agentCode"], row["signalName"]) == ("c-1", "a-1", "s-1")
    assert (row["inputTokens"], row["outputTokens"], row["model"], row["modelProvider"]) == (100, 50, "list-llm",
                                                                                             "listai")


def test_unpriced_events_list_with_null_cost_and_backfill_status(api):
    record(api, model="unknown-x", modelProvider="nobody")
    (row,) = api.get("/v1/events").json()
    assert row["usageCost"] is None and row["eventStatus"] == "NEEDS_COST_BACKFILL"


def test_events_page_by_limit_and_offset_newest_first(api, llm):
    for day in (1, 2, 3):
        record(api, usageDate=f"2025-01-0{day}T00:00:00Z", quantity=day)
    first = api.get("/v1/events?limit=2")
    rest = api.get("/v1/events?limit=2&offset=2")
    assert [row["quantity"] for row in first.json()] == ["3", "2"]
    assert [row["quantity"] for row in rest.json()] == ["1"]
    assert first["X-Total-Count"] == rest["X-Total-Count"] == "3"


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "offset=-1", "limit=x"])
def test_bad_paging_is_400(api, query):
    assert api.get(f"/v1/events?{query}").status_code == 400


def test_events_filter_by_customer_status_and_dates(api, llm):
    a = record(api, customerExternalId="alpha", usageDate="2025-01-10T12:00:00Z")
    record(api, customerExternalId="beta", usageDate="2025-01-11T12:00:00Z")
    record(api, customerExternalId="beta", model="unknown-y", modelProvider="nobody",
           usageDate="2025-01-12T12:00:00Z")
    ids = lambda query: [row["customerExternalId"] for row in api.get(f"/v1/events?{query}").json()]  # noqa: E731
    assert ids("customerExternalId=alpha") == ["alpha"]
    customer_id = api.get("/v1/events?customerExternalId=alpha").json()[0]["customerId"]
    assert ids(f"customerId={customer_id}") == ["alpha"]
    assert ids("eventStatus=NEEDS_COST_BACKFILL") == ["beta"]
    assert ids("startDate=2025-01-11&endDate=2025-01-11") == ["beta"]  # a date-only end includes the day
    assert ids("startDate=2025-01-10T12:00:00Z&endDate=2025-01-11T12:00:00Z") == ["alpha"]  # timestamp end excl.
    # A timestamp whose separator is a lowercase t was read as a date: the window ran to the next midnight.
    assert ids("startDate=2025-01-10T12:00:00Z&endDate=2025-01-11t12:00:00Z") == ["alpha"]
    assert a["eventId"] in {row["id"] for row in api.get("/v1/events").json()}


@pytest.mark.parametrize("query", ["customerId=not-a-uuid", "eventStatus=DONE", "startDate=soon",
                                   "environment=prod"])
def test_bad_filters_are_400_naming_the_parameter(api, query):
    resp = api.get(f"/v1/events?{query}")
    assert resp.status_code == 400
    assert query.split("=")[0] in " ".join(resp.json()["message"])


def test_events_of_another_organization_or_book_are_invisible(api, other_api, client_for, llm):
    record(api)
    assert other_api.get("/v1/events").json() == []
    assert client_for(environment="live").get("/v1/events").json() == []


@pytest.mark.parametrize("kwargs", [{"key_type": "publishable"}, {"scope": "ingest"}, {"scope": "legal"}])
def test_events_need_a_full_secret_key(client_for, kwargs):
    assert client_for(**kwargs).get("/v1/events").status_code == 403


def test_events_filter_by_an_idempotency_key_exactly_as_it_was_sent(api, llm):
    # Keys are kept as sent, never trimmed; the filter trimmed the one it was given and found nothing.
    spaced = record(api, idempotencyKey="run-1 ")
    plain = record(api, idempotencyKey="run-1")
    for key, event in (("run-1%20", spaced), ("run-1", plain)):
        resp = api.get(f"/v1/events?idempotencyKey={key}")
        assert [row["id"] for row in resp.json()] == [event["eventId"]] and resp["X-Total-Count"] == "1"
        exported = api.get(f"/v1/events/export?idempotencyKey={key}")
        body = b"".join(exported.streaming_content).decode()
        assert exported.status_code == 200 and event["eventId"] in body
        assert (key == "run-1") == (spaced["eventId"] not in body)
