"""GET /v1/events/export: every matching event with its cost and attributes, streamed page by page
(docs/concepts.md "Taking usage out", docs/decisions/usage-recording.md "Export")."""
import csv
import gzip
import io
import json
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.exact_json import loads as exact_loads
from customers import export
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db
D = Decimal


@pytest.fixture
def llm(db):
    """$1 per million input tokens, $2 per million output."""
    return ServiceEntryFactory(canonical_name="list-llm", provider="listai", input_cost=D("0.000001"),
                               output_cost=D("0.000002"))


def record_raw(api, *records: str):
    """Records written as raw JSON objects (numbers with every digit as sent)."""
    resp = api.post("/v1/usage/record", f'{{"records": [{",".join(records)}]}}', format=None,
                    content_type="application/json")
    assert resp.status_code == 200, resp.json()
    assert not [f for f in resp.json()["results"]["failed"] if not f["stored"]], resp.json()
    return resp.json()


def rec(customer="c-1", day="2025-03-01T10:00:00Z", quantity="1", model="list-llm", signal="s-1", **extra) -> str:
    """A record as JSON text; "@exact" in `extra` stands for the number 12345678901234567890.123."""
    fields = {"customerExternalId": customer, "agentCode": "a-1", "signalName": signal, "model": model,
              "modelProvider": "listai", "inputTokens": 100, "outputTokens": 50, "usageDate": day, **extra}
    text = json.dumps(fields)[:-1] + f', "quantity": {quantity}}}'
    return text.replace('"@exact"', "12345678901234567890.123")


def body_of(resp) -> bytes:
    assert resp.status_code == 200, resp.content if not resp.streaming else resp.status_code
    return b"".join(resp.streaming_content)


def csv_rows(resp) -> list[dict]:
    return list(csv.DictReader(io.StringIO(body_of(resp).decode())))


def test_csv_has_every_event_oldest_first_with_its_cost_and_attributes(api, llm):
    record_raw(api, rec(day="2025-03-02T08:00:00Z", quantity="0.30000000000000004", idempotencyKey="k-2",
                        environment="production", metadata={"ticket": "T-1", "score": 1}),
               rec(day="2025-03-01T10:00:00.250000Z", quantity="3"),
               rec(day="2025-03-03T00:00:00Z", model="not-in-catalog"))
    resp = api.get("/v1/events/export")
    assert resp["Content-Type"] == "text/csv; charset=utf-8"
    assert resp["Content-Disposition"] == 'attachment; filename="usage-events.csv"'
    rows = csv_rows(resp)
    assert list(rows[0]) == list(export.COLUMN_NAMES)
    assert [row["usageDate"] for row in rows] == ["2025-03-01T10:00:00.250000Z", "2025-03-02T08:00:00.000000Z",
                                                  "2025-03-03T00:00:00.000000Z"]
    first, second, unpriced = rows
    # 100 x 0.000001 + 50 x 0.000002 = 0.0002 per event, whatever its quantity (an LLM prices tokens)
    assert (second["quantity"], second["usageCost"], second["eventStatus"]) == ("0.30000000000000004", "0.0002",
                                                                                 "PROCESSED")
    assert (second["idempotencyKey"], second["environment"]) == ("k-2", "production")
    assert json.loads(second["metadata"]) == {"ticket": "T-1", "score": 1}
    assert (unpriced["usageCost"], unpriced["eventStatus"], unpriced["model"]) == ("", "NEEDS_COST_BACKFILL",
                                                                                   "not-in-catalog")
    assert (first["quantity"], first["inputTokens"], first["outputTokens"], first["cacheReadTokens"]) == (
        "3", "100", "50", "")
    listed = {row["id"]: row for row in api.get("/v1/events").json()}
    for row in rows:
        same = listed[row["id"]]
        assert (row["customerId"], row["agentId"], row["signalId"], row["serviceId"] or None) == (
            same["customerId"], same["agentId"], same["signalId"], same["serviceId"])


