"""Every listing and export of usage shows each stored event exactly once (contract.md "Derived figures", "Lists the
spec calls arrays"): the event list page by page, its export, a matter's events and cost, Unassigned, whatever the
events' dates (ties, back-filled months), keys replayed, shapes, and signals or agents deleted since.

Expected rows are the ids `POST /v1/usage/record` answered, never read back from the service's own queries."""
import csv
import io
import json
from decimal import Decimal

import pytest

from customers import export
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db
D = Decimal


@pytest.fixture
def llm(db):
    """$1 per million input tokens, $2 per million output: 100 in + 50 out cost 0.0002."""
    return ServiceEntryFactory(canonical_name="ledger-llm", provider="ledgerai", input_cost=D("0.000001"),
                               output_cost=D("0.000002"))


@pytest.fixture
def search(db):
    """A non-LLM service at $0.01 per request."""
    return ServiceEntryFactory(canonical_name="ledger-search", provider="ledgerapi", is_api=True,
                               cost_unit="request", input_cost=D("0.01"))


def rec(day: str, *, customer="c-1", agent="a-1", signal="s-1", **extra) -> dict:
    return {"customerExternalId": customer, "agentCode": agent, "signalName": signal, "model": "ledger-llm",
            "modelProvider": "ledgerai", "inputTokens": 100, "outputTokens": 50, "usageDate": day, **extra}


def record(api, *records) -> list[str]:
    """The event ids the service answered, in record order (a replay answers its original event's id)."""
    resp = api.post("/v1/usage/record", {"records": list(records)})
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert not body["results"]["failed"], body
    return [entry["eventId"] for entry in body["results"]["success"]]


def walk(api, path: str, limit: int, **params) -> tuple[list[str], set[str]]:
    """Every row id of a bare-array list, window by window; and the totals the windows announced."""
    ids, totals, offset = [], set(), 0
    while True:
        resp = api.get(path, {**params, "limit": limit, "offset": offset})
        assert resp.status_code == 200, resp.json()
        totals.add(resp["X-Total-Count"])
        rows = resp.json()
        ids += [row["id"] for row in rows]
        if len(rows) < limit:
            return ids, totals
        offset += limit


def export_ids(api, **params) -> dict[str, list[str]]:
    """The ids of the CSV and of the JSON Lines export."""
    found = {}
    for export_format in ("csv", "jsonl"):
        resp = api.get("/v1/events/export", {**params, "format": export_format})
        assert resp.status_code == 200
        text = b"".join(resp.streaming_content).decode()
        rows = (list(csv.DictReader(io.StringIO(text))) if export_format == "csv"
                else [json.loads(line) for line in text.splitlines()])
        found[export_format] = [row["id"] for row in rows]
    return found


def test_pages_of_tied_and_back_filled_events_list_and_export_each_event_once(api, llm, monkeypatch):
    tied = record(api, *[rec("2025-03-01T10:00:00Z", quantity=n) for n in range(1, 16)])  # 15 at one instant
    back_filled = record(api, *[rec("2023-11-30T23:00:00Z", quantity=n) for n in range(1, 5)])  # a month with no
    spread = record(api, *[rec(f"2025-0{month}-15T08:00:00Z") for month in (1, 2, 4, 5)])      # partition
    keyed = record(api, rec("2025-03-01T10:00:00Z", idempotencyKey="k-1"))
    replayed = record(api, rec("2024-01-01T00:00:00Z", idempotencyKey="k-1"))  # the same key: no new event
    assert replayed == keyed
    stored = tied + back_filled + spread + keyed  # 24 events
    assert len(set(stored)) == 24

    for limit in (7, 10, 24, 100):
        ids, totals = walk(api, "/v1/events", limit)
        assert sorted(ids) == sorted(stored), limit
        assert totals == {"24"}

    monkeypatch.setattr(export, "EXPORT_PAGE", 4)  # pages end inside the run of 16 events at one instant
    for export_format, ids in export_ids(api).items():
        assert sorted(ids) == sorted(stored), export_format


def matter_create(api, number: str) -> str:
    resp = api.post("/v1/matters", {"matterNumber": number, "name": f"Matter {number}", "clientName": "Client"})
    assert resp.status_code == 201, resp.json()
    return resp.json()["id"]


