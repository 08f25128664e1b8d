"""Real parallel requests against a live server on PostgreSQL: whatever must exist once exists once.

Threads released together by a barrier send the requests; the database (constraints, row locks,
`ON CONFLICT`) is the referee. Invoice numbering and payment webhooks under concurrency are in
tests/billing/test_invoices_concurrency.py.
"""
from datetime import datetime, timezone
from decimal import Decimal
from functools import partial

import pytest

from billing.models import CreditGrant, Invoice
from billing.services.invoices import invoices_finalize_due
from customers.models import Agent, Customer, Signal, UsageEvent
from matters.models import MatterAttribution
from tests.factories import MatterFactory, MatterRuleFactory, ServiceEntryFactory, UsageEventFactory
from tests.mail import sent_mail
from tests.parallel import in_parallel, post
from tests.reliability.world import JAN, World

pytestmark = pytest.mark.django_db(transaction=True, serialized_rollback=True)

PARALLEL = 8
JANUARY, FEBRUARY = datetime(2025, 1, 1, tzinfo=timezone.utc), datetime(2025, 2, 1, tzinfo=timezone.utc)


@pytest.fixture
def llm():
    return ServiceEntryFactory(canonical_name="race-llm", provider="raceai", input_cost=Decimal("0.000001"),
                               output_cost=Decimal("0.000002"))


def record(**fields):
    return {"customerExternalId": "race-customer", "agentCode": "race-agent", "signalName": "race-signal",
            "model": "race-llm", "modelProvider": "raceai", "inputTokens": 100, "outputTokens": 100, **fields}


def lock_waiters(seconds: float = 5, *, wait_event: str | None = None) -> int:
    """Sessions of the test database waiting on a lock (of `wait_event`'s kind, e.g. `advisory`, or any), polled
    until there is one or `seconds` pass."""
    import time

    from django.db import connection

    deadline, waiting = time.monotonic() + seconds, 0
    while time.monotonic() < deadline and not waiting:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock' AND (%s::text IS NULL OR wait_event = %s)",
                           [wait_event, wait_event])
            waiting = cursor.fetchone()[0]
        time.sleep(0.02)
    return waiting


def advisory_lock_waiters(seconds: float = 5) -> int:
    return lock_waiters(seconds, wait_event="advisory")


def batch_in_flight(book, stored, release, recorded_at=None, **event):
    """A thread's body: one event stored as recording stores a batch (the book's batch lock taken shared by
    `accounts_prices_in_force`), recorded at `recorded_at` when given, its transaction held open until `release`;
    `stored` once it is in."""
    from django.db import connection, connections, transaction

    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT accounts_prices_in_force(%s::uuid)", [str(book.pk)])
            stored_event = UsageEventFactory(book=book, **event)
            if recorded_at is not None:
                UsageEvent.objects.filter(pk=stored_event.pk).update(created_at=recorded_at)
            stored.set()
            release.wait(20)
    finally:
        stored.set()
        connections.close_all()


def top_up_in_flight(book, subscription, held, release, outcomes: dict, *, now, key="race"):
    """A thread's body: a top-up of 50 units whose transaction (holding the subscription's pool sync) stays open until
    `release`; `held` once it is in; `outcomes["top-up"]` says whether it committed."""
    from django.db import connections, transaction

    from billing.services.credit_pools import credit_topup

    try:
        with transaction.atomic():
            credit_topup(book=book, subscription_id=subscription.pk, units=Decimal("50"), idempotency_key=key,
                         note="", created_by="test", now=now)
            held.set()
            release.wait(20)
        outcomes["top-up"] = "committed"
    except Exception as error:  # noqa: BLE001 (the outcome is the assertion)
        outcomes["top-up"] = repr(error)
    finally:
        held.set()
        connections.close_all()