def test_jsonl_lines_carry_the_listing_s_fields_and_values(api, llm):
    record_raw(api, rec(quantity="0.016666666666666666", metadata={"exact": "@exact"}),
               rec(day="2025-03-04T00:00:00Z", quantity="2", model="not-in-catalog"))
    resp = api.get("/v1/events/export", {"format": "jsonl"})
    assert resp["Content-Type"] == "application/x-ndjson"
    lines = [exact_loads(line) for line in body_of(resp).decode().splitlines()]
    listed = {row["id"]: row for row in exact_loads(api.get("/v1/events").content.decode())}
    assert len(lines) == 2
    for line in lines:
        same = listed[line["id"]]
        assert set(line) == set(same)
        for name in set(line) - {"usageDate", "createdAt"}:
            assert line[name] == same[name], name
    assert lines[0]["quantity"] == "0.016666666666666666"
    assert lines[0]["metadata"] == {"exact": D("12345678901234567890.123")}  # the digits as sent
    assert lines[1]["usageCost"] is None


def test_filters_are_those_of_the_event_listing(api, llm):
    record_raw(api, rec(customer="c-1", day="2025-03-01T10:00:00Z"), rec(customer="c-2", day="2025-03-05T10:00:00Z"),
               rec(customer="c-1", day="2025-03-09T10:00:00Z", signal="s-2"))
    ids = lambda **params: [row["customerExternalId"] + "@" + row["usageDate"][:10]  # noqa: E731
                            for row in csv_rows(api.get("/v1/events/export", params))]
    assert ids(customerExternalId="c-1") == ["c-1@2025-03-01", "c-1@2025-03-09"]
    assert ids(startDate="2025-03-05", endDate="2025-03-05") == ["c-2@2025-03-05"]
    assert ids(signalName="s-2", agentCode="a-1") == ["c-1@2025-03-09"]
    assert ids(agentCode="nobody") == []
    assert ids(limit=1, offset=1) == ["c-1@2025-03-01", "c-2@2025-03-05", "c-1@2025-03-09"]  # paging plays no part


def test_pages_follow_usage_date_then_id_through_ties_without_a_server_side_cursor(api, llm, monkeypatch):
    record_raw(api, *[rec(day="2025-03-01T10:00:00Z", quantity=str(n)) for n in range(1, 6)],
               rec(day="2025-02-01T10:00:00Z", quantity="9"))
    monkeypatch.setattr(export, "EXPORT_PAGE", 2)
    with CaptureQueriesContext(connection) as queries:
        rows = csv_rows(api.get("/v1/events/export"))
    assert len(rows) == 6 and len({row["id"] for row in rows}) == 6
    assert rows[0]["quantity"] == "9"
    tied = rows[1:]
    assert [row["id"] for row in tied] == sorted(row["id"] for row in tied)
    statements = [q["sql"] for q in queries.captured_queries if "customers_usageevent" in q["sql"]]
    assert len(statements) == 4  # pages of 2, 2, 2 and an empty one
    assert not [q for q in queries.captured_queries if "DECLARE" in q["sql"].upper()]


def test_gzip_as_a_file_or_as_the_transfer_encoding(api, llm):
    record_raw(api, rec(quantity="0.5"))
    plain = body_of(api.get("/v1/events/export"))
    as_file = api.get("/v1/events/export", {"gzip": "true"})
    assert as_file["Content-Type"] == "application/gzip" and "Content-Encoding" not in as_file
    assert as_file["Content-Disposition"] == 'attachment; filename="usage-events.csv.gz"'
    assert gzip.decompress(body_of(as_file)) == plain
    encoded = api.get("/v1/events/export", {"format": "jsonl"}, HTTP_ACCEPT_ENCODING="br, gzip;q=0.8")
    assert (encoded["Content-Encoding"], encoded["Content-Type"]) == ("gzip", "application/x-ndjson")
    assert json.loads(gzip.decompress(body_of(encoded)))["quantity"] == "0.5"
    refused = api.get("/v1/events/export", HTTP_ACCEPT_ENCODING="gzip;q=0")
    assert "Content-Encoding" not in refused and body_of(refused) == plain


def test_asking_for_the_export_media_type_is_served(api, llm):
    record_raw(api, rec())
    assert api.get("/v1/events/export", HTTP_ACCEPT="text/csv").status_code == 200