def test_a_matter_of_101_events_counts_and_costs_each_once_and_lists_the_100_most_recent(api, llm):
    matter_id = matter_create(api, "M-101")
    older = record(api, *[rec("2025-03-01T10:00:00Z", metadata={"matterId": "M-101"}) for _ in range(100)])
    newest = record(api, rec("2025-03-02T10:00:00Z", metadata={"matterId": "M-101"}))
    record(api, rec("2025-03-02T10:00:00Z"))  # Unassigned
    detail = api.get(f"/v1/matters/{matter_id}").json()
    assert (detail["eventCount"], detail["eventsMissingCost"]) == (101, 0)
    assert D(str(detail["actualCost"])) == D("0.0202")  # 101 x 0.0002
    listed = [row["eventId"] for row in detail["events"]]
    assert len(listed) == 100 and len(set(listed)) == 100
    assert listed[0] == newest[0] and set(listed) < set(older + newest)
    (row,) = api.get("/v1/matters").json()["results"]
    assert (row["eventCount"], D(str(row["actualCost"]))) == (101, D("0.0202"))
    unassigned = api.get("/v1/matters/unassigned").json()
    assert unassigned["totalResults"] == 1
    audit = api.get("/v1/matters/audit", {"startDate": "2025-03-01", "endDate": "2025-03-31"}).json()
    assert audit["totals"]["eventCount"] == 102


def test_unassigned_pages_of_tied_events_show_each_event_once(api, llm):
    tied = record(api, *[rec("2025-03-01T10:00:00Z", quantity=n) for n in range(1, 26)])
    matter_create(api, "M-1")  # a book with matters, none of these events filed under one
    seen = []
    for page in (1, 2, 3):
        body = api.get("/v1/matters/unassigned", {"page": page, "limit": 10}).json()
        assert (body["totalResults"], body["totalPages"]) == (25, 3)
        seen += [row["eventId"] for row in body["results"]]
    assert sorted(seen) == sorted(tied)
    assert D(str(body["totalCost"])) == D("0.005")  # 25 x 0.0002


def test_events_of_a_deleted_signal_and_agent_stay_listed_exported_and_filtered_by_their_recorded_names(api, llm):
    kept = record(api, rec("2025-03-01T10:00:00Z"))
    orphaned = record(api, rec("2025-03-01T10:00:00Z", agent="gone-agent", signal="gone-signal"),
                      rec("2025-03-02T10:00:00Z", agent="gone-agent", signal="gone-signal"))
    (signal,) = api.get("/v1/signals", {"shortName": "gone-signal"}).json()
    assert api.delete(f"/v1/signals/{signal['id']}").status_code == 204
    assert api.delete(f"/v1/agents/{signal['agentId']}").status_code == 204
    ids, totals = walk(api, "/v1/events", 2)
    assert sorted(ids) == sorted(kept + orphaned) and totals == {"3"}
    for params in ({"agentCode": "gone-agent"}, {"signalName": "gone-signal"}):
        ids, totals = walk(api, "/v1/events", 100, **params)
        assert sorted(ids) == sorted(orphaned) and totals == {"2"}
        assert {name: sorted(found) for name, found in export_ids(api, **params).items()} == {
            "csv": sorted(orphaned), "jsonl": sorted(orphaned)}
    rows = {row["id"]: row for row in api.get("/v1/events").json()}
    assert [(rows[i]["agentId"], rows[i]["signalId"]) for i in orphaned] == [(None, None), (None, None)]


def test_a_multi_service_event_is_one_row_everywhere_with_its_whole_cost(api, llm, search):
    matter_id = matter_create(api, "M-7")
    (multi,) = record(api, {"customerExternalId": "c-1", "agentCode": "a-1", "signalName": "s-1",
                            "usageDate": "2025-03-01T10:00:00Z", "metadata": {"matterId": "M-7"},
                            "services": [{"model": "ledger-llm", "modelProvider": "ledgerai", "inputTokens": 100,
                                          "outputTokens": 50},
                                         {"model": "ledger-search", "modelProvider": "ledgerapi", "quantity": 3}]})
    rows = api.get("/v1/events").json()
    assert [row["id"] for row in rows] == [multi] and rows[0]["usageCost"] == "0.0302"  # 0.0002 + 3 x 0.01
    assert export_ids(api) == {"csv": [multi], "jsonl": [multi]}
    detail = api.get(f"/v1/matters/{matter_id}").json()
    assert detail["eventCount"] == 1 and [row["eventId"] for row in detail["events"]] == [multi]
    assert D(str(detail["actualCost"])) == D("0.0302")


