"""GET /v1/analytics/usage: summary, time series by day / ISO week / month, breakdowns, metadata, filters."""
import pytest

from tests.analytics.support import D, get, ledger, models, money  # noqa: F401 (fixtures)

USAGE = "/v1/analytics/usage"
APRIL = {"startDate": "2025-04-01", "endDate": "2025-04-30"}


def points(series) -> dict:
    return {point["date"]: (point["eventCount"], money(point["totalQuantity"]), money(point["totalCost"]))
            for point in series}


def test_summary_totals_the_window_and_averages_cost_per_event(api, ledger):
    body = get(api, USAGE, **APRIL)
    assert body["summary"] == {"totalEvents": 4, "totalQuantity": 7, "totalCost": 0.046,
                               "avgCostPerEvent": 0.0115}
    assert body["dateRange"] == {"start": "2025-04-01T00:00:00Z", "end": "2025-05-01T00:00:00Z",
                                 "groupBy": "daily"}


def test_daily_series_has_one_point_per_day_with_events(api, ledger):
    body = get(api, USAGE, **APRIL)
    assert points(body["timeSeriesData"]) == {
        "2025-04-06": (1, D(2), D("0.002")),
        "2025-04-07": (2, D(4), D("0.022")),
        "2025-04-30": (1, D(1), D("0.022")),
    }
    assert [p["date"] for p in body["timeSeriesData"]] == ["2025-04-06", "2025-04-07", "2025-04-30"]


def test_weekly_buckets_start_on_monday(api, ledger):
    """Sunday April 6 belongs to the week of Monday March 31; Monday April 7 starts the next week."""
    body = get(api, USAGE, groupBy="weekly", **APRIL)
    assert body["dateRange"]["groupBy"] == "weekly"
    assert points(body["timeSeriesData"]) == {
        "2025-03-31": (1, D(2), D("0.002")),
        "2025-04-07": (2, D(4), D("0.022")),
        "2025-04-28": (1, D(1), D("0.022")),
    }


def test_monthly_buckets_are_calendar_months_and_count_unpriced_events(api, ledger):
    body = get(api, USAGE, groupBy="monthly", startDate="2025-03-01", endDate="2025-05-31")
    assert points(body["timeSeriesData"]) == {
        "2025-03-01": (1, D(1), D("0.002")),
        "2025-04-01": (4, D(7), D("0.046")),
        "2025-05-01": (1, D(5), D(0)),  # cost unresolved: counted, adds 0
    }
    assert body["summary"]["totalEvents"] == 6


def test_timestamps_bound_the_window_to_the_instant(api, ledger):
    """Edges inside a day are read from the events: 09:00 on April 7 is before the start, 23:00 on April 30
    before the end."""
    body = get(api, USAGE, startDate="2025-04-07T12:00:00Z", endDate="2025-04-30T23:30:00Z")
    assert body["summary"]["totalEvents"] == 2 and money(body["summary"]["totalCost"]) == D("0.042")
    body = get(api, USAGE, startDate="2025-04-07T12:00:00Z", endDate="2025-04-30T22:59:59Z")
    assert body["summary"]["totalEvents"] == 1
    body = get(api, USAGE, startDate="2025-04-07T08:00:00Z", endDate="2025-04-07T10:00:00Z")
    assert body["summary"] == {"totalEvents": 1, "totalQuantity": 3, "totalCost": 0.002, "avgCostPerEvent": 0.002}


def test_breakdown_by_customer_totals_and_timeline(api, ledger):
    body = get(api, USAGE, breakdownBy="customer", groupBy="weekly", **APRIL)
    breakdown = body["dimensionBreakdown"]
    assert breakdown["dimensionType"] == "customer"
    assert breakdown["summary"] == [  # most cost first
        {"dimensionId": str(ledger.beta.id), "dimensionLabel": "Beta LLC", "totalEvents": 2, "totalQuantity": 2,
         "totalCost": 0.042},
        {"dimensionId": str(ledger.acme.id), "dimensionLabel": "Acme Corp", "totalEvents": 2, "totalQuantity": 5,
         "totalCost": 0.004},
    ]
    timeline = [(p["date"], p["dimensionLabel"], p["eventCount"], money(p["totalCost"])) for p in breakdown["timeline"]]
    assert timeline == [
        ("2025-03-31", "Acme Corp", 1, D("0.002")),
        ("2025-04-07", "Beta LLC", 1, D("0.02")),
        ("2025-04-07", "Acme Corp", 1, D("0.002")),
        ("2025-04-28", "Beta LLC", 1, D("0.022")),
    ]