def race(holder, held, release, contender) -> tuple[int, float]:
    """Start `holder` (a thread body that sets `held` once it holds its lock, then waits for `release`), then
    `contender` once it does; release the holder once the contender waits on an advisory lock (or 5 s passed).
    Returns how many sessions waited, and the instant of the release."""
    import threading
    import time

    holding = threading.Thread(target=holder)
    holding.start()
    assert held.wait(20)
    contending = threading.Thread(target=contender)
    contending.start()
    waiting = advisory_lock_waiters()
    released_at = time.monotonic()
    release.set()
    holding.join(20)
    contending.join(20)
    return waiting, released_at


def pool_subscription_in_february(world, *, settle_january: bool):
    """The world's pool subscription (100 a period, from January) with January's grant made while January ran, its
    stored period moved on to February, and January settled on February 2 when `settle_january`."""
    from billing.models import Subscription
    from billing.selectors.credit_pools import pool_for
    from billing.services.credit_pools import credit_pool_sync

    subscription = Subscription.objects.get(pk=world.pool_subscription.id)
    pool = pool_for(subscription)
    Subscription.objects.filter(pk=subscription.pk).update(current_period_start=JANUARY, current_period_end=FEBRUARY)
    credit_pool_sync(subscription=Subscription.objects.get(pk=subscription.pk), pool=pool,
                     now=datetime(2025, 1, 20, tzinfo=timezone.utc))
    Subscription.objects.filter(pk=subscription.pk).update(current_period_start=FEBRUARY,
                                                           current_period_end=datetime(2025, 3, 1, tzinfo=timezone.utc))
    if settle_january:
        credit_pool_sync(subscription=Subscription.objects.get(pk=subscription.pk), pool=pool,
                         now=datetime(2025, 2, 2, tzinfo=timezone.utc))
    return subscription, pool


# --------------------------------------------------------------------------- usage recording

def test_parallel_requests_with_one_idempotency_key_store_one_event(live_server, api, llm):
    send = post(f"{live_server.url}/v1/usage/record", api.raw_key, {"records": [record(idempotencyKey="same-key")]})
    results = in_parallel([send] * PARALLEL)
    assert all(status == 200 for status, _ in results)
    event_ids = {body["results"]["success"][0]["eventId"] for _, body in results}
    assert len(event_ids) == 1
    assert UsageEvent.objects.count() == 1
    assert sum(1 for _, body in results if not body["results"]["success"][0].get("replayed")) == 1


def test_parallel_first_events_of_one_new_customer_create_it_once(live_server, api, llm):
    send = post(f"{live_server.url}/v1/usage/record", api.raw_key, {"records": [record()]})
    results = in_parallel([send] * PARALLEL)
    assert all(status == 200 and body["successful"] == 1 for status, body in results)
    assert Customer.objects.filter(external_id="race-customer").count() == 1
    assert Agent.objects.filter(agent_code="race-agent").count() == 1
    assert Signal.objects.filter(short_name="race-signal").count() == 1
    assert UsageEvent.objects.count() == PARALLEL


# --------------------------------------------------------------------------- invoices

