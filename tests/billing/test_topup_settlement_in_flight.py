"""A top-up settles the pool's ended periods (billing/services/credit_pools.py `credit_topup`), and a settlement is
final: a batch of the book still committing when it reads the ledger, begun before the period ended and dated in
it, is waited for, as the alert job waits for it. Transactional: the batch commits from another connection."""
import threading

import pytest
from django.db import connection, connections, transaction

from accounts.book_generations import PRICE_LOCKS
from billing.models import CreditGrant
from tests.billing.pools import pool_subscription, topup, use
from tests.billing.support import ok
from tests.billing.test_credit_pool_topups import at
from tests.row_races import lock_waiters

pytestmark = pytest.mark.django_db(transaction=True)


def batch_in_flight(chain, quantity, dated, *, hold) -> threading.Thread:
    """A batch of `quantity` units dated `dated` on a thread of its own, stored and still committing (holding the
    book's price lock, as recording's insert does) while `hold()` runs; returns once it is stored."""
    storing = threading.Event()

    def run():
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:  # what recording's insert holds until it commits
                    cursor.execute("SELECT pg_advisory_xact_lock_shared(%s, hashtext(%s))",
                                   [PRICE_LOCKS, str(chain.customer.book_id)])
                use(chain, quantity, at=dated)
                storing.set()
                hold()
        finally:
            connections.close_all()
    thread = threading.Thread(target=run)
    thread.start()
    assert storing.wait(30)
    return thread


def test_a_topup_after_the_period_ended_settles_it_with_the_batch_still_committing(api, chain, frozen_now):
    """June: 130 units of a 100-unit pool, a 50-unit top-up bought on June 10. A batch of 20 units dated June 30
    23:59:59 is still committing when a second top-up arrives on July 1 and settles June: June used 150 and drew
    all 50 from the top-up. It settled at 130 and drew 30, leaving 20 units of June's top-up in every later
    balance."""
    subscription = pool_subscription(api, chain)
    use(chain, 130)
    ok(topup(api, subscription, 50, key="june"), 201)
    frozen_now(at("2025-07-01T00:00:01"))
    waited = []
    # The top-up waits for this batch (0 after 30 s: it did not).
    thread = batch_in_flight(chain, 20, at("2025-06-30T23:59:59"), hold=lambda: waited.append(lock_waiters()))
    ok(topup(api, subscription, 10, key="july"), 201)
    thread.join()
    assert waited == [1]
    june = CreditGrant.objects.get(kind="period", period_start=at("2025-06-01"))
    assert (june.consumed_units, june.topup_units_drawn) == (150, 50)


def test_a_void_right_after_a_period_ended_leaves_that_periods_settlement_to_the_job_that_waits(api, chain, frozen_now):
    """June is settled and invoiced; July (130 units of a 100-unit pool) has ended and no job has settled it yet. A
    batch of 20 units dated July 31 23:59:59 is still committing when June's invoice is voided, which settles the
    pools of its customer again inside its own transaction, where nothing waits for batches in flight. July is
    left to the alert job, which waits: July used 150. Settled by the void, July was final at 130 while its invoice
    billed 150."""
    from console.verification import ledger_verify
    from tests.billing.pools import run_jobs

    subscription = pool_subscription(api, chain)  # June's period at the clock's June 10
    ok(topup(api, subscription, 50), 201)  # which grants June its period
    use(chain, 30, at=at("2025-06-10T10:00:00"))
    frozen_now(at("2025-07-01T00:05:00"))
    run_jobs("2025-07-01T00:05:00Z")
    june = ok(api.post("/v1/invoices/generate", {
        "customerId": str(chain.customer.id), "subscriptionId": subscription["id"],
        "billingPeriodStart": "2025-06-01T00:00:00Z", "billingPeriodEnd": "2025-07-01T00:00:00Z"}), 201)
    ok(api.post(f"/v1/invoices/{june['id']}/send", {"recipientEmail": "billing@client.example.com"}))
    assert CreditGrant.objects.get(kind="period", period_start=at("2025-06-01")).settled_at is not None
    frozen_now(at("2025-07-10T00:00:00"))
    use(chain, 130, at=at("2025-07-05T10:00:00"))
    frozen_now(at("2025-08-01T00:00:01"))
    done = threading.Event()
    # Committed once the void has answered.
    thread = batch_in_flight(chain, 20, at("2025-07-31T23:59:59"), hold=lambda: done.wait(30))
    ok(api.post(f"/v1/invoices/{june['id']}/void", {"reason": "reissued"}))
    done.set()
    thread.join()
    assert CreditGrant.objects.get(kind="period", period_start=at("2025-07-01")).settled_at is None
    run_jobs("2025-08-01T00:00:02Z")
    assert CreditGrant.objects.get(kind="period", period_start=at("2025-07-01")).consumed_units == 150
    [report] = ledger_verify(now=at("2025-08-01T01:00:00"), book=chain.customer.book)
    assert report.findings.get("credit_pools", []) == []


def test_a_period_an_end_cut_is_settled_by_the_job_that_waits_for_the_batch_still_committing(
        api, book, chain, frozen_now):
    """A 100-unit pool with a 50-unit top-up bought June 3, 130 units used, ended at June 10 12:00: the end fits
    June's grant to the cut and settles nothing (it cannot wait inside its request). A batch of 20 units dated 11:59
    is still committing when the job settles June: it waits, June used 150 and drew the whole top-up, and the pool
    verifier finds no drift."""
    from console.verification import ledger_verify
    from tests.billing.pools import run_jobs

    subscription = pool_subscription(api, chain)
    frozen_now(at("2025-06-03T00:00:00"))
    ok(topup(api, subscription, 50), 201)
    frozen_now(at("2025-06-10T12:00:00"))
    use(chain, 130, at=at("2025-06-05T10:00:00"))
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "ended"}))
    june = CreditGrant.objects.get(kind="period", period_start=at("2025-06-01"))
    assert (june.period_end, june.settled_at) == (at("2025-06-10T12:00:00"), None)
    frozen_now(at("2025-06-10T12:05:00"))
    waited = []
    thread = batch_in_flight(chain, 20, at("2025-06-10T11:59:00"), hold=lambda: waited.append(lock_waiters()))
    run_jobs("2025-06-10T12:05:00Z")
    thread.join()
    assert waited == [1]
    june.refresh_from_db()
    assert (june.consumed_units, june.topup_units_drawn) == (150, 50)
    [report] = ledger_verify(now=at("2025-06-10T12:06:00"), book=book, checks=("credit_pools",))
    assert report.drift == 0, report.findings
