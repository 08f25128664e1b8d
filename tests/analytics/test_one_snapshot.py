"""Figures made of several reads, one read subtracted from another, with a commit landing between the reads on
purpose: each answer counts every event once (the reads share one snapshot of the ledger, customers/usage_sums.py
`ledger_snapshot`), and a month's rows moving between the ledger's partitions meanwhile wait for the read.
Transactional: the interloping batch or job commits from another connection, as it would in production."""
import threading

import pytest
from django.core.cache import cache
from django.db import OperationalError

from analytics.selectors import cost as cost_selectors
from billing.models import CreditGrant
from billing.selectors import credit_pools as pool_selectors
from customers import partitions
from tests.analytics.support import get, ledger, models, rec, record  # noqa: F401 (fixtures)
from tests.analytics.test_cost import APRIL, COST, plans  # noqa: F401 (fixture)
from tests.billing.conftest import agent, chain, customer, signal  # noqa: F401 (fixtures)
from tests.billing.pools import balance, pool_subscription, run_jobs, topup, use
from tests.billing.support import ok
from tests.billing.test_credit_pool_topups import at
from tests.customers.test_ledger_partitions import partition_of
from tests.parallel import in_another_connection

pytestmark = pytest.mark.django_db(transaction=True)


def batch_committed_before_the_first_call(monkeypatch, module, name: str, client_for) -> list:
    """`module.name` replaced so that its first call first commits, from another connection, a batch of 3 of
    Main's events (acme, writer, pages, April 8); returns a list that holds True once it did."""
    late, read, fired = client_for(email="late@example.com"), getattr(module, name), []

    def after_a_batch(**kwargs):
        if not fired:
            fired.append(True)
            in_another_connection(lambda: record(late, *(rec("acme", "writer", "pages", "2025-04-08T10:00:00Z")
                                                        for _ in range(3))))
        return read(**kwargs)
    monkeypatch.setattr(module, name, after_a_batch)
    return fired


def test_the_null_plan_is_not_what_a_batch_committed_between_the_reads_leaves(api, client_for, ledger, plans,
                                                                              monkeypatch):
    """byPlan's null plan is the total less the plans' rows: a batch of 3 of Main's events committed after the
    total was read and before the plans' rows made the null plan -1 (and Main 4 of a total of 4)."""
    fired = batch_committed_before_the_first_call(monkeypatch, cost_selectors, "_by_plan", client_for)

    body = get(api, COST, **APRIL)
    assert fired
    counts = {row["planId"]: row["eventCount"] for row in body["byPlan"]}
    assert body["eventCount"] == sum(counts.values()) == 4  # the batch came after this answer's snapshot
    assert counts == {plans.early_plan: 1, plans.main_plan: 1, None: 2}
    after = get(api, COST, **APRIL)  # the next answer counts the batch, in both reads
    assert {row["planId"]: row["eventCount"] for row in after["byPlan"]} == {plans.early_plan: 1,
                                                                           plans.main_plan: 4, None: 2}


def test_a_balance_read_while_its_period_settles_subtracts_the_draw_once(api, chain, frozen_now, monkeypatch):
    """June used 130 of its 100 units and drew 30 of a 50-unit top-up. A read on July 5, before the month's jobs,
    finds June unsettled; the jobs commit between the read of the settled draws (none yet) and the read of the
    pending ones (none any more): the draw was subtracted by neither and the balance read 150."""
    subscription = pool_subscription(api, chain)
    use(chain, 130)
    assert ok(topup(api, subscription, 50), 201)["remainingUnits"] == 20
    partitions.ledger_partitions_maintain(now=at("2025-07-05"))  # the jobs below then move no rows (test below)
    frozen_now(at("2025-07-05"))
    pending = pool_selectors.pending_settlements
    fired = []

    def pending_after_the_jobs(*args, **kwargs):
        if not fired and threading.current_thread() is threading.main_thread():
            fired.append(True)
            in_another_connection(lambda: run_jobs("2025-07-05T00:00:00Z"))
        return pending(*args, **kwargs)
    monkeypatch.setattr(pool_selectors, "pending_settlements", pending_after_the_jobs)

    cache.clear()
    assert balance(api, subscription)["remainingUnits"] == 120  # the July pool's 100 and the top-up's 20 left
    assert fired
    assert CreditGrant.objects.get(kind="period", period_start=at("2025-06-01")).topup_units_drawn == 30
    cache.clear()
    assert balance(api, subscription)["remainingUnits"] == 120  # after the rollover the same


def test_a_month_moving_out_of_the_default_partition_waits_for_a_read_in_one_snapshot(api, ledger, monkeypatch):
    """Two events of March 1987 wait in the default partition (no month of them exists). A cost read of a window
    with partial days reads them from the events; the operator's `ledger_partitions ensure 1987-03` runs between
    its first statement and its read of them. A snapshot taken before the move, used by a statement planned after
    it, read the new partition (whose rows it could not see) and not the default one: the read counted 0 events.
    The read holds the ledger's lock from its start, so the move waits for it (here it gives up at its timeout)."""
    events = [record(api, rec("acme", "writer", "pages", f"1987-03-14T1{n}:00:00Z"))["results"]["success"][0]["eventId"]
              for n in range(2)]
    assert {partition_of(event_id) for event_id in events} == {partitions.DEFAULT}
    monkeypatch.setattr(partitions, "MOVE_LOCK_ATTEMPTS", 2)  # then it gives up, as it would after seconds
    cost = cost_selectors._cost
    fired, moves = [], []

    def move():
        try:
            partitions.ledger_partitions_ensure(months=[at("1987-03-01")])
        except OperationalError:  # it waited for the read and gave up; the next run moves them
            moves.append("waited")

    def cost_after_the_move(**kwargs):
        if not fired:
            fired.append(True)
            in_another_connection(move)
        return cost(**kwargs)
    monkeypatch.setattr(cost_selectors, "_cost", cost_after_the_move)

    body = get(api, COST, startDate="1987-03-14T06:00:00Z", endDate="1987-03-14T18:00:00Z")
    assert fired
    assert body["eventCount"] == 2
    assert moves == ["waited"]
    partitions.ledger_partitions_ensure(months=[at("1987-03-01")])
    assert {partition_of(event_id) for event_id in events} == {"customers_usageevent_p1987_03"}
    assert get(api, COST, startDate="1987-03-14T06:00:00Z", endDate="1987-03-14T18:00:00Z")["eventCount"] == 2


def test_revenue_counts_a_batch_committed_between_its_reads_in_none_of_them(api, client_for, ledger, plans,
                                                                            monkeypatch):
    """Revenue reads each subscription's cost, then the quantities it bills, then the book's total: a batch of 3
    of Main's events committed after the first read was in the total (7 events) and not in Main's row (1), and a
    pool's period quantity could count it while the window's did not."""
    from analytics.selectors import revenue as revenue_selectors

    fired = batch_committed_before_the_first_call(monkeypatch, revenue_selectors, "signal_quantities", client_for)

    body = get(api, "/v1/analytics/revenue", **APRIL)
    assert fired
    counts = {row["subscriptionId"]: row["eventCount"] for row in body["bySubscription"]}
    assert counts == {plans.early["id"]: 1, plans.main["id"]: 1}
    assert body["eventCount"] == 4  # the batch came after this answer's snapshot, in every read
    after = get(api, "/v1/analytics/revenue", **APRIL)
    assert {row["subscriptionId"]: row["eventCount"] for row in after["bySubscription"]} == {
        plans.early["id"]: 1, plans.main["id"]: 4}
    assert after["eventCount"] == 7
