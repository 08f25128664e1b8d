"""Device heartbeats, coverage (trailing 7 days) and the pre-tool-call check with cool-off (contract: Devices)."""
from datetime import timedelta

import pytest

from controls.models import Device, SpendCap
from tests.controls.conftest import NOW

pytestmark = pytest.mark.django_db

HEARTBEAT, COVERAGE, CHECK, CAPS = ("/v1/control/devices/heartbeat", "/v1/control/coverage", "/v1/control/check",
                                    "/v1/control/caps")
ALICE, BOB, CAROL = "alice@acme.example.com", "bob@acme.example.com", "carol@acme.example.com"


def heartbeat(client, developer, armed=True, device="laptop"):
    resp = client.post(HEARTBEAT, {"customerExternalId": developer, "deviceId": device, "armed": armed})
    assert resp.status_code == 200, resp.json()
    return resp.json()


def check(client, developer):
    resp = client.get(CHECK, {"customerExternalId": developer})
    assert resp.status_code == 200, resp.json()
    return resp.json()


def create_cap(api, **body):
    base = {"scope": "org", "providerScope": "all", "amountUsd": 10, "period": "month", "mode": "enforce"}
    resp = api.post(CAPS, {**base, **body})
    assert resp.status_code == 201, resp.json()
    return resp.json()


@pytest.fixture
def ingest(client_for):
    return client_for(scope="ingest", role="member", email="laptop-key@acme.example.com")


# --------------------------------------------------------------------------- heartbeat

def test_heartbeat_with_an_ingest_only_key_records_the_machine(ingest, frozen_now, book):
    body = heartbeat(ingest, ALICE, armed=True)
    assert body == {"customerExternalId": ALICE, "deviceId": "laptop", "armed": True,
                    "lastSeenAt": "2025-03-12T15:00:00Z"}
    assert Device.objects.get(book=book).armed is True


def test_a_legal_key_reads_spend_controls_and_cannot_check_in_a_machine(client_for, frozen_now, book):
    legal = client_for(scope="legal", role="legal", email="counsel@acme.example.com")
    resp = legal.post(HEARTBEAT, {"customerExternalId": ALICE, "deviceId": "laptop", "armed": False})
    assert resp.status_code == 403 and "legal key" in resp.json()["message"]
    assert not Device.objects.filter(book=book).exists()
    assert legal.get(COVERAGE).status_code == 200
    assert check(legal, ALICE)["allowed"] is True


def test_a_second_heartbeat_updates_the_same_machine(ingest, frozen_now):
    heartbeat(ingest, ALICE, armed=True)
    frozen_now.moment = NOW + timedelta(hours=1)
    body = heartbeat(ingest, ALICE, armed=False)
    assert body["armed"] is False and body["lastSeenAt"] == "2025-03-12T16:00:00Z"
    assert Device.objects.count() == 1


@pytest.mark.parametrize("body, field", [
    ({"customerExternalId": ALICE, "deviceId": "x"}, "armed"),
    ({"customerExternalId": "not-an-email", "deviceId": "x", "armed": True}, "customerExternalId"),
    ({"customerExternalId": ALICE, "armed": True}, "deviceId"),
    ({"customerExternalId": ALICE, "deviceId": "x", "armed": "maybe"}, "armed"),
])
def test_heartbeat_validation_is_400_naming_the_field(ingest, body, field):
    resp = ingest.post(HEARTBEAT, body)
    assert resp.status_code == 400 and field in str(resp.json()["message"])


# --------------------------------------------------------------------------- coverage

def test_coverage_without_recent_activity_is_zero_with_null_as_of(api, frozen_now):
    assert api.get(COVERAGE).json() == {"armed": 0, "total": 0, "asOf": None}


def test_coverage_counts_developers_seen_and_those_armed(api, ingest, frozen_now):
    heartbeat(ingest, ALICE, armed=True)
    heartbeat(ingest, BOB, armed=False)
    frozen_now.moment = NOW + timedelta(minutes=5)
    heartbeat(ingest, CAROL, armed=True)
    assert api.get(COVERAGE).json() == {"armed": 2, "total": 3, "asOf": "2025-03-12T15:05:00Z"}


def test_a_developer_with_one_unarmed_machine_is_not_armed(api, ingest, frozen_now):
    heartbeat(ingest, ALICE, armed=True, device="laptop")
    heartbeat(ingest, ALICE, armed=False, device="desktop")
    assert api.get(COVERAGE).json()["armed"] == 0
    assert api.get(COVERAGE).json()["total"] == 1


def test_machines_not_seen_in_the_trailing_seven_days_are_left_out(api, ingest, frozen_now):
    frozen_now.moment = NOW - timedelta(days=7, seconds=1)
    heartbeat(ingest, ALICE)
    frozen_now.moment = NOW - timedelta(days=7)
    heartbeat(ingest, BOB)
    frozen_now.moment = NOW
    assert api.get(COVERAGE).json() == {"armed": 1, "total": 1, "asOf": "2025-03-05T15:00:00Z"}


def test_developers_with_coding_usage_but_no_heartbeat_count_as_seen_but_not_armed(api, ingest, frozen_now,
                                                                                    coding_usage):
    heartbeat(ingest, ALICE)
    coding_usage(BOB, "1", at=NOW - timedelta(days=1))
    coding_usage(ALICE, "1", at=NOW - timedelta(days=2))
    coding_usage(CAROL, "1", at=NOW - timedelta(days=8))
    assert api.get(COVERAGE).json() == {"armed": 1, "total": 2, "asOf": "2025-03-12T15:00:00Z"}