@pytest.mark.parametrize("params, message", [
    ({"format": "xml"}, 'format: "xml" is not a valid choice.'),
    ({"gzip": "yes"}, "gzip: Must be true or false."),
    ({"startDate": "yesterday"}, "startDate: Not a valid ISO 8601 date or timestamp."),
    ({"customerId": "cust-1"}, "customerId: Enter a valid UUID."),
])
def test_a_bad_parameter_is_a_400_before_any_row(api, params, message):
    resp = api.get("/v1/events/export", params)
    assert resp.status_code == 400 and message in resp.json()["message"], resp.json()


def test_events_of_another_organization_or_book_are_never_exported(api, other_api, client_for, llm):
    record_raw(api, rec())
    assert csv_rows(other_api.get("/v1/events/export")) == []
    assert csv_rows(client_for(environment="live").get("/v1/events/export")) == []


@pytest.mark.parametrize("kwargs", [{"key_type": "publishable"}, {"scope": "ingest"}, {"scope": "legal"}])
def test_the_export_needs_the_key_the_listing_needs(client_for, kwargs):
    assert client_for(**kwargs).get("/v1/events/export").status_code == 403


# --------------------------------------------------------------------------- the console's action


@pytest.fixture
def operator(client, org):
    from accounts.models import Membership, User
    user = User.objects.create_user(email="ops@acme.example.com", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


# export_csv: every list's "Export selected rows as CSV" is the ledger's export here (the list's columns wrote "Why
# unpriced" only for the rows of the page shown).
@pytest.mark.parametrize("action, media_type", [("export_events_csv", "text/csv; charset=utf-8"),
                                                ("export_csv", "text/csv; charset=utf-8"),
                                                ("export_events_jsonl", "application/x-ndjson")])
def test_the_console_exports_every_matching_event_of_its_list(operator, api, other_api, llm, action, media_type):
    record_raw(api, rec(customer="c-1", quantity="0.30000000000000004"), rec(customer="c-2"),
               rec(customer="c-1", day="2025-03-02T10:00:00Z"))
    record_raw(other_api, rec(customer="c-1"))  # another organization: never in this operator's console
    resp = operator.post("/admin/customers/usageevent/?q=c-1", {"action": action, "select_across": "1",
                                                                "index": "0", "_selected_action": ["x"]})
    assert resp["Content-Type"] == media_type
    text = body_of(resp).decode()
    rows = (list(csv.DictReader(io.StringIO(text))) if action.endswith("csv")
            else [json.loads(line) for line in text.splitlines()])
    assert [row["customerExternalId"] for row in rows] == ["c-1", "c-1"]
    assert rows[0]["quantity"] == "0.30000000000000004"


def test_the_consoles_csv_quotes_a_name_a_spreadsheet_would_run_and_the_apis_keeps_it(operator, api, llm):
    record_raw(api, rec(customer="=HYPERLINK(\"http://x.example\",\"a\")", idempotencyKey="-1+2"))
    resp = operator.post("/admin/customers/usageevent/", {"action": "export_events_csv", "select_across": "1",
                                                          "index": "0", "_selected_action": ["x"]})
    [row] = list(csv.DictReader(io.StringIO(body_of(resp).decode())))
    assert (row["customerExternalId"], row["idempotencyKey"]) == ("'=HYPERLINK(\"http://x.example\",\"a\")", "'-1+2")
    assert row["quantity"] == "1" and row["agentCode"] == "a-1"
    [row] = list(csv.DictReader(io.StringIO(body_of(api.get("/v1/events/export", {"format": "csv"})).decode())))
    assert row["customerExternalId"] == '=HYPERLINK("http://x.example","a")'  # data for a warehouse, as stored


def test_the_decision_record_lists_the_csv_columns_in_their_order():
    # Code reading an export by position goes by this list; it had fallen three columns behind.
    import re
    from pathlib import Path

    from customers.export import COLUMNS

    text = (Path(__file__).resolve().parents[2] / "docs/decisions/usage-recording.md").read_text()
    listed = text.split("one line per event with the columns", 1)[1].split(". Null", 1)[0]
    assert re.findall(r"`(\w+)`", listed) == [name for name, *_ in COLUMNS]
