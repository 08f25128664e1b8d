"""Top-ups (spec §4 "Credit balances"): the grant, replays, conflicts, validation, roles, and the draw order across
billing periods (the period's own grant first, so a top-up's remainder survives), driven by the scheduled jobs."""
from datetime import datetime, timezone

import pytest
from django.core.cache import cache

from billing.models import CreditGrant
from tests.billing.pools import balance, pool_subscription, run_jobs, topup, use
from tests.billing.support import create_strategies, create_subscription, error, flat_usage, ok

pytestmark = pytest.mark.django_db

GRANT_FIELDS = {"grantId", "subscriptionId", "unitsAdded", "idempotencyKey", "note", "createdBy", "createdAt",
                "created", "remainingUnits"}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def read_fresh(api, subscription) -> dict:
    cache.clear()  # a read after time moved: skip the 30-second cache
    return balance(api, subscription)


def test_a_top_up_answers_201_with_the_grant(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 40)
    body = ok(topup(api, subscription, 25, key="goodwill-1", note="sorry about the outage"), 201)
    assert set(body) == GRANT_FIELDS
    grant = CreditGrant.objects.get(kind="topup")
    assert body == {"grantId": str(grant.id), "subscriptionId": subscription["id"], "unitsAdded": 25,
                    "idempotencyKey": "goodwill-1", "note": "sorry about the outage",
                    "createdBy": f"api-key:{api.key.id}", "createdAt": body["createdAt"], "created": True,
                    "remainingUnits": 85}
    assert body["createdAt"].endswith("Z")


