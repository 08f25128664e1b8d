"""GET /v1/control/spend: UTC windows, internal coding-agent usage only, priced and unpriced counts (spec §4)."""
from datetime import datetime, timedelta, timezone

import pytest

from tests.controls.conftest import NOW
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db

SPEND = "/v1/control/spend"
ALICE, BOB = "alice@acme.example.com", "bob@acme.example.com"


def utc(*parts):
    return datetime(*parts, tzinfo=timezone.utc)


@pytest.mark.parametrize("period, start, end", [
    ("day", "2025-03-12T00:00:00Z", "2025-03-13T00:00:00Z"),
    ("week", "2025-03-10T00:00:00Z", "2025-03-17T00:00:00Z"),  # weeks start Monday
    ("month", "2025-03-01T00:00:00Z", "2025-04-01T00:00:00Z"),
])
def test_windows_are_the_current_utc_day_week_and_month(api, frozen_now, period, start, end):
    body = api.get(SPEND, {"period": period}).json()
    assert body["period"] == period
    assert body["window"] == {"start": start, "end": end}
    assert body["asOf"] == "2025-03-12T15:00:00Z"


def test_without_usage_spent_is_null_with_zero_counts_and_no_dev_block(api, frozen_now):
    body = api.get(SPEND, {"period": "month"}).json()
    assert body["org"] == {"spentUsd": None, "eventCount": 0, "unpricedEventCount": 0}
    assert "dev" not in body


def test_period_defaults_to_month_and_an_unknown_period_is_400(api, frozen_now):
    assert api.get(SPEND).json()["period"] == "month"
    resp = api.get(SPEND, {"period": "year"})
    assert resp.status_code == 400 and "period" in str(resp.json()["message"])


def test_only_internal_coding_agent_usage_counts(api, frozen_now, book, coding_usage, customer_usage):
    coding_usage(ALICE, "1.25")
    coding_usage(BOB, "0.50")
    customer_usage(CustomerFactory(book=book), "99")
    body = api.get(SPEND, {"period": "month"}).json()
    assert body["org"] == {"spentUsd": 1.75, "eventCount": 2, "unpricedEventCount": 0}


def test_dev_block_counts_one_developer(api, frozen_now, coding_usage):
    coding_usage(ALICE, "1.25")
    coding_usage(ALICE, None)
    coding_usage(BOB, "0.50")
    body = api.get(SPEND, {"period": "month", "customerExternalId": ALICE}).json()
    assert body["dev"] == {"customerExternalId": ALICE, "spentUsd": 1.25, "eventCount": 2, "unpricedEventCount": 1}
    assert body["org"] == {"spentUsd": 1.75, "eventCount": 3, "unpricedEventCount": 1}


def test_dev_block_of_a_developer_without_usage_has_null_spend(api, frozen_now, coding_usage):
    coding_usage(ALICE, "1")
    body = api.get(SPEND, {"period": "day", "customerExternalId": BOB}).json()
    assert body["dev"] == {"customerExternalId": BOB, "spentUsd": None, "eventCount": 0, "unpricedEventCount": 0}


def test_unpriced_usage_alone_leaves_spent_null_but_is_counted(api, frozen_now, coding_usage):
    coding_usage(ALICE, None)
    assert api.get(SPEND, {"period": "month"}).json()["org"] == {
        "spentUsd": None, "eventCount": 1, "unpricedEventCount": 1}


def test_windows_are_half_open(api, frozen_now, coding_usage):
    coding_usage(ALICE, "1", at=utc(2025, 3, 1))  # first instant of the month: in
    coding_usage(ALICE, "2", at=utc(2025, 2, 28, 23, 59, 59))  # last month: out
    coding_usage(ALICE, "4", at=utc(2025, 4, 1))  # next month's first instant: out
    coding_usage(ALICE, "8", at=utc(2025, 3, 10))  # Monday 00:00: in this week
    assert api.get(SPEND, {"period": "month"}).json()["org"]["spentUsd"] == 9
    assert api.get(SPEND, {"period": "week"}).json()["org"]["spentUsd"] == 8
    assert api.get(SPEND, {"period": "day"}).json()["org"]["spentUsd"] is None


def test_exact_sub_cent_spend_is_returned_as_a_json_number(api, frozen_now, coding_usage):
    coding_usage(ALICE, "0.000123")
    coding_usage(ALICE, "0.000002")
    assert api.get(SPEND, {"period": "day"}).json()["org"]["spentUsd"] == 0.000125


def test_usage_of_another_organization_does_not_count(api, frozen_now, coding_usage, other_book):
    coding_usage(ALICE, "3", in_book=other_book)
    assert api.get(SPEND, {"period": "month"}).json()["org"]["eventCount"] == 0


def test_ingest_only_and_legal_keys_read_spend(client_for, frozen_now, coding_usage):
    coding_usage(ALICE, "2")
    for scope in ("ingest", "legal"):
        assert client_for(scope=scope).get(SPEND).json()["org"]["spentUsd"] == 2


def test_time_of_the_read_moves_the_window(api, frozen_now, coding_usage):
    coding_usage(ALICE, "2", at=NOW)
    frozen_now.moment = NOW + timedelta(days=1)
    assert api.get(SPEND, {"period": "day"}).json()["org"]["spentUsd"] is None
    assert api.get(SPEND, {"period": "week"}).json()["org"]["spentUsd"] == 2