def test_date_filters_are_half_open_in_any_offset(api, llm):
    at_start, last_instant, next_day = record(
        api, rec("2025-01-10T00:00:00Z"), rec("2025-01-10T23:59:59.500000Z"), rec("2025-01-11T00:00:00Z"))
    before = record(api, rec("2025-01-09T23:59:59.999999Z"))

    def listed(**params):
        ids, _ = walk(api, "/v1/events", 100, **params)
        exported = export_ids(api, **params)
        assert sorted(exported["csv"]) == sorted(exported["jsonl"]) == sorted(ids), params
        return sorted(ids)

    assert listed(startDate="2025-01-10", endDate="2025-01-10") == sorted([at_start, last_instant])
    assert listed(startDate="2025-01-10T01:00:00+01:00", endDate="2025-01-11T00:00:00Z") == sorted(
        [at_start, last_instant])
    assert listed(startDate="2025-01-09T19:00:00-05:00", endDate="2025-01-10T19:00:00-05:00") == sorted(
        [at_start, last_instant])  # the end, 00:00Z, is exclusive
    assert listed(endDate="2025-01-10T00:00:00Z") == before
    assert listed(startDate="2025-01-10T23:59:59.5Z") == sorted([last_instant, next_day])
    assert listed(endDate="2025-01-10T23:59:59Z") == sorted(before + [at_start, last_instant])  # the day's last second


@pytest.mark.parametrize("path", ["/v1/events", "/v1/customers", "/v1/agents", "/v1/signals", "/v1/subscriptions"])
@pytest.mark.parametrize("limit", ["0", "101", "-1", "1.5", "ten"])
def test_a_limit_outside_1_to_100_is_a_400(api, path, limit):
    resp = api.get(path, {"limit": limit})
    assert resp.status_code == 400, (path, limit, resp.status_code)
    assert "limit" in " ".join(resp.json()["message"])


def test_an_offset_past_the_end_answers_no_rows_with_the_whole_count(api, llm):
    record(api, rec("2025-03-01T10:00:00Z"), rec("2025-03-02T10:00:00Z"))
    for offset in (2, 3, 1_000_000_000):
        resp = api.get("/v1/events", {"offset": offset})
        assert resp.status_code == 200 and resp.json() == [] and resp["X-Total-Count"] == "2"


def test_matters_and_unassigned_partition_the_ledger_through_tags_rules_assignments_and_a_deletion(api, llm):
    first, second = matter_create(api, "M-A"), matter_create(api, "M-B")
    assert api.post("/v1/matter-rules", {"matterId": second, "agentCode": "ruled"}).status_code == 201
    tagged = record(api, *[rec("2025-03-01T10:00:00Z", metadata={"matterId": "M-A"}) for _ in range(4)])
    ruled = record(api, *[rec("2025-03-01T10:00:00Z", agent="ruled") for _ in range(3)])
    loose = record(api, *[rec("2025-02-27T10:00:00Z") for _ in range(5)])
    replay = record(api, rec("2025-01-01T00:00:00Z", idempotencyKey="once", metadata={"matterId": "M-A"}))
    assert record(api, rec("2025-01-01T00:00:00Z", idempotencyKey="once", metadata={"matterId": "M-A"})) == replay
    for event_id, matter_id in ((loose[0], first), (tagged[0], None), (ruled[0], first)):
        assert api.post("/v1/matters/assign", {"eventId": event_id, "matterId": matter_id}).status_code == 201
    # M-A: tagged[1:], replay, loose[0], ruled[0] = 6; M-B: ruled[1:] = 2; Unassigned: tagged[0], loose[1:] = 5
    counts = {row["matterNumber"]: row["eventCount"] for row in api.get("/v1/matters").json()["results"]}
    assert counts == {"M-A": 6, "M-B": 2}
    detail = api.get(f"/v1/matters/{first}").json()
    assert sorted(row["eventId"] for row in detail["events"]) == sorted(tagged[1:] + replay + [loose[0], ruled[0]])
    unassigned = api.get("/v1/matters/unassigned", {"limit": 100}).json()
    assert sorted(row["eventId"] for row in unassigned["results"]) == sorted([tagged[0]] + loose[1:])
    assert unassigned["totalResults"] == 5
    assert api.get("/v1/events")["X-Total-Count"] == "13"

    deleted = api.delete(f"/v1/matters/{second}").json()
    assert deleted["eventsReturnedToUnassigned"] == 2
    unassigned = api.get("/v1/matters/unassigned", {"limit": 100}).json()
    assert sorted(row["eventId"] for row in unassigned["results"]) == sorted([tagged[0]] + loose[1:] + ruled[1:])
    assert D(str(unassigned["totalCost"])) == D("0.0014")  # 7 x 0.0002
    audit = api.get("/v1/matters/audit", {"startDate": "2025-01-01", "endDate": "2025-03-31"}).json()
    assert (audit["unassigned"]["eventCount"], audit["totals"]["eventCount"]) == (7, 13)


