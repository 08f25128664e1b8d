"""GET /v1/matters/audit: the summary per matter, Unassigned and totals over a window, and its CSV export
(spec §4 Matters "audit"; parameters in docs/decisions/matters.md)."""
import csv
import io
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from core import clock
from tests.factories import MatterFactory

pytestmark = pytest.mark.django_db


def day(text, hour=12):
    return datetime.fromisoformat(text).replace(hour=hour, tzinfo=timezone.utc)


@pytest.fixture
def ledger(book, record):
    """Two matters (one with no events in March), tagged and unassigned events around March 2025."""
    busy = MatterFactory(book=book, matter_number="B-2", name="Busy", client_name="=SUM(A1)")
    idle = MatterFactory(book=book, matter_number="A-1", name="Idle, quiet", client_name="Quiet Co")
    record(tag="B-2", cost="1.000000000001", usage_date=day("2025-03-01", hour=0))
    record(tag="B-2", cost=None, usage_date=day("2025-03-15"))
    record(tag="B-2", cost="2.5", usage_date=day("2025-03-31", hour=23))
    record(tag="B-2", cost="100", usage_date=day("2025-04-01", hour=0))  # outside: the day after endDate
    record(tag="B-2", cost="100", usage_date=day("2025-02-28", hour=23))  # outside: before startDate
    record(cost="0.25", usage_date=day("2025-03-10"))
    record(cost=None, usage_date=day("2025-03-11"))
    return busy, idle


MARCH = {"startDate": "2025-03-01", "endDate": "2025-03-31"}


def test_summary_has_a_row_per_matter_the_unassigned_row_and_totals(api, ledger):
    busy, idle = ledger
    resp = api.get("/v1/matters/audit", MARCH)
    assert resp.status_code == 200
    body = resp.json()
    assert (body["view"], body["startDate"], body["endDate"], body["currency"]) == (
        "summary", "2025-03-01", "2025-03-31", "USD")
    assert body["matters"] == [
        {"matterId": str(idle.id), "matterNumber": "A-1", "name": "Idle, quiet", "clientName": "Quiet Co",
         "status": "open", "eventCount": 0, "eventsMissingCost": 0, "cost": "0"},
        {"matterId": str(busy.id), "matterNumber": "B-2", "name": "Busy", "clientName": "=SUM(A1)",
         "status": "open", "eventCount": 3, "eventsMissingCost": 1, "cost": "3.500000000001"},
    ]
    assert body["unassigned"] == {"matterId": None, "matterNumber": None, "name": "Unassigned", "clientName": None,
                                  "status": None, "eventCount": 2, "eventsMissingCost": 1, "cost": "0.25"}
    assert body["totals"] == {"eventCount": 5, "eventsMissingCost": 2, "cost": "3.750000000001"}


def test_csv_export_has_the_same_rows_as_the_summary_and_reconciles(api, ledger):
    summary = api.get("/v1/matters/audit", MARCH).json()
    resp = api.get("/v1/matters/audit", {**MARCH, "format": "csv"})
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/csv")
    assert resp["Content-Disposition"] == 'attachment; filename="matters-audit-2025-03-01-to-2025-03-31.csv"'
    header, *lines = list(csv.reader(io.StringIO(resp.content.decode())))
    assert header == ["Matter number", "Matter name", "Client", "Status", "Events", "Events missing cost",
                      "Cost (USD)"]
    json_rows = [*summary["matters"], summary["unassigned"]]
    assert len(lines) == len(json_rows) + 1
    for line, row in zip(lines, json_rows):
        assert line[0] == (row["matterNumber"] or "") and line[1] == row["name"]
        assert line[3] == (row["status"] or "")
        assert (int(line[4]), int(line[5]), line[6]) == (row["eventCount"], row["eventsMissingCost"], row["cost"])
    total = lines[-1]
    assert total[1] == "Total"
    assert (int(total[4]), int(total[5]), total[6]) == (
        summary["totals"]["eventCount"], summary["totals"]["eventsMissingCost"], summary["totals"]["cost"])
    assert sum(Decimal(line[6]) for line in lines[:-1]) == Decimal(total[6])


