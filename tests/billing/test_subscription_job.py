"""The scheduled job `subscriptions_advance`, driven like the acceptance suite: `run_scheduled_jobs --now`."""
from io import StringIO

import pytest
from django.core.management import call_command

from billing.models import SubscriptionChange
from tests.billing.support import changelog, create_subscription, ok

pytestmark = pytest.mark.django_db


def run_jobs(now: str) -> str:
    out = StringIO()
    call_command("run_scheduled_jobs", "--now", now, stdout=out)
    return out.getvalue()


def read(api, subscription):
    return ok(api.get(f"/v1/subscriptions/{subscription['id']}"))


def test_upcoming_becomes_active_at_its_start_with_its_first_period(api, chain, frozen_now):
    subscription = create_subscription(api, chain, startDate="2025-07-01T00:00:00Z")
    run_jobs("2025-06-30T23:59:59Z")
    assert read(api, subscription)["status"] == "upcoming"
    assert "subscriptions_advance: 1 activated" in run_jobs("2025-07-01T01:00:00Z")
    body = read(api, subscription)
    assert (body["status"], body["currentPeriodStart"], body["currentPeriodEnd"]) == (
        "active", "2025-07-01T00:00:00Z", "2025-08-01T00:00:00Z")
    entry = changelog(api, subscription["id"], kind="status_transition")[0]
    assert (entry["actor"], entry["changes"]["status"]) == ("system", {"before": "upcoming", "after": "active"})
    assert entry["changes"]["currentPeriodStart"] == {"before": None, "after": "2025-07-01T00:00:00Z"}


def test_active_ends_once_its_end_date_has_passed(api, chain, frozen_now):
    subscription = create_subscription(api, chain, startDate="2025-01-01T00:00:00Z", endDate="2025-07-15")
    run_jobs("2025-07-14T23:00:00Z")
    assert read(api, subscription)["status"] == "active"
    run_jobs("2025-07-15T00:00:00Z")  # the end is exclusive: at that instant it has ended
    body = read(api, subscription)
    assert (body["status"], body["currentPeriodStart"], body["currentPeriodEnd"]) == (
        "ended", "2025-07-01T00:00:00Z", "2025-07-15T00:00:00Z")
    entry = changelog(api, subscription["id"], kind="status_transition")[0]
    assert (entry["actor"], entry["changes"]) == ("system", {"status": {"before": "active", "after": "ended"}})


def test_a_forever_subscription_never_ends(api, chain, frozen_now):
    subscription = create_subscription(api, chain, endDate="2025-07-01", isForever=True)
    run_jobs("2027-01-10T00:00:00Z")
    body = read(api, subscription)
    assert (body["status"], body["currentPeriodStart"]) == ("active", "2027-01-01T00:00:00Z")


def test_a_subscription_created_long_ago_goes_from_upcoming_to_ended_in_one_run(api, chain, frozen_now):
    subscription = create_subscription(api, chain, startDate="2025-07-01", endDate="2025-09-01")
    assert "1 activated, 0 rolled, 1 ended" in run_jobs("2026-01-01T00:00:00Z")  # activation stores the last period
    body = read(api, subscription)
    assert (body["status"], body["currentPeriodStart"], body["currentPeriodEnd"]) == (
        "ended", "2025-08-01T00:00:00Z", "2025-09-01T00:00:00Z")


def test_the_period_rolls_forward_and_the_job_is_idempotent(api, chain, frozen_now):
    subscription = create_subscription(api, chain, startDate="2025-01-31T00:00:00Z")  # billing day 31
    assert (read(api, subscription)["currentPeriodStart"], read(api, subscription)["currentPeriodEnd"]) == (
        "2025-05-31T00:00:00Z", "2025-06-30T00:00:00Z")
    assert "1 rolled" in run_jobs("2025-06-30T00:00:00Z")
    body = read(api, subscription)
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-06-30T00:00:00Z", "2025-07-31T00:00:00Z")
    entries = SubscriptionChange.objects.count()
    assert "0 activated, 0 rolled, 0 ended" in run_jobs("2025-06-30T00:00:00Z")
    assert read(api, subscription) == body and SubscriptionChange.objects.count() == entries


def test_after_an_invoice_date_change_the_next_period_runs_to_the_new_billing_day(api, chain, frozen_now):
    subscription = create_subscription(api, chain)  # [2025-06-01, 2025-07-01)
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}/invoice-dates", {"billingDay": 15}))
    run_jobs("2025-07-02T00:00:00Z")
    body = read(api, subscription)
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-07-01T00:00:00Z", "2025-07-15T00:00:00Z")
    run_jobs("2025-07-20T00:00:00Z")
    body = read(api, subscription)
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-07-15T00:00:00Z", "2025-08-15T00:00:00Z")


def test_periods_turn_at_local_midnight_in_the_subscription_time_zone(api, chain, frozen_now):
    subscription = create_subscription(api, chain, startDate="2025-03-01", timezone="Europe/Berlin")
    assert read(api, subscription)["currentPeriodStart"] == "2025-05-31T22:00:00Z"  # June 1, 00:00 CEST
    run_jobs("2025-10-31T23:30:00Z")  # Nov 1 00:30 CET: the November period has begun
    body = read(api, subscription)
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-10-31T23:00:00Z", "2025-11-30T23:00:00Z")


def test_a_bad_now_is_a_command_error():
    from django.core.management.base import CommandError
    with pytest.raises(CommandError):
        run_jobs("tomorrow-ish")