def test_a_replayed_key_lists_and_exports_its_one_event(api, llm):
    (original,) = record(api, rec("2023-11-30T23:00:00Z", idempotencyKey="run-7"))  # a month with no partition
    assert record(api, rec("2025-03-01T10:00:00Z", idempotencyKey="run-7")) == [original]
    ids, totals = walk(api, "/v1/events", 100, idempotencyKey="run-7")
    assert ids == [original] and totals == {"1"}
    assert export_ids(api, idempotencyKey="run-7") == {"csv": [original], "jsonl": [original]}
    assert export_ids(api) == {"csv": [original], "jsonl": [original]}


@pytest.fixture
def operator(client, org):
    from accounts.models import Membership, User
    user = User.objects.create_user(email="ops@ledger.example.com", password="pw", is_staff=True)
    Membership.objects.create(user=user, organization=org, role="owner")
    client.force_login(user)
    return client


def test_the_consoles_export_of_a_matters_events_has_each_of_them_once(operator, api, llm, monkeypatch):
    matter_id = matter_create(api, "M-9")
    filed = record(api, *[rec("2025-03-01T10:00:00Z", metadata={"matterId": "M-9"}) for _ in range(7)],
                   rec("2023-11-30T23:00:00Z", metadata={"matterId": "M-9"}))  # back-filled, no partition
    record(api, *[rec("2025-03-01T10:00:00Z") for _ in range(3)])  # Unassigned, at the same instant
    monkeypatch.setattr(export, "EXPORT_PAGE", 3)
    for action in ("export_events_csv", "export_events_jsonl"):
        resp = operator.post(f"/admin/customers/usageevent/?matter={matter_id}",
                             {"action": action, "select_across": "1", "index": "0", "_selected_action": ["x"]})
        assert resp.status_code == 200
        text = b"".join(resp.streaming_content).decode()
        rows = (list(csv.DictReader(io.StringIO(text))) if action.endswith("csv")
                else [json.loads(line) for line in text.splitlines()])
        assert sorted(row["id"] for row in rows) == sorted(filed), action
    listed = operator.get("/admin/customers/usageevent/", {"matter": matter_id})
    assert sorted(str(event.pk) for event in listed.context["cl"].result_list) == sorted(filed)


@pytest.fixture
def month_moving(monkeypatch, settings):
    """February 2030 back-filled into the default partition, its move to a partition of its own held at its worst
    moment (tests/customers/test_ledger_moves.py); the partitions the test made are dropped after it."""
    from django.db import connection

    from core import clock
    from customers import ledger
    from customers.partitions import ledger_partitions
    from tests.customers.test_ledger_moves import NOW, PausedMove

    monkeypatch.setattr(clock, "now", lambda: NOW)
    settings.LEDGER_PARTITIONS_PAST_MONTHS = 36
    monkeypatch.setattr(ledger, "_settle_partitions", lambda: None)
    before = {partition.name for partition in ledger_partitions()}
    yield lambda: PausedMove(monkeypatch)
    with connection.cursor() as cursor:
        for name in sorted({partition.name for partition in ledger_partitions()} - before):
            cursor.execute(f"DROP TABLE {name}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("read", ["list", "export"])
def test_a_month_moving_out_of_the_default_partition_is_listed_and_exported_whole(api, transactional_db,
                                                                                     month_moving, read):
    from tests.customers.test_ledger_moves import in_default_partition, read_beside

    ServiceEntryFactory(canonical_name="ledger-llm", provider="ledgerai", input_cost=D("0.000001"),
                        output_cost=D("0.000002"))
    stored = record(api, *[rec(f"2030-02-{day:02d}T09:00:00Z") for day in range(1, 21) for _ in (1, 2)])
    assert in_default_partition() == 40

    move = month_moving()
    move.start()
    if read == "list":
        ids, totals = read_beside(move, lambda: walk(api, "/v1/events", 100))
        assert totals == {"40"}
    else:
        ids = read_beside(move, lambda: export_ids(api)["csv"])
    assert sorted(ids) == sorted(stored)