def test_csv_neutralizes_cells_a_spreadsheet_would_run_as_formulas(api, ledger):
    lines = list(csv.reader(io.StringIO(api.get("/v1/matters/audit", {**MARCH, "format": "csv"}).content.decode())))
    assert lines[2][2] == "'=SUM(A1)"


def test_window_defaults_to_the_current_utc_month(api, book, record):
    today = clock.now().date()
    record(cost="4", usage_date=clock.now())
    body = api.get("/v1/matters/audit").json()
    assert body["startDate"] == today.replace(day=1).isoformat()
    assert body["endDate"][:7] == today.isoformat()[:7] and body["endDate"] >= today.isoformat()
    assert body["totals"] == {"eventCount": 1, "eventsMissingCost": 0, "cost": "4"}


def test_a_single_day_window_includes_that_whole_day(api, ledger):
    body = api.get("/v1/matters/audit", {"startDate": "2025-03-31", "endDate": "2025-03-31"}).json()
    assert body["totals"] == {"eventCount": 1, "eventsMissingCost": 0, "cost": "2.5"}


def test_end_date_before_start_date_is_422(api):
    resp = api.get("/v1/matters/audit", {"startDate": "2025-03-31", "endDate": "2025-03-01"})
    assert resp.status_code == 422
    assert resp.json()["message"][0].startswith("endDate:")


@pytest.mark.parametrize("params, field", [
    ({"startDate": "March"}, "startDate"),
    ({"endDate": "2025-02-30"}, "endDate"),
    ({"view": "events"}, "view"),
    ({"format": "xlsx"}, "format"),
])
def test_bad_parameters_are_400_naming_the_field(api, params, field):
    resp = api.get("/v1/matters/audit", params)
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")


def test_audit_covers_only_the_callers_organization(api, other_book, record):
    MatterFactory(book=other_book, matter_number="THEIRS")
    record(into=other_book, cost="5", usage_date=day("2025-03-05"))
    body = api.get("/v1/matters/audit", MARCH).json()
    assert body["matters"] == []
    assert body["totals"] == {"eventCount": 0, "eventsMissingCost": 0, "cost": "0"}


@pytest.mark.django_db(transaction=True)
def test_a_matter_deleted_between_the_audits_reads_keeps_its_events_in_one_row(api, book, record, monkeypatch):
    # The sums were read, then the matters: a matter deleted in between (its events Unassigned from then on) was
    # in neither read's row, and the total was 2 events short of the ledger. Both reads now share one snapshot.
    from matters import selectors as matter_selectors
    from tests.parallel import in_another_connection

    gone = MatterFactory(book=book, matter_number="G-1", name="Gone")
    record(tag="G-1", cost="1", usage_date=day("2025-03-10"))
    record(tag="G-1", cost="2", usage_date=day("2025-03-11"))
    record(cost="0.5", usage_date=day("2025-03-12"))
    sums, fired = matter_selectors.event_sums, []

    def sums_then_a_delete(*args, **kwargs):
        answer = sums(*args, **kwargs)
        if not fired:
            fired.append(True)
            in_another_connection(lambda: api.delete(f"/v1/matters/{gone.id}"))
        return answer
    monkeypatch.setattr(matter_selectors, "event_sums", sums_then_a_delete)

    body = api.get("/v1/matters/audit", MARCH).json()
    assert fired
    assert [(row["matterNumber"], row["eventCount"]) for row in body["matters"]] == [("G-1", 2)]
    assert body["unassigned"]["eventCount"] == 1 and body["totals"]["eventCount"] == 3
    after = api.get("/v1/matters/audit", MARCH).json()  # the next answer: the matter gone, its events Unassigned
    assert (after["matters"], after["unassigned"]["eventCount"], after["totals"]["eventCount"]) == ([], 3, 3)