@pytest.mark.parametrize("dimension", ["signal", "agent"])
def test_breakdown_by_signal_or_agent(api, ledger, dimension):
    body = get(api, USAGE, breakdownBy=dimension, **APRIL)
    summary = {row["dimensionLabel"]: (row["totalEvents"], money(row["totalQuantity"]), money(row["totalCost"]))
               for row in body["dimensionBreakdown"]["summary"]}
    expected = {"signal": {"pages": (2, D(5), D("0.004")), "reports": (1, D(1), D("0.02")),
                           "search": (1, D(1), D("0.022"))},
                "agent": {"Writer": (3, D(6), D("0.024")), "Researcher": (1, D(1), D("0.022"))}}
    assert summary == expected[dimension]


def test_breakdown_is_absent_without_breakdown_by(api, ledger):
    assert "dimensionBreakdown" not in get(api, USAGE, **APRIL)


def test_metadata_maps_ids_to_names(api, ledger):
    metadata = get(api, USAGE, **APRIL)["metadata"]
    assert metadata == {
        "customers": {str(ledger.acme.id): "Acme Corp", str(ledger.beta.id): "Beta LLC"},
        "agents": {str(ledger.writer.id): "Writer", str(ledger.research.id): "Researcher"},
        "signals": {str(ledger.pages.id): "pages", str(ledger.reports.id): "reports", str(ledger.search.id): "search"},
    }


def test_filters_narrow_the_data_and_echo_only_the_keys_passed(api, ledger):
    body = get(api, USAGE, customerId=str(ledger.acme.id), **APRIL)
    assert body["filters"] == {"customerId": str(ledger.acme.id)}
    assert body["summary"]["totalEvents"] == 2 and money(body["summary"]["totalQuantity"]) == 5
    body = get(api, USAGE, agentId=str(ledger.writer.id), signalId=str(ledger.reports.id), **APRIL)
    assert body["filters"] == {"agentId": str(ledger.writer.id), "signalId": str(ledger.reports.id)}
    assert body["summary"] == {"totalEvents": 1, "totalQuantity": 1, "totalCost": 0.02, "avgCostPerEvent": 0.02}
    assert get(api, USAGE, **APRIL)["filters"] == {}


def test_every_value_is_a_json_number(api, ledger):
    body = get(api, USAGE, breakdownBy="signal", **APRIL)
    numbers = [*body["summary"].values()]
    breakdown = body["dimensionBreakdown"]
    for point in [*body["timeSeriesData"], *breakdown["summary"], *breakdown["timeline"]]:
        numbers += [value for key, value in point.items() if key not in ("date", "dimensionId", "dimensionLabel")]
    assert numbers and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in numbers)


def test_default_window_is_the_last_30_days_utc(api, ledger, frozen_now):
    """On May 20 the default window is April 21 to May 20, both included."""
    from datetime import datetime, timezone
    frozen_now(datetime(2025, 5, 20, 12, tzinfo=timezone.utc))
    body = get(api, USAGE)
    assert body["dateRange"] == {"start": "2025-04-21T00:00:00Z", "end": "2025-05-21T00:00:00Z", "groupBy": "daily"}
    assert body["summary"]["totalEvents"] == 2  # April 30 and May 1


def test_orphan_events_of_a_deleted_signal_break_down_under_null(api, ledger):
    assert api.delete(f"/v1/signals/{ledger.search.id}").status_code == 204
    body = get(api, USAGE, breakdownBy="signal", **APRIL)
    orphan = next(row for row in body["dimensionBreakdown"]["summary"] if row["dimensionId"] is None)
    assert (orphan["dimensionLabel"], orphan["totalEvents"], money(orphan["totalCost"])) == (None, 1, D("0.022"))
    assert str(ledger.search.id) not in body["metadata"]["signals"]


@pytest.mark.parametrize("params, field, accepted", [
    ({"groupBy": "hourly"}, "groupBy", ("daily", "weekly", "monthly")),
    ({"breakdownBy": "model"}, "breakdownBy", ("customer", "signal", "agent")),
])
def test_invalid_group_by_or_breakdown_by_is_400_listing_the_accepted_values(api, params, field, accepted):
    message = " ".join(get(api, USAGE, status=400, **params)["message"])
    assert message.startswith(f"{field}:") and all(value in message for value in accepted), message


@pytest.mark.parametrize("params, field", [
    ({"customerId": "not-a-uuid"}, "customerId"), ({"agentId": "12"}, "agentId"), ({"signalId": "x"}, "signalId"),
    ({"startDate": "yesterday"}, "startDate"), ({"endDate": "2025-13-01"}, "endDate"),
])
def test_bad_uuid_or_date_is_400_naming_the_parameter(api, params, field):
    assert get(api, USAGE, status=400, **params)["message"][0].startswith(f"{field}:")


def test_end_before_start_is_422(api):
    body = get(api, USAGE, status=422, startDate="2025-04-10", endDate="2025-04-01")
    assert body["message"] == ["endDate: Must be after startDate."]
