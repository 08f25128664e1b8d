"""Credit balance rows (spec §2, §4): every field rule, through GET /v1/subscriptions/{id}/credit-balance and
GET /v1/credit-balances."""
import socket
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.core.cache import cache
from django.db.models import Sum
from django.test import override_settings

from billing.models import CreditGrant
from billing.selectors.credit_pools import balance_cache_refresh
from billing.tasks import usage_followup_task
from core import redis_client
from customers.models import UsageEvent
from tests.billing.conftest import NOW
from tests.billing.pools import (another_chain, balance, balances, pool_strategy, pool_subscription, run_jobs,
                                 topup, use)
from tests.billing.support import create_strategies, create_subscription, error, flat_usage, ok
from tests.factories import AgentFactory, CustomerFactory, SignalFactory, StrategyFactory

pytestmark = pytest.mark.django_db

ROW_FIELDS = {"subscriptionId", "subscriptionName", "customerId", "customerName", "customerExternalId", "agentId",
              "planId", "planName", "poolSizeUnits", "consumedUnits", "remainingUnits", "overageInProgressUnits",
              "remainingPercent", "overageRatePerUnit", "periodStart", "periodEnd", "alertsPaused",
              "noActivePeriod", "implicitFullPool"}


def test_a_row_counts_the_periods_usage_against_the_pool(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 30)
    use(chain, "10.5")
    row = balance(api, subscription)
    assert set(row) == ROW_FIELDS
    assert row == {
        "subscriptionId": subscription["id"], "subscriptionName": "Main", "customerId": str(chain.customer.id),
        "customerName": chain.customer.name, "customerExternalId": chain.customer.external_id,
        "agentId": str(chain.agent.id), "planId": chain.plan["id"], "planName": "Pro",
        "poolSizeUnits": 100, "consumedUnits": 40.5, "remainingUnits": 59.5, "overageInProgressUnits": 0,
        "remainingPercent": 59.5, "overageRatePerUnit": 0.75,
        "periodStart": "2025-06-01T00:00:00Z", "periodEnd": "2025-07-01T00:00:00Z",
        "alertsPaused": False, "noActivePeriod": False, "implicitFullPool": True,
    }