def test_parallel_generates_and_sends_make_one_invoice_with_one_number_issued_once(live_server, api):
    world = World(api)
    generate = post(f"{live_server.url}/v1/invoices/generate", api.raw_key, {
        "customerId": world.customer.id, "subscriptionId": world.subscription.id,
        "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]})
    generated = in_parallel([generate] * PARALLEL)
    assert sorted(status for status, _ in generated) == [200] * (PARALLEL - 1) + [201]
    [invoice_id] = {body["id"] for _, body in generated}

    sent = in_parallel([post(f"{live_server.url}/v1/invoices/{invoice_id}/send", api.raw_key, {})] * PARALLEL)
    assert [status for status, _ in sent] == [200] * PARALLEL
    invoice = Invoice.objects.get()
    assert (invoice.status, invoice.invoice_number) == ("issued", "INV-000001")
    assert {body["invoiceNumber"] for _, body in sent} == {"INV-000001"}
    # Every send is a delivery (spec: sending again re-sends), and each carries the one number.
    mails = sent_mail()
    assert len(mails) == PARALLEL and all("INV-000001" in mail.subject for mail in mails)
    assert len({mail.text for mail in mails}) == 1  # the same invoice and the same pay-now link in each


def test_a_send_racing_the_finalize_job_issues_the_draft_once_and_emails_once(live_server, api):
    world = World(api)
    invoice_id = world.invoice.id  # January's draft: its period has ended, so the job finalizes it
    send = post(f"{live_server.url}/v1/invoices/{invoice_id}/send", api.raw_key, {})
    now = datetime.now(timezone.utc)
    results = in_parallel([send, *[lambda: invoices_finalize_due(now=now)] * (PARALLEL - 1)])
    assert results[0][0] == 200
    invoice = Invoice.objects.get(pk=invoice_id)
    assert (invoice.status, invoice.invoice_number) == ("issued", "INV-000001")
    assert sum(int(outcome.split()[0]) for outcome in results[1:]) <= 1  # at most one job finalized it
    assert len(sent_mail()) == 1
    assert Invoice.objects.count() == 1


# --------------------------------------------------------------------------- matters

def test_parallel_rule_sweeps_attribute_each_event_once(live_server, api, book, settings):
    settings.MATTERS_APPLY_CHUNK_SIZE = 7  # many small chunks, so the sweeps interleave
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="sweep-agent")
    events = [UsageEventFactory(book=book, agent_code="sweep-agent") for _ in range(60)]
    apply = post(f"{live_server.url}/v1/matter-rules/apply", api.raw_key, {})
    results = in_parallel([apply] * PARALLEL)
    assert all(status == 201 for status, _ in results)
    assert sum(body["assigned"] for _, body in results) == len(events)
    attributions = MatterAttribution.objects.filter(event__in=events)
    assert attributions.count() == len(events)
    assert set(attributions.values_list("matter_id", flat=True)) == {matter.id}


# --------------------------------------------------------------------------- credit pools

def test_parallel_top_ups_with_one_key_create_one_grant(live_server, api):
    subscription = World(api).pool_subscription  # a pool of 100 units, nothing used
    topup = post(f"{live_server.url}/v1/subscriptions/{subscription.id}/credit-topup", api.raw_key,
                 {"units": 25, "idempotencyKey": "same"})
    results = in_parallel([topup] * PARALLEL)
    assert sorted(status for status, _ in results) == [200] * (PARALLEL - 1) + [201]
    assert len({body["grantId"] for _, body in results}) == 1
    assert [body["created"] for _, body in results].count(True) == 1
    assert CreditGrant.objects.filter(kind="topup").count() == 1
    assert all(body["remainingUnits"] == 125 for _, body in results)


def test_parallel_top_ups_with_different_keys_all_count_and_make_one_period_grant(live_server, api):
    subscription = World(api).pool_subscription
    url = f"{live_server.url}/v1/subscriptions/{subscription.id}/credit-topup"
    results = in_parallel([post(url, api.raw_key, {"units": 10, "idempotencyKey": f"key-{i}"})
                           for i in range(PARALLEL)])
    assert all(status == 201 for status, _ in results)
    assert max(body["remainingUnits"] for _, body in results) == 100 + 10 * PARALLEL
    assert CreditGrant.objects.filter(kind="topup").count() == PARALLEL
    assert CreditGrant.objects.filter(kind="period").count() == 1


def test_a_settlement_after_the_rollover_waits_for_a_top_up_made_while_its_period_ran(api):
    """A top-up's transaction holds the subscription's pool sync until it commits: the sync that settles the period
    the top-up was made in (run after the rollover, for the next period) waits for it, and draws on it, instead of
    settling the period without the units."""
    import threading
    import time

    from django.db import connections

    from accounts.models import Book
    from billing.models import Subscription
    from billing.selectors.credit_pools import pool_for
    from billing.services.credit_pools import credit_pool_sync

    world = World(api)
    subscription = Subscription.objects.get(pk=world.pool_subscription.id)  # a pool of 100 a period, from January
    january, february = datetime(2025, 1, 1, tzinfo=timezone.utc), datetime(2025, 2, 1, tzinfo=timezone.utc)
    Subscription.objects.filter(pk=subscription.pk).update(current_period_start=january,
                                                           current_period_end=february)  # as it was in January
    UsageEventFactory(book=Book.objects.get(pk=subscription.book_id), customer=subscription.customer,
                      signal=Signal.objects.get(pk=world.signal.id), quantity=Decimal("130"),
                      usage_date=datetime(2025, 1, 15, tzinfo=timezone.utc))  # 30 beyond the pool
    UsageEvent.objects.update(created_at=datetime(2025, 1, 15, tzinfo=timezone.utc))
    book, pool = Book.objects.get(pk=subscription.book_id), pool_for(subscription)
    release, topped_up, settled = threading.Event(), threading.Event(), []

    def settle_after_the_rollover():
        try:
            rolled = Subscription.objects.get(pk=subscription.pk)
            rolled.current_period_start, rolled.current_period_end = february, datetime(2025, 3, 1,
                                                                                       tzinfo=timezone.utc)
            credit_pool_sync(subscription=rolled, pool=pool, now=datetime(2025, 2, 2, tzinfo=timezone.utc))
            settled.append(time.monotonic())
        finally:
            connections.close_all()

    # The top-up made on January 31 at 23:59, its transaction not committed yet.
    _, released_at = race(partial(top_up_in_flight, book, subscription, topped_up, release, {},
                                  now=datetime(2025, 1, 31, 23, 59, tzinfo=timezone.utc)),
                          topped_up, release, settle_after_the_rollover)
    assert settled and settled[0] >= released_at, "the settlement did not wait for the top-up's transaction"
    january_grant = CreditGrant.objects.get(subscription_id=subscription.pk, kind="period", period_start=january)
    assert (january_grant.consumed_units, january_grant.topup_units_drawn) == (130, 30)


def test_the_finalize_job_waits_for_a_batch_of_the_period_still_committing(api):
    """A batch dated in the period, begun before the period ended and still committing when the end-of-period job
    reads the ledger: the job waits for it (the book's batch lock, accounts/book_generations.py), so the invoice it
    issues bills the batch instead of leaving it billed nowhere."""
    import threading
    import time

    from django.db import connections

    from accounts.models import Book

    world = World(api)
    world.event  # 4 pages on January 15
    invoice_id = world.invoice.id  # January's draft
    book = Book.objects.get(pk=world.book.pk)
    stored, release, finalized = threading.Event(), threading.Event(), []

    def finalize():
        try:
            finalized.append((invoices_finalize_due(now=datetime(2025, 2, 1, 0, 0, 1, tzinfo=timezone.utc)),
                              time.monotonic()))
        finally:
            connections.close_all()

    _, released_at = race(partial(batch_in_flight, book, stored, release, customer=Customer.objects.get(
        pk=world.customer.id), signal=Signal.objects.get(pk=world.signal.id), quantity=Decimal("6"),
        usage_date=datetime(2025, 1, 31, 23, 59, 59, tzinfo=timezone.utc)), stored, release, finalize)  # uncommitted
    assert finalized and finalized[0][1] >= released_at, "the job did not wait for the batch"
    invoice = Invoice.objects.get(pk=invoice_id)
    assert invoice.status == "issued"
    usage_line, = [line for line in invoice.lines.all() if line.charge_type == "usage"]
    assert usage_line.used_quantity == 10  # 4 + the 6 that were committing


def test_a_pool_settlement_waits_for_a_batch_of_its_period_still_committing(api):
    """As the end-of-period invoices: the job that settles a credit pool's ended period waits for the book's batches
    still committing, so the settlement (final, and what the period draws on top-ups) counts them."""
    import threading
    import time

    from django.db import connections

    from accounts.models import Book
    from billing.services.credit_pools import credit_pool_alerts_evaluate

    world = World(api)
    subscription, _ = pool_subscription_in_february(world, settle_january=False)
    book = Book.objects.select_related("organization").get(pk=subscription.book_id)
    stored, release, settled = threading.Event(), threading.Event(), []

    def settle():
        try:
            credit_pool_alerts_evaluate(book=book, now=datetime(2025, 2, 1, 0, 0, 1, tzinfo=timezone.utc))
            settled.append(time.monotonic())
        finally:
            connections.close_all()

    _, released_at = race(partial(
        batch_in_flight, book, stored, release, customer=subscription.customer,
        signal=Signal.objects.get(pk=world.signal.id), quantity=Decimal("120"),
        usage_date=datetime(2025, 1, 31, 23, 59, 59, tzinfo=timezone.utc),  # 120 units, not committed yet
        recorded_at=datetime(2025, 1, 31, 23, 59, 59, tzinfo=timezone.utc)), stored, release, settle)
    assert settled and settled[0] >= released_at, "the settlement did not wait for the batch"
    grant = CreditGrant.objects.get(subscription_id=subscription.pk, kind="period", period_start=JANUARY)
    assert (grant.consumed_units, grant.settled_at) == (120, datetime(2025, 2, 1, 0, 0, 1, tzinfo=timezone.utc))


def against_a_top_up_in_flight(api, write):
    """`write(book, subscription, world, now)` (answering what it wrote) run while a top-up of the world's pool
    subscription, January settled, holds its pool lock. Returns how many sessions waited on an advisory lock, each
    side's outcome ("committed", what the write answered, or the error), and the subscription."""
    import threading

    from django.db import connections

    from accounts.models import Book

    world = World(api)
    subscription, _ = pool_subscription_in_february(world, settle_january=True)
    book = Book.objects.get(pk=subscription.book_id)
    now = datetime(2025, 2, 10, tzinfo=timezone.utc)
    topped_up, release, outcomes = threading.Event(), threading.Event(), {}

    def contend():
        try:
            outcomes["write"] = write(book, subscription, world, now)
        except Exception as error:  # noqa: BLE001 (the outcome is the assertion)
            outcomes["write"] = repr(error)
        finally:
            connections.close_all()

    waiting, _ = race(partial(top_up_in_flight, book, subscription, topped_up, release, outcomes, now=now),
                      topped_up, release, contend)
    return waiting, outcomes, subscription


def test_a_plan_change_dated_into_a_settled_period_and_a_top_up_in_flight_both_go_through(api):
    """The change settles the old side's pools again, and a top-up holding one of their pool locks references the
    subscription's row at its commit: the change takes the pool locks before the row, so both go through, one after
    the other, where taking them after the row made a deadlock that failed one of them."""
    from billing.services.plan_changes import subscription_change_plan

    def change(book, subscription, world, now):
        new = subscription_change_plan(book=book, subscription_id=subscription.pk, now=now, actor="test",
                                       plan_id=world.plan.id, effective_at=datetime(2025, 1, 20, tzinfo=timezone.utc))
        return str(new.previous_subscription_id)

    waiting, outcomes, subscription = against_a_top_up_in_flight(api, change)
    assert waiting, "the change did not wait for the top-up's pool lock"
    assert outcomes == {"top-up": "committed", "write": str(subscription.pk)}


def test_a_strategy_added_to_a_plan_with_a_settled_pool_and_a_top_up_in_flight_both_go_through(api):
    """A strategy written on a plan settles again the pools of its customers' usage (which subscription bills an
    event follows the strategies): it waits for the top-up holding the pool's lock, then settles with its units,
    and both commit."""
    from billing.serializers.strategies import StrategyIn
    from billing.services.strategies import strategies_create
    from core.serialization import parse_many

    def add_a_fee(book, subscription, world, now):
        [strategy] = strategies_create(book=book, plan_id=subscription.plan_id, actor="test", now=now,
                                       items=parse_many(StrategyIn, [{
                                           "name": "Platform", "chargeType": "recurring", "rate": "5",
                                           "billingFrequency": "monthly", "agentId": str(world.agent.id)}]))
        return strategy.name

    waiting, outcomes, subscription = against_a_top_up_in_flight(api, add_a_fee)
    assert waiting, "the strategy did not wait for the top-up's pool lock"
    assert outcomes == {"top-up": "committed", "write": "Platform"}
    grant = CreditGrant.objects.get(subscription_id=subscription.pk, kind="period", period_start=JANUARY)
    assert grant.settled_at == datetime(2025, 2, 2, tzinfo=timezone.utc)  # settled again as first settled