def test_a_replay_answers_200_with_the_same_grant_and_adds_nothing(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    first = ok(topup(api, subscription, 10, key="k"), 201)
    again = ok(topup(api, subscription, "10.0", key="k", note="another note"), 200)
    assert (again["created"], again["grantId"], again["note"], again["remainingUnits"]) == (
        False, first["grantId"], "", 110)
    assert CreditGrant.objects.filter(kind="topup").count() == 1
    assert balance(api, subscription)["remainingUnits"] == 110


def test_a_key_reused_with_other_units_or_on_another_subscription_is_409(api, book, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    ok(topup(api, subscription, 10, key="k"), 201)
    assert "idempotencyKey" in error(topup(api, subscription, 11, key="k"), 409)
    ended = create_subscription(api, chain, name="Old", startDate="2024-01-01T00:00:00Z", endDate="2024-06-01")
    error(topup(api, ended, 10, key="k"), 409)
    assert CreditGrant.objects.filter(kind="topup").count() == 1


def test_keys_are_per_book(api, client_for, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    ok(topup(api, subscription, 10, key="k"), 201)
    live = client_for(environment="live")
    error(topup(live, subscription, 10, key="k"), 404)  # the live book does not hold the test subscription


@pytest.mark.parametrize("body, field", [
    ({"units": 0, "idempotencyKey": "k"}, "units"),
    ({"units": -5, "idempotencyKey": "k"}, "units"),
    ({"idempotencyKey": "k"}, "units"),
    ({"units": "lots", "idempotencyKey": "k"}, "units"),
    ({"units": True, "idempotencyKey": "k"}, "units"),
    ({"units": 10, "idempotencyKey": "   "}, "idempotencyKey"),
    ({"units": 10}, "idempotencyKey"),
    ({"units": 10, "idempotencyKey": "k" * 256}, "idempotencyKey"),
    ({"units": 10, "idempotencyKey": "k", "note": "n" * 1001}, "note"),
])
def test_invalid_top_ups_are_400_naming_the_field(api, chain, frozen_now, body, field):
    subscription = pool_subscription(api, chain)
    resp = api.post(f"/v1/subscriptions/{subscription['id']}/credit-topup", body)
    assert error(resp, 400).startswith(f"{field}:")
    assert not CreditGrant.objects.filter(kind="topup").exists()


def test_the_longest_key_and_note_are_accepted(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    body = ok(topup(api, subscription, "0.5", key="k" * 255, note="n" * 1000), 201)
    assert (body["unitsAdded"], body["remainingUnits"]) == (0.5, 100.5)


def test_a_top_up_on_a_plan_without_a_pool_is_400(api, chain, frozen_now):
    create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    assert "credit-pool" in error(topup(api, subscription, 10), 400)


def test_a_top_up_of_an_unknown_or_foreign_subscription_is_404(api, other_api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    error(topup(api, {"id": "00000000-0000-4000-8000-000000000000"}, 10), 404)
    error(topup(other_api, subscription, 10), 404)


def test_top_ups_need_owner_admin_or_finance(client_for, api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    message = error(topup(client_for(role="member"), subscription, 10), 403)
    assert all(role in message for role in ("owner", "admin", "finance"))
    error(topup(client_for(role="legal"), subscription, 10, key="legal"), 403)
    ok(topup(client_for(role="finance"), subscription, 10, key="finance"), 201)
    ok(topup(client_for(role="admin"), subscription, 10, key="admin"), 201)
    error(topup(client_for(key_type="publishable"), subscription, 10, key="pk"), 403)
    error(topup(client_for(scope="ingest"), subscription, 10, key="ingest"), 403)


def test_an_upcoming_subscription_keeps_its_top_up_for_its_first_period(api, chain, frozen_now):
    subscription = pool_subscription(api, chain, start="2025-07-01T00:00:00Z")
    assert ok(topup(api, subscription, 30), 201)["remainingUnits"] == 130
    use(chain, 110, at=at("2025-07-02"))
    run_jobs("2025-07-02T00:00:00Z")
    frozen_now(at("2025-07-02"))
    row = read_fresh(api, subscription)
    assert (row["noActivePeriod"], row["consumedUnits"], row["remainingUnits"]) == (False, 110, 20)


# --------------------------------------------------------------------------- across periods

def test_unused_pool_units_do_not_roll_over(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 40)
    run_jobs("2025-07-01T00:00:00Z")
    frozen_now(at("2025-07-01T00:00:00"))
    row = read_fresh(api, subscription)
    assert (row["periodStart"], row["consumedUnits"], row["remainingUnits"]) == ("2025-07-01T00:00:00Z", 0, 100)


def test_a_top_up_remainder_is_carried_into_the_next_period(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 130)
    assert ok(topup(api, subscription, 50), 201)["remainingUnits"] == 20  # June drew 30 of the 50
    run_jobs("2025-07-01T00:00:00Z")
    june = CreditGrant.objects.get(kind="period", period_start=at("2025-06-01"))
    assert (june.consumed_units, june.topup_units_drawn, june.units) == (130, 30, 100)
    frozen_now(at("2025-07-05"))
    row = read_fresh(api, subscription)
    assert (row["consumedUnits"], row["remainingUnits"], row["remainingPercent"]) == (0, 120, 120)
    use(chain, 110, at=at("2025-07-04"))  # July's own pool is drawn first, then 10 of the remaining 20
    row = read_fresh(api, subscription)
    assert (row["consumedUnits"], row["remainingUnits"], row["overageInProgressUnits"]) == (110, 10, 10)
    use(chain, 15, at=at("2025-07-04"))
    assert read_fresh(api, subscription)["remainingUnits"] == -5
    run_jobs("2025-08-01T00:00:00Z")
    frozen_now(at("2025-08-01"))
    assert read_fresh(api, subscription)["remainingUnits"] == 100  # the top-up is used up; August refills


def test_a_period_within_its_pool_leaves_the_top_up_whole(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    ok(topup(api, subscription, 50), 201)
    use(chain, 99)
    run_jobs("2025-07-01T00:00:00Z")
    frozen_now(at("2025-07-01"))
    assert read_fresh(api, subscription)["remainingUnits"] == 150


def test_a_later_top_up_does_not_pay_an_earlier_periods_overage(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 130)
    run_jobs("2025-07-01T00:00:00Z")
    frozen_now(at("2025-07-02"))
    assert ok(topup(api, subscription, 50), 201)["remainingUnits"] == 150


def test_periods_the_rollover_skipped_draw_on_the_top_up_in_order(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    ok(topup(api, subscription, 100), 201)
    use(chain, 130, at=at("2025-06-20"))  # June takes 30
    use(chain, 150, at=at("2025-07-20"))  # July takes 50
    use(chain, 170, at=at("2025-08-20"))  # August would take 70 but only 20 are left
    frozen_now(at("2025-09-02"))
    run_jobs("2025-09-02T00:00:00Z")  # the job did not run for three months
    row = read_fresh(api, subscription)
    assert (row["periodStart"], row["remainingUnits"]) == ("2025-09-01T00:00:00Z", 100)
    settled = CreditGrant.objects.filter(kind="period").order_by("period_start")
    assert [(g.period_start.month, g.consumed_units, g.topup_units_drawn) for g in settled] == [
        (6, 130, 30), (7, 150, 50), (8, 170, 20), (9, None, None)]


def test_reads_before_the_settling_job_compute_the_same_carry(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    ok(topup(api, subscription, 100), 201)
    use(chain, 130, at=at("2025-06-20"))
    use(chain, 150, at=at("2025-07-20"))
    frozen_now(at("2025-08-02"))
    # Only the rollover runs (the credit-pool job has not settled June and July yet).
    from billing.services.subscriptions import subscriptions_advance
    subscriptions_advance(now=at("2025-08-02"))
    row = read_fresh(api, subscription)
    assert (row["periodStart"], row["remainingUnits"], row["implicitFullPool"]) == ("2025-08-01T00:00:00Z", 120, True)
    assert not CreditGrant.objects.filter(kind="period", settled_at__isnull=False).exists()
    run_jobs("2025-08-02T00:00:00Z")
    assert read_fresh(api, subscription)["remainingUnits"] == 120


def test_a_top_up_in_the_gap_before_the_rollover_counts_from_the_next_period(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 130)
    frozen_now(at("2025-07-01T00:01:00"))  # June has ended; the rollover has not run
    body = ok(topup(api, subscription, 50), 201)
    assert body["remainingUnits"] == 150  # June's overage was before the top-up
    run_jobs("2025-07-01T00:02:00Z")
    assert read_fresh(api, subscription)["remainingUnits"] == 150