def test_usage_recorded_through_the_api_draws_from_the_pool(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    record = {"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
              "signalName": chain.signal.short_name, "model": "no-such-model", "modelProvider": "nobody",
              "quantity": 12}
    body = ok(api.post("/v1/usage/record", {"records": [record, {**record, "quantity": 3}]}))
    assert body["processed"] == 2
    assert balance(api, subscription)["consumedUnits"] == 15


def test_only_the_pool_signal_of_the_customer_and_agent_inside_the_period_counts(api, book, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 1, at=datetime(2025, 6, 1, tzinfo=timezone.utc))  # the first moment of the period counts
    use(chain, 2, at=datetime(2025, 6, 30, 23, 59, 59, tzinfo=timezone.utc))
    use(chain, 400, at=datetime(2025, 5, 31, 23, 59, 59, tzinfo=timezone.utc))  # before the period
    use(chain, 400, at=datetime(2025, 7, 1, tzinfo=timezone.utc))  # the end is exclusive
    use(chain, 400, signal=SignalFactory(book=book, agent=chain.agent))  # another signal
    use(chain, 400, customer=CustomerFactory(book=book))  # another customer
    assert balance(api, subscription)["consumedUnits"] == 3


def test_an_overdrawn_pool_reads_negative_and_counts_overage(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 130)
    row = balance(api, subscription)
    assert (row["consumedUnits"], row["remainingUnits"], row["remainingPercent"], row["overageInProgressUnits"]) == (
        130, -30, -30, 30)


def test_overage_in_progress_is_the_invoice_math_with_the_minimum_commitment(api, chain, frozen_now):
    subscription = pool_subscription(api, chain, strategy=pool_strategy(chain, minimumCommitment=150))
    use(chain, 10)
    row = balance(api, subscription)
    assert (row["consumedUnits"], row["remainingUnits"], row["overageInProgressUnits"]) == (10, 90, 50)


def test_remaining_percent_is_rounded_to_two_places(api, chain, frozen_now):
    subscription = pool_subscription(api, chain, strategy=pool_strategy(chain, size=3))
    use(chain, 1)
    assert balance(api, subscription)["remainingPercent"] == 66.67


def test_a_top_up_raises_remaining_but_not_consumed_nor_overage(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 130)
    assert topup(api, subscription, 50).status_code == 201
    row = balance(api, subscription)
    assert (row["consumedUnits"], row["remainingUnits"], row["remainingPercent"], row["overageInProgressUnits"]) == (
        130, 20, 20, 30)


def test_the_pool_reads_full_and_implicit_until_its_period_grant_exists(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 10)
    assert balance(api, subscription)["implicitFullPool"] is True
    assert not CreditGrant.objects.exists()
    run_jobs(NOW.isoformat())  # the rollover job opens the period's grant
    cache.clear()
    row = balance(api, subscription)
    assert (row["implicitFullPool"], row["remainingUnits"]) == (False, 90)
    grant = CreditGrant.objects.get()
    assert (grant.kind, grant.units, grant.period_start, grant.settled_at) == (
        "period", 100, datetime(2025, 6, 1, tzinfo=timezone.utc), None)


def test_an_upcoming_subscription_has_no_active_period_and_a_full_pool(api, chain, frozen_now):
    subscription = pool_subscription(api, chain, start="2025-07-01T00:00:00Z")
    use(chain, 10)
    row = balance(api, subscription)
    assert (row["noActivePeriod"], row["periodStart"], row["periodEnd"], row["implicitFullPool"]) == (
        True, None, None, True)
    assert (row["consumedUnits"], row["remainingUnits"], row["remainingPercent"], row["overageInProgressUnits"]) == (
        0, 100, 100, 0)


def test_outside_the_stored_window_there_is_no_active_period(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 10)
    frozen_now(datetime(2025, 7, 1, 0, 5, tzinfo=timezone.utc))  # the rollover job has not run yet
    row = balance(api, subscription)
    assert (row["noActivePeriod"], row["periodStart"], row["periodEnd"], row["consumedUnits"]) == (True, None, None, 0)
    run_jobs("2025-07-01T00:05:00Z")
    cache.clear()
    row = balance(api, subscription)
    assert (row["noActivePeriod"], row["periodStart"], row["remainingUnits"]) == (False, "2025-07-01T00:00:00Z", 100)


def test_tiers_that_cannot_say_give_a_null_overage_rate(api, book, chain, frozen_now):
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    # A one-tier pool the strategy API would refuse, as an older rule or a hand edit may have stored it.
    StrategyFactory(book=book, plan_id=chain.plan["id"], agent=chain.agent, charge_type="usage", rate=None,
                    pricing_model="credit_pool", signal=chain.signal,
                    tiers=[{"lower": "0", "upper": "80", "rate": "9"}])
    use(chain, 100)
    row = balance(api, subscription)
    assert (row["poolSizeUnits"], row["overageRatePerUnit"], row["remainingUnits"], row["overageInProgressUnits"]) == (
        80, None, -20, 20)


def test_a_plan_that_sells_no_pool_has_no_row(api, chain, frozen_now):
    create_strategies(api, chain.plan["id"], [flat_usage(chain)])
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z")
    assert "sells no credit pool" in error(api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance"), 404)
    assert balances(api)["balances"] == []


@pytest.mark.parametrize("change", [{"active": False}, "delete"])
def test_an_inactive_or_deleted_pool_strategy_sells_no_pool(api, chain, frozen_now, change):
    subscription = pool_subscription(api, chain)
    strategy_id = ok(api.get(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies"))["results"][0]["id"]
    path = f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{strategy_id}"
    resp = api.delete(path) if change == "delete" else api.patch(path, change)
    assert resp.status_code in (200, 204), resp.content
    error(api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance"), 404)


def test_a_pool_sold_for_another_agent_of_the_plan_is_not_this_subscriptions(api, book, chain, frozen_now):
    other_agent = AgentFactory(book=book)
    ok(api.post(f"/v1/pricing-plans/{chain.plan['id']}/agents", {"agentId": str(other_agent.id)}), 201)
    other_signal = SignalFactory(book=book, agent=other_agent)
    strategy = {**pool_strategy(chain), "agentId": str(other_agent.id), "signalId": str(other_signal.id)}
    subscription = pool_subscription(api, chain, strategy=strategy)
    error(api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance"), 404)


def test_a_subscription_of_another_organization_reads_as_404(api, other_api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    assert "Subscription not found" in error(
        other_api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance"), 404)
    assert balances(other_api)["balances"] == []
    error(api.get("/v1/subscriptions/not-a-uuid/credit-balance"), 404)


# --------------------------------------------------------------------------- the list

def test_the_list_is_emptiest_first_with_as_of(api, book, chain, frozen_now):
    fuller = pool_subscription(api, chain)
    other = another_chain(api, book)
    emptier = pool_subscription(api, other)
    use(chain, 20)
    use(other, 90)
    body = balances(api)
    assert body["asOf"] == "2025-06-10T12:00:00Z"
    assert [row["subscriptionId"] for row in body["balances"]] == [emptier["id"], fuller["id"]]
    assert [row["remainingPercent"] for row in body["balances"]] == [10, 80]


def test_the_list_filters_by_customer_and_agent(api, book, chain, frozen_now):
    first = pool_subscription(api, chain)
    other = another_chain(api, book)
    second = pool_subscription(api, other)
    assert [r["subscriptionId"] for r in balances(api, customerId=str(chain.customer.id))["balances"]] == [first["id"]]
    assert [r["subscriptionId"] for r in balances(api, agentId=str(other.agent.id))["balances"]] == [second["id"]]
    assert balances(api, customerId=str(chain.customer.id), agentId=str(other.agent.id))["balances"] == []


@pytest.mark.parametrize("below, expected", [
    ("50", {"low", "empty", "overdrawn"}), ("0", {"empty", "overdrawn"}), ("-10", {"overdrawn"}), ("-100", set()),
    ("100", {"low", "empty", "overdrawn", "full"}),
])
def test_below_percent_keeps_pools_with_that_percent_or_less_left(api, book, frozen_now, below, expected):
    names = {}
    for name, used in [("full", 0), ("low", 50), ("empty", 100), ("overdrawn", 120)]:
        pool_chain = another_chain(api, book)
        names[pool_subscription(api, pool_chain)["id"]] = name
        if used:
            use(pool_chain, used)
    rows = balances(api, belowPercent=below)["balances"]
    assert {names[row["subscriptionId"]] for row in rows} == expected


def test_below_percent_zero_leaves_out_a_pool_with_units_left_that_reads_as_zero_percent(api, book, chain,
                                                                                       frozen_now):
    # 40 units left of a million read remainingPercent 0.00, and belowPercent=0 ("at or past zero") listed them.
    subscription = pool_subscription(api, chain, strategy=pool_strategy(chain, size=1_000_000))
    use(chain, 999_960)
    (row,) = balances(api)["balances"]
    assert (row["remainingUnits"], row["remainingPercent"]) == (40, 0)
    assert balances(api, belowPercent="0")["balances"] == []
    assert [row["subscriptionId"] for row in balances(api, belowPercent="0.01")["balances"]] == [subscription["id"]]
    use(chain, 40)
    balance_cache_refresh(book_id=book.pk)  # as the batch's follow-up does
    assert [row["subscriptionId"] for row in balances(api, belowPercent="0")["balances"]] == [subscription["id"]]


@pytest.mark.parametrize("params, field", [({"belowPercent": "100.5"}, "belowPercent"),
                                           ({"belowPercent": "-101"}, "belowPercent"),
                                           ({"belowPercent": "lots"}, "belowPercent"),
                                           ({"customerId": "123"}, "customerId"), ({"agentId": "x"}, "agentId")])
def test_bad_list_filters_are_400_naming_the_parameter(api, params, field):
    assert field in error(api.get("/v1/credit-balances", params), 400)


def test_balance_reads_are_private_and_cached_for_30_seconds(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    use(chain, 10)
    single = api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance")
    listed = api.get("/v1/credit-balances")
    assert single["Cache-Control"] == listed["Cache-Control"] == "private, max-age=30"
    use(chain, 10)  # recorded after the reads: the cached answers stand (for up to 30 seconds)
    assert balance(api, subscription)["consumedUnits"] == 10
    assert balances(api)["balances"][0]["consumedUnits"] == 10
    assert topup(api, subscription, 5).status_code == 201  # the caller's own writes show at once
    assert balance(api, subscription)["consumedUnits"] == 20
    assert balances(api)["balances"][0]["remainingUnits"] == 85


def test_a_pool_changed_by_its_plan_shows_at_once_not_when_the_cached_answer_expires(
        api, chain, frozen_now, django_capture_on_commit_callbacks):
    """A balance read (and cached for 30 seconds), then the plan's pool grows from 100 to 250 units: the next read
    answers the new pool, 250 - 10 = 240 left, not the cached 90 (the write's commit starts a new cache generation,
    run here as the request's commit runs it)."""
    subscription = pool_subscription(api, chain)
    use(chain, 10)
    assert (balance(api, subscription)["poolSizeUnits"], balance(api, subscription)["remainingUnits"]) == (100, 90)
    (strategy,) = ok(api.get(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies"))["results"]
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.patch(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{strategy['id']}",
                     {"tiers": [{"lower": 0, "upper": 250, "rate": 50}, {"lower": 250, "upper": None, "rate": "0.75"}]}))
    assert (balance(api, subscription)["poolSizeUnits"], balance(api, subscription)["remainingUnits"]) == (250, 240)
    listed = balances(api)["balances"]
    assert [(row["poolSizeUnits"], row["remainingUnits"]) for row in listed] == [(250, 240)]


def test_recorded_usage_shows_once_its_follow_up_has_run(api, book, chain, frozen_now):
    # Contract "Derived figures": a balance counts an event within seconds of the answer that stored it, not when
    # a cached answer expires. The follow-up a batch arms (billing/followup.py, a few seconds later) starts a new
    # cache generation; the worker runs it, called here as the worker would.
    subscription = pool_subscription(api, chain)
    use(chain, 10)
    assert balance(api, subscription)["consumedUnits"] == 10
    assert balances(api)["balances"][0]["consumedUnits"] == 10
    use(chain, 7)
    assert balance(api, subscription)["consumedUnits"] == 10  # cached: the follow-up has not run yet
    usage_followup_task(str(book.pk))
    assert balance(api, subscription)["consumedUnits"] == 17
    assert balances(api)["balances"][0]["consumedUnits"] == 17


def test_with_the_cache_unreachable_the_follow_up_still_catches_up_and_balances_equal_the_ledger(
        api, book, chain, frozen_now):
    # Redis stopped under the shared cache: the follow-up's refresh is skipped (never raised), the rollup is
    # caught up and the pools settled as always, and every read computes from the ledger.
    subscription = pool_subscription(api, chain)
    use(chain, 10)
    assert balance(api, subscription)["consumedUnits"] == 10  # kept in the cache
    with socket.socket() as probe:  # a port nothing listens on: Redis is down
        probe.bind(("127.0.0.1", 0))
        dead_port = probe.getsockname()[1]
    down = {"default": {"BACKEND": "core.cache.ResilientRedisCache", "LOCATION": f"redis://127.0.0.1:{dead_port}/0",
                        "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}
    record = {"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
              "signalName": chain.signal.short_name, "model": "no-such-model", "modelProvider": "nobody",
              "quantity": 7, "usageDate": "2025-06-10T09:00:00Z"}
    with override_settings(CACHES=down):
        assert ok(api.post("/v1/usage/record", {"records": [record]}))["successful"] == 0  # stored, cost unknown
        assert usage_followup_task(str(book.pk)) >= 1  # the event added to the rollup
        assert balance(api, subscription)["consumedUnits"] == 17
        ledger = UsageEvent.objects.filter(book=book, usage_date__date="2025-06-10").aggregate(total=Sum("quantity"))
        usage = api.get("/v1/analytics/usage", {"startDate": "2025-06-10", "endDate": "2025-06-10"}).json()
        assert Decimal(str(usage["summary"]["totalQuantity"])) == ledger["total"] == 17
    # Redis back: the next follow-up starts a new generation, and the answer cached before the outage is gone.
    redis_client.reachable_again()
    usage_followup_task(str(book.pk))
    assert balance(api, subscription)["consumedUnits"] == 17


def test_an_answer_from_the_cache_says_its_age_so_a_client_keeps_it_30_seconds_from_its_computation(
        api, chain, frozen_now, monkeypatch):
    # Without Age, an answer 29 seconds old in the shared cache was kept 30 seconds more by the client.
    import billing.selectors.credit_pools as pools

    subscription = pool_subscription(api, chain)
    clock = {"now": 1_000_000.0}
    monkeypatch.setattr(pools.time, "time", lambda: clock["now"])
    url = f"/v1/subscriptions/{subscription['id']}/credit-balance"
    fresh = api.get(url)
    assert fresh["Cache-Control"] == "private, max-age=30" and not fresh.has_header("Age")
    clock["now"] += 29.4
    kept = api.get(url)
    assert kept["Cache-Control"] == "private, max-age=30" and kept["Age"] == "29"
    assert kept.json() == fresh.json()


def test_without_a_shared_cache_every_read_computes(api, chain, frozen_now, settings):
    # No REDIS_URL: each web process has a cache of its own, so an answer kept in one would outlive a top-up
    # or usage seen through another (reads flipping between the balance before and after the top-up).
    settings.CACHE_SHARED = False
    subscription = pool_subscription(api, chain)
    use(chain, 10)
    single = api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance")
    assert single.json()["consumedUnits"] == 10
    assert single["Cache-Control"] == "private, max-age=30"  # the client may still keep it (contract)
    assert balances(api)["balances"][0]["consumedUnits"] == 10
    use(chain, 10)
    assert balance(api, subscription)["consumedUnits"] == 20
    assert balances(api)["balances"][0]["consumedUnits"] == 20


def test_reads_are_cached_per_query(api, book, chain, frozen_now):
    pool_subscription(api, chain)
    assert len(balances(api)["balances"]) == 1
    other = another_chain(api, book)
    pool_subscription(api, other)
    assert len(balances(api, agentId=str(other.agent.id))["balances"]) == 1


# --------------------------------------------------------------------------- access

def test_reads_take_any_full_secret_key_of_the_organization(client_for, api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    member = client_for(role="member")
    assert balance(member, subscription)["subscriptionId"] == subscription["id"]
    assert len(balances(member)["balances"]) == 1


@pytest.mark.parametrize("key", [{"key_type": "publishable"}, {"scope": "ingest"}, {"scope": "legal"}])
def test_publishable_ingest_and_legal_keys_cannot_read_balances(client_for, api, chain, frozen_now, key):
    subscription = pool_subscription(api, chain)
    client = client_for(**key)
    error(client.get(f"/v1/subscriptions/{subscription['id']}/credit-balance"), 403)
    error(client.get("/v1/credit-balances"), 403)


def test_a_pool_counts_decimal_quantities_exactly(api, chain, frozen_now):
    subscription = pool_subscription(api, chain)
    for _ in range(3):
        use(chain, "0.1")
    row = balance(api, subscription)
    assert (Decimal(str(row["consumedUnits"])), Decimal(str(row["remainingUnits"]))) == (Decimal("0.3"),
                                                                                          Decimal("99.7"))


def test_the_last_period_of_an_ended_subscription_is_settled_and_usage_back_filled_after_moves_nothing(
        api, chain, frozen_now):
    """The alert job settles an ended subscription's last period as it settles a running pool's ended ones: a
    settlement is final, so usage back-filled into it later leaves its top-up draw where it was (it was read again
    from the ledger on every balance, and moved)."""
    subscription = pool_subscription(api, chain, endDate="2025-07-01T00:00:00Z")
    ok(topup(api, subscription, 50), 201)
    use(chain, 130, at=datetime(2025, 6, 5, 10, tzinfo=timezone.utc))
    frozen_now(datetime(2025, 7, 10, tzinfo=timezone.utc))
    run_jobs("2025-07-10T00:00:00Z")
    grant = CreditGrant.objects.get(kind="period", subscription_id=subscription["id"])
    # 130 units of a 100-unit pool: 30 drawn from the 50 topped up.
    assert (grant.consumed_units, grant.topup_units_drawn) == (130, 30) and grant.settled_at is not None
    assert balance(api, subscription)["remainingUnits"] == 120  # a whole pool (no period running) and 20 topped up
    use(chain, 20, at=datetime(2025, 6, 20, 10, tzinfo=timezone.utc))  # back-filled after the end
    frozen_now(datetime(2025, 7, 11, tzinfo=timezone.utc))
    run_jobs("2025-07-11T00:00:00Z")
    cache.clear()
    assert balance(api, subscription)["remainingUnits"] == 120
    grant.refresh_from_db()
    assert (grant.consumed_units, grant.topup_units_drawn) == (130, 30)