def test_coverage_reads_only_its_own_organization(api, other_api, frozen_now):
    heartbeat(other_api, ALICE)
    assert api.get(COVERAGE).json()["total"] == 0


# --------------------------------------------------------------------------- check

def test_check_without_enforce_caps_allows(ingest, frozen_now):
    assert check(ingest, ALICE) == {"allowed": True, "reason": None, "capId": None, "coolOffUntil": None}


def test_check_requires_the_developer(ingest):
    resp = ingest.get(CHECK)
    assert resp.status_code == 400 and "customerExternalId" in str(resp.json()["message"])


def test_a_track_cap_never_refuses(api, ingest, frozen_now, coding_usage):
    create_cap(api, mode="track", amountUsd=1)
    coding_usage(ALICE, "5")
    assert check(ingest, ALICE)["allowed"] is True


def test_an_enforce_org_cap_refuses_every_developer_once_reached(api, ingest, frozen_now, coding_usage):
    cap = create_cap(api, amountUsd=10)
    coding_usage(ALICE, "9.99")
    assert check(ingest, BOB)["allowed"] is True
    coding_usage(BOB, "0.01")  # exactly at the cap: reached
    body = check(ingest, BOB)
    assert body["allowed"] is False and body["capId"] == cap["id"] and body["coolOffUntil"] is None
    assert "$10.00" in body["reason"] and "2025-04-01T00:00:00Z" in body["reason"]


def test_an_enforce_dev_cap_refuses_only_its_developer(api, ingest, frozen_now, coding_usage):
    create_cap(api, amountUsd=100, mode="track")
    dev_cap = create_cap(api, scope="dev", scopeValue=ALICE, amountUsd=2, period="day")
    coding_usage(ALICE, "2.5")
    coding_usage(BOB, "2.5")
    body = check(ingest, ALICE)
    assert body["allowed"] is False and body["capId"] == dev_cap["id"]
    assert ALICE in body["reason"]
    assert check(ingest, BOB)["allowed"] is True


def test_unpriced_usage_does_not_reach_a_cap(api, ingest, frozen_now, coding_usage):
    create_cap(api, amountUsd=1)
    coding_usage(ALICE, None)
    assert check(ingest, ALICE)["allowed"] is True


def test_a_new_window_allows_again_without_cool_off(api, ingest, frozen_now, coding_usage):
    create_cap(api, amountUsd=1, period="day")
    coding_usage(ALICE, "1")
    assert check(ingest, ALICE)["allowed"] is False
    frozen_now.moment = NOW.replace(hour=0) + timedelta(days=1)
    assert check(ingest, ALICE)["allowed"] is True


def test_cool_off_keeps_refusing_until_its_end_even_after_the_window_resets(api, ingest, frozen_now, coding_usage):
    cap = create_cap(api, amountUsd=1, period="day", coolOffHours=12)
    coding_usage(ALICE, "1")
    first = check(ingest, ALICE)
    assert first["allowed"] is False and first["coolOffUntil"] == "2025-03-13T03:00:00Z"
    frozen_now.moment = NOW + timedelta(hours=11, minutes=59)  # the next UTC day: spend is back to zero
    cooling = check(ingest, ALICE)
    assert cooling == {"allowed": False, "reason": cooling["reason"], "capId": cap["id"],
                       "coolOffUntil": "2025-03-13T03:00:00Z"}
    assert "Cooling off" in cooling["reason"]
    frozen_now.moment = NOW + timedelta(hours=12)
    assert check(ingest, ALICE)["allowed"] is True


def test_a_trip_is_recorded_once_and_a_later_check_does_not_extend_the_cool_off(api, ingest, frozen_now,
                                                                                coding_usage):
    cap = create_cap(api, amountUsd=1, coolOffHours=2)
    coding_usage(ALICE, "1")
    check(ingest, ALICE)
    frozen_now.moment = NOW + timedelta(hours=1)
    assert check(ingest, ALICE)["coolOffUntil"] == "2025-03-12T17:00:00Z"
    assert SpendCap.objects.get(pk=cap["id"]).tripped_at == NOW


def test_a_cap_still_reached_after_its_cool_off_trips_again(api, ingest, frozen_now, coding_usage):
    create_cap(api, amountUsd=1, coolOffHours=2)
    coding_usage(ALICE, "1")
    check(ingest, ALICE)
    frozen_now.moment = NOW + timedelta(hours=2)
    body = check(ingest, ALICE)
    assert body["allowed"] is False and body["coolOffUntil"] == "2025-03-12T19:00:00Z"


def test_editing_the_cap_ends_its_cool_off(api, ingest, frozen_now, coding_usage):
    cap = create_cap(api, amountUsd=1, coolOffHours=24)
    coding_usage(ALICE, "1")
    assert check(ingest, ALICE)["allowed"] is False
    assert api.patch(f"{CAPS}/{cap['id']}", {"amountUsd": 5}).status_code == 200
    assert check(ingest, ALICE)["allowed"] is True


def test_switching_a_cap_to_track_stops_refusals(api, ingest, frozen_now, coding_usage):
    cap = create_cap(api, amountUsd=1, coolOffHours=24)
    coding_usage(ALICE, "1")
    check(ingest, ALICE)
    api.patch(f"{CAPS}/{cap['id']}", {"mode": "track"})
    assert check(ingest, ALICE)["allowed"] is True


def test_check_reads_only_its_own_organizations_caps(other_api, ingest, frozen_now, coding_usage):
    create_cap(other_api, amountUsd=1)
    coding_usage(ALICE, "5")
    assert check(ingest, ALICE)["allowed"] is True
