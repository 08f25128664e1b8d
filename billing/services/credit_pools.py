"""Credit pools: period grants and their settlement, top-ups, the alert pause and the pool alert emails.

Bookkeeping (docs/decisions/credit-pools.md): `credit_pool_sync` materializes the grant of the subscription's
stored period (the refill; until then the balance row says `implicitFullPool`) and settles every ended period
once: what it consumed and how many units beyond its pool it took from top-ups. It runs with every alert
evaluation (after ingestion and in the scheduled job, right after the period rollover) and before a top-up.
"""
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial

from django.db import IntegrityError, transaction
from django.db.models import F

from accounts.book_generations import batches_in_flight_wait
from billing.events import credit_pool_threshold_crossed
from billing.models import CreditGrant, CreditPoolAlert, Subscription
from billing.pricing.lines import pool_units
from billing.pricing.terms import effective_end
from billing.selectors.credit_pools import (HUNDRED, PERIOD, TOPUP, CreditBalance, Pool, balance_cache_refresh,
                                            credit_balance_get, credit_balance_list, needs_settling,
                                            pending_settlements, period_grants, period_pool, pool_for, settled_balance,
                                            timeline_of)
from billing.services.changelog import Kind, changelog_add
from accounts.models import Book
from accounts.selectors import billing_recipients
from core import display
from core.emails import send_templated
from core.database import advisory_xact_lock, retry_while_reconnecting
from core.errors import BadRequest, Conflict
from core.money import SUMS
from core.jobs import BookFailures
from core.scoping import get_owned, owned
from core.serialization import decimal_text
from customers.partitions import archived_spans, overlaps_archive

Stage, Outcome = CreditPoolAlert.Stage, CreditPoolAlert.Outcome


def _require_pool(subscription: Subscription) -> Pool:
    pool = pool_for(subscription)
    if pool is None:
        raise BadRequest(["subscriptionId: The subscription's plan has no active credit-pool strategy for its "
                          "agent, so it has no credit pool."])
    return pool


# The advisory-lock namespace of a subscription's credit-pool syncs (the second key is the subscription's hash).
_SYNC_LOCKS = 7303


def pool_sync_lock(subscription_id) -> None:
    """Wait for, then hold to the end of the transaction, the subscription's pool sync. A caller that writes the
    subscription's grants before syncing takes it first, as every sync does before locking a grant: one order,
    no deadlock."""
    advisory_xact_lock(_SYNC_LOCKS, str(subscription_id))


def _stored_period_grant(subscription: Subscription, running: Pool, now: datetime) -> CreditGrant:
    """The grant of the stored period, made and kept at the pool's share of it (`running`: the period's pool)."""
    start, end = subscription.current_period_start, subscription.current_period_end
    units = pool_units(subscription, start, end, running.size)  # a plan change's split period grants a share
    CreditGrant.objects.bulk_create([CreditGrant(book_id=subscription.book_id, subscription=subscription,
                                                 kind=PERIOD, units=units, period_start=start, period_end=end)],
                                    ignore_conflicts=True)
    grant = (owned(CreditGrant, subscription.book_id).select_for_update()
             .get(subscription=subscription, kind=PERIOD, period_start=start))
    if (grant.period_end, grant.units, grant.settled_at) != (end, units, None) and (now < end or not grant.settled_at):
        # The stored period's grant follows the pool's size, and its end when an end moved it (an endDate, `ended`,
        # a plan change: also once that end has passed, so the period settles at it); a period settled before its
        # end grew back is open again.
        grant.period_end, grant.units = end, units
        grant.consumed_units = grant.topup_units_drawn = grant.settled_at = None
        grant.save(update_fields=["period_end", "units", "consumed_units", "topup_units_drawn", "settled_at",
                                  "updated_at"])
    return grant


@transaction.atomic
def credit_pool_sync(*, subscription: Subscription, pool: Pool | None, now: datetime,
                     recorded_by: dict | None = None, settled: list | None = None) -> CreditGrant | None:
    """Create the grant of the stored current period (refreshed to the pool's size while the period runs) and
    settle every ended period, skipped ones included (each first settlement added to `settled`, when given). `pool`:
    the pool the plan sells today, whole (None: it sells none); a period
    an invoice captured is measured against that invoice's pool (`period_pool`). Syncs of one subscription run one
    at a time, to the end of their transactions (an advisory lock of the subscription, not its row, which the
    period rollover needs): a top-up made while its period ran and committed after the rollover is seen by the
    settlement of that period, which waits for it. `recorded_by`: as `pending_settlements` takes it. Idempotent."""
    start, end = subscription.current_period_start, subscription.current_period_end
    if start is None or end is None:
        return None
    pool_sync_lock(subscription.pk)
    running = period_pool(timeline_of(subscription), start, pool)
    # None: the plan sells no pool now and the stored period's invoice captured none (no grant for it).
    grant = _stored_period_grant(subscription, running, now) if running is not None else None
    skipped = []
    for period in pending_settlements(subscription, pool, now, recorded_by):
        # Settled again by the verifier, a period keeps the instant its first settlement read the ledger at: the
        # next verification compares it with the same events.
        values = {"units": period.pool_size, "consumed_units": period.consumed,
                  "topup_units_drawn": period.topup_drawn, "settled_at": (recorded_by or {}).get(period.start, now)}
        if period.grant_id is None:
            skipped.append(CreditGrant(book_id=subscription.book_id, subscription=subscription, kind=PERIOD,
                                       period_start=period.start, period_end=period.end, **values))
        else:
            CreditGrant.objects.filter(pk=period.grant_id, settled_at__isnull=True).update(**values)
        if settled is not None and recorded_by is None:
            settled.append(period)
    CreditGrant.objects.bulk_create(skipped, ignore_conflicts=True)
    return grant


# --------------------------------------------------------------------------- top-ups and the pause

def _grants_past_the_end_drop(subscription: Subscription) -> None:
    """The grants of periods from the subscription's end on (a plan change ended it there): no longer its own."""
    end = effective_end(subscription)
    if end is not None:
        period_grants(subscription).filter(period_start__gte=end).delete()


def credit_pool_settle_again(*, subscription: Subscription, since: datetime, now: datetime,
                             pool: Pool | None = None) -> None:
    """Settle again the subscription's settled periods that end after `since`, in order (each period's top-up draw
    follows from the ones before it), each counting the events recorded by the instant it was first settled at (a
    settlement is final for late usage); a period the subscription no longer runs loses its grant. For the verifier's
    repair, and for claims that moved (`credit_pools_follow_claims`). `pool`: the pool the plan sells now (read when
    not given); nothing to settle for a plan that sells none. In the caller's transaction."""
    pool_sync_lock(subscription.pk)  # before the grants' rows, as a top-up or the alert job takes them
    _grants_past_the_end_drop(subscription)
    pool = pool or pool_for(subscription)
    if pool is None:
        return
    archived = archived_spans()
    later = [grant for grant in period_grants(subscription).filter(period_end__gt=since)
             # A period of an archived month keeps its settlement: its events are no longer there to settle it.
             if not overlaps_archive(grant.period_start, grant.period_end, archived)]
    recorded_by = {grant.period_start: grant.settled_at for grant in later if grant.settled_at}
    if not recorded_by:
        return
    owned(CreditGrant, subscription.book_id).filter(pk__in=[grant.pk for grant in later]).update(settled_at=None)
    credit_pool_sync(subscription=subscription, pool=pool, now=now, recorded_by=recorded_by)
    # Balances read from the shared cache until then would show the settlements before (for up to 30 seconds).
    _balances_refreshed_on_commit(subscription.book_id)


def _stored_period_grant_fit(subscription: Subscription, now: datetime) -> None:
    """The grant of the subscription's stored period, not settled yet, ends where that period ends now and grants
    its share of the pool: an end that cut the period (`ended`, an endDate, a plan change) makes it a period that
    ends there, settled by the next alert job (which waits for the batches still committing) rather than at the
    cycle's end weeks later. Nothing is settled here."""
    start = subscription.current_period_start
    if start is None or subscription.current_period_end is None or not period_grants(subscription).filter(
            period_start=start, settled_at__isnull=True).exists():
        return
    running = period_pool(timeline_of(subscription), start, pool_for(subscription))
    if running is not None:
        _stored_period_grant(subscription, running, now)


def credit_pools_follow_claims(*, book, customer_id, agent_id, since: datetime | None, now: datetime) -> None:
    """Which subscription bills an event moved from `since` on for the customer's usage through the agent (a plan
    change, a backdated subscription; None: anywhere in their lives, a plan or its strategies changed): every pool
    of theirs settles again what it settled from then on, so a settled period counts the events it now bills, as
    its invoice does, and draws on top-ups by that; a subscription that ended loses the grants of its periods past
    its end, settled or not. The caller holds their pool syncs (`claims_pools_lock`).

    Balances answered from the shared cache before such a write (a plan change, an end, a strategy's new pool, an
    invoice's capture) would read the pools as they were for up to 30 seconds: a new cache generation starts when
    the write commits, as for a top-up."""
    _balances_refreshed_on_commit(book.pk)
    _pools_follow_claims(book=book, customer_id=customer_id, agent_id=agent_id, since=since, now=now)


def _balances_refreshed_on_commit(book_id) -> None:
    """Balances read from the shared cache start anew once the caller's writes commit (`balance_cache_refresh`)."""
    transaction.on_commit(partial(balance_cache_refresh, book_id=book_id), robust=True)


def _pools_follow_claims(*, book, customer_id, agent_id, since: datetime | None, now: datetime) -> None:
    subscriptions = (owned(Subscription, book).filter(customer_id=customer_id, agent_id=agent_id)
                     .select_related("plan").order_by("pk"))
    for subscription in subscriptions:
        _stored_period_grant_fit(subscription, now)
        grants, end = period_grants(subscription), effective_end(subscription)
        start = since if since is not None else subscription.start_date
        if grants.filter(settled_at__isnull=False, period_end__gt=start).exists() or (
                end is not None and grants.filter(period_start__gte=end).exists()):
            credit_pool_settle_again(subscription=subscription, since=start, now=now)


def claims_pools_lock(*, book, pairs: Iterable[tuple]) -> None:
    """Wait for, then hold, the pool syncs of every subscription of these (customer id, agent id) pairs, in id
    order, before any subscription row: a write that moves which subscription bills their usage settles those
    pools again (`credit_pools_follow_claims`), and a sync holding one of them references its subscription's row
    when it commits (a grant, an alert), so taking them after the row waited for a sync that waited for the row."""
    pairs = set(pairs)
    rows = (owned(Subscription, book).filter(customer_id__in={customer_id for customer_id, _ in pairs})
            .order_by("pk").values_list("pk", "customer_id", "agent_id"))
    for subscription_id, customer_id, agent_id in rows:
        if (customer_id, agent_id) in pairs:
            pool_sync_lock(subscription_id)


def customer_pools_lock(*, book, customer_id) -> list[tuple]:
    """`claims_pools_lock` for every agent of the customer's subscriptions, returning their (customer id, agent id)
    pairs: for a write that moves which subscription bills a period of the customer's usage without knowing through
    which agent (a void releases the terms its invoice captured)."""
    pairs = sorted(set(owned(Subscription, book).filter(customer_id=customer_id)
                       .values_list("customer_id", "agent_id")), key=str)
    claims_pools_lock(book=book, pairs=pairs)
    return pairs


def plan_pools_lock(*, book, plan_id) -> list[tuple]:
    """Before a plan's strategies change (which subscription bills an event follows them in every period no final
    invoice holds): the (customer id, agent id) pairs of its subscriptions whose pools have settled a period, their
    pool syncs held (`claims_pools_lock`). Hand them to `plan_pools_follow` once the strategies are written."""
    pairs = set(owned(Subscription, book).filter(plan_id=plan_id).values_list("customer_id", "agent_id"))
    if not pairs:
        return []
    settled = set(owned(CreditGrant, book).filter(
        kind=PERIOD, settled_at__isnull=False, subscription__customer_id__in={customer_id for customer_id, _ in pairs})
        .values_list("subscription__customer_id", "subscription__agent_id"))
    pooled = sorted(pairs & settled, key=str)
    claims_pools_lock(book=book, pairs=pooled)
    return pooled


def plan_pools_follow(*, book, pairs: list[tuple], now: datetime) -> None:
    """The pools of `plan_pools_lock`'s pairs settle again what the plan's new strategies moved. Called after every
    write of a plan's strategies: a running period's pool follows them too, so cached balances start anew (once)."""
    _balances_refreshed_on_commit(book.pk)
    for customer_id, agent_id in pairs:
        _pools_follow_claims(book=book, customer_id=customer_id, agent_id=agent_id, since=None, now=now)


@dataclass(frozen=True)
class TopUp:
    grant: CreditGrant
    created: bool  # False: a replay of the same idempotencyKey
    remaining_units: Decimal


def credit_topup(*, book: Book, subscription_id, units: Decimal, idempotency_key: str, note: str, created_by: str,
                 now: datetime) -> TopUp:
    """Add `units` to the subscription's pool; they never expire and are drawn after each period's own grant.

    The key is unique per book (`credit_grant_idem_uniq` referees, concurrent requests included): the same key
    with the same units and subscription replays the grant; with other units or another subscription it is
    a 409."""
    subscription = get_owned(Subscription, book, subscription_id)
    pool = _require_pool(subscription)
    # The sync below settles the periods that have ended, for good: the book's batches still committing (begun
    # before a period ended, dated in it) are in the ledger before it reads, as for the alert job that settles them
    # otherwise (`credit_pool_alerts_evaluate`). A top-up in a running period settles nothing and waits for nothing.
    if needs_settling(book=book, subscription_id=subscription.pk, now=now):
        batches_in_flight_wait(book.pk)
    with transaction.atomic():
        settled = []
        credit_pool_sync(subscription=subscription, pool=pool, now=now, settled=settled)
        # Periods it settled had their last part judged by no alert run yet (the alert job settles them otherwise).
        _stages_alert(book=book, balances=_late_balances(subscription, settled, pool, now), now=now)
        try:
            with transaction.atomic():
                grant = CreditGrant.objects.create(
                    book=book, subscription=subscription, kind=TOPUP, units=units, granted_at=now,
                    idempotency_key=idempotency_key, note=note, created_by=created_by)
            created = True
        except IntegrityError:
            grant = owned(CreditGrant, book).get(kind=TOPUP, idempotency_key=idempotency_key)
            if grant.subscription_id != subscription.pk or grant.units != units:
                raise Conflict(f"idempotencyKey was already used for a top-up of {decimal_text(grant.units)} units "
                               f"on subscription {grant.subscription_id}; use a new key for a different top-up.")
            created = False
    if created:
        balance_cache_refresh(book_id=book.pk)
    remaining = retry_while_reconnecting(
        lambda: credit_balance_get(book=book, subscription_id=subscription.pk, now=now).remaining_units)
    return TopUp(grant, created, remaining)


def credit_alerts_pause(*, book: Book, subscription_id, paused: bool, actor: str) -> Subscription:
    """Set (not toggle) whether the subscription's pool alert emails are silenced; the countdown keeps
    counting. A change is logged on the subscription's changelog."""
    with transaction.atomic():
        subscription = get_owned(Subscription, book, subscription_id,
                                 queryset=owned(Subscription, book).select_for_update())
        _require_pool(subscription)
        if subscription.pool_alerts_paused == paused:
            return subscription
        subscription.pool_alerts_paused = paused
        subscription.save(update_fields=["pool_alerts_paused", "updated_at"])
        changelog_add(subscription=subscription, kind=Kind.UPDATE, actor=actor,
                      summary=f"Credit-pool alert emails {'paused' if paused else 'resumed'}",
                      changes={"alertsPaused": {"before": not paused, "after": paused}})
    balance_cache_refresh(book_id=book.pk)
    return subscription


# --------------------------------------------------------------------------- alerts

def stages_passed(*, remaining: Decimal, pool_size: Decimal) -> list[int]:
    """Stages the pool has used up: 50, 80 and 95 percent of the pool, and empty (remaining <= 0). Usage counts
    against the pool plus top-ups: a top-up pushes the stages back."""
    used = SUMS.subtract(pool_size, remaining)  # exact: a pool size may have 356 digits, a remainder 649
    return [stage for stage in Stage.values if SUMS.multiply(used, HUNDRED) >= SUMS.multiply(pool_size, stage)]


def _alert_email(*, alert: CreditPoolAlert, balance: CreditBalance, organization) -> None:
    subscription, pool = balance.subscription, balance.pool
    state = "is empty" if alert.stage == Stage.EMPTY else f"is {alert.stage}% used"
    send_templated(
        template="billing/email/credit_pool_alert", to=alert.recipients,
        subject=f"{organization.display_name}: credit pool of {subscription.name} "
                f"({subscription.customer.name}) {state}",
        context={"state": state, "subscription": subscription.name, "customer": subscription.customer.name,
                 "subscription_id": subscription.pk,
                 "plan": subscription.plan.name, "pool": display.quantity(pool.size),
                 "consumed": display.quantity(balance.consumed_units),
                 "remaining": display.quantity(abs(balance.remaining_units)),
                 "overdrawn": balance.remaining_units < 0, "percent": display.percent(balance.remaining_percent),
                 "overage_rate": display.price(pool.overage_rate) if pool.overage_rate is not None else None,
                 "period_start": balance.period_start,
                 "period_end": balance.period_end, "organization": organization.display_name,
                 "reason": "the billing email" if organization.billing_email else "an owner or finance member"})


def _evaluate_one(*, book: Book, subscription: Subscription, pool: Pool, now: datetime) -> int:
    """Record the stages each period newly passed, email the highest of each unless alerts are paused; how many
    emails. The periods are the running one and those this evaluation settles: the last part of a period that ended
    before an evaluation saw it (its last seconds, or a worker or broker outage) is judged once, with what the
    period closed with."""
    with transaction.atomic():
        settled = []
        credit_pool_sync(subscription=subscription, pool=pool, now=now, settled=settled)  # one sync at a time
        balances = _late_balances(subscription, settled, pool, now)
        balance = credit_balance_get(book=book, subscription_id=subscription.pk, now=now)
        if not balance.no_active_period:
            balances.append(balance)
        return _stages_alert(book=book, balances=balances, now=now)


# A settled period is judged for alerts this long after its end at most: a worker or broker outage of days still
# alerts; a period settled only now for another reason (a subscription entered afterwards for an earlier contract,
# ended long ago) says nothing new to anyone.
LATE_ALERTS_WITHIN = timedelta(days=7)


def _late_balances(subscription: Subscription, settled: list, pool: Pool, now: datetime) -> list[CreditBalance]:
    """What the periods a sync just settled closed with, of those whose stages are judged now: ended within
    LATE_ALERTS_WITHIN, after the subscription was entered (a period over before it existed was judged by no one and
    is not news), with a pool to use up (a share of 0 units, the old side of a plan change on its period's first day,
    passes no stage)."""
    return [settled_balance(subscription, period, pool) for period in settled
            if now - period.end <= LATE_ALERTS_WITHIN and period.end > subscription.created_at
            and period.pool.size > 0]


def _stages_alert(*, book: Book, balances: list[CreditBalance], now: datetime) -> int:
    """Record and report the stages each balance's period newly passed; the emails sent after the commit."""
    emailed = [(alert, balance) for balance in balances
               if (alert := _stages_record(book=book, balance=balance, now=now)) is not None]
    for alert, balance in emailed:
        # robust: a mail server failure is logged and does not stop the other alerts; the record stays.
        transaction.on_commit(partial(_alert_email, alert=alert, balance=balance, organization=book.organization),
                              robust=True)
    return len(emailed)


def _stages_record(*, book: Book, balance: CreditBalance, now: datetime) -> CreditPoolAlert | None:
    """Record the stages the balance's period newly passed and report them (a webhook, paused or not); the alert
    to email (the highest stage newly passed), None when there is none or alerts are paused."""
    recorded = set(owned(CreditPoolAlert, book).filter(subscription=balance.subscription,
                                                        period_start=balance.period_start)
                   .values_list("stage", flat=True))
    new = [stage for stage in stages_passed(remaining=balance.remaining_units, pool_size=balance.pool.size)
           if stage not in recorded]
    if not new:
        return None
    paused = balance.subscription.pool_alerts_paused
    recipients = [] if paused else billing_recipients(book.organization)
    emailed = None
    passed = []
    for stage in new:
        # Spec §6: only the highest newly passed stage is emailed; lower ones are recorded as passed with it.
        outcome = Outcome.PAUSED if paused else Outcome.EMAILED if stage == max(new) else Outcome.SUPERSEDED
        try:
            with transaction.atomic():
                alert = CreditPoolAlert.objects.create(
                    book=book, subscription=balance.subscription, period_start=balance.period_start,
                    period_end=balance.period_end, stage=stage, outcome=outcome,
                    used_percent=HUNDRED - balance.remaining_percent, remaining_units=balance.remaining_units,
                    recipients=recipients if outcome == Outcome.EMAILED else [])
        except IntegrityError:
            continue
        passed.append(stage)
        if outcome == Outcome.EMAILED:
            emailed = alert
    if passed:
        # Webhooks report every crossing, alerts paused or not (pausing stops the emails).
        credit_pool_threshold_crossed(balance, stage=max(passed), passed=passed, now=now)
    return emailed


def credit_pool_alerts_evaluate(*, book: Book, now: datetime, subscription_ids=None) -> int:
    """Settle and evaluate the pools of the book's subscriptions in their current period (all of them, or the
    ones listed); returns how many alert emails were sent. Safe to run twice and concurrently.

    One read computes every balance; only pools with a grant to open, a period to settle or a stage newly
    passed are then locked and written, so a quiet evaluation costs three queries whatever the book holds."""
    # A pool with no period running is still settled when one of its periods has ended unsettled: an ended
    # subscription's last period, whose settlement makes its figures final as a running pool's ended periods are.
    balances = [balance for balance in credit_balance_list(book=book, now=now, subscription_ids=subscription_ids)
                if not balance.no_active_period or balance.needs_settling]
    if any(balance.needs_settling for balance in balances):
        # A settlement is final: batches of the book still committing (begun before the period ended, dated in it)
        # are in the ledger before it reads (as for the end-of-period invoices, billing/services/invoices.py).
        batches_in_flight_wait(book.pk)
    recorded = defaultdict(set)
    for subscription_id, period_start, stage in owned(CreditPoolAlert, book).filter(
            subscription_id__in=[balance.subscription.pk for balance in balances],
            period_start__in={balance.period_start for balance in balances},
    ).values_list("subscription_id", "period_start", "stage"):
        recorded[subscription_id, period_start].add(stage)
    sent = 0
    for balance in balances:
        stages = stages_passed(remaining=balance.remaining_units, pool_size=balance.pool.size)
        new_stages = set(stages) - recorded[balance.subscription.pk, balance.period_start]
        if new_stages or balance.implicit_full_pool or balance.needs_settling:
            sent += _evaluate_one(book=book, subscription=balance.subscription, pool=balance.plan_pool, now=now)
    return sent


def _settle_without_a_balance(*, book: Book, now: datetime) -> None:
    """Settle the ended periods an evaluation left unsettled: those of subscriptions that have no balance row now
    (their plan no longer sells a pool; a period whose invoice captured one is settled against it, `period_pool`).
    No alert is judged for them."""
    waiting = set(owned(CreditGrant, book).filter(kind=PERIOD, settled_at__isnull=True, period_end__lte=now)
                  .values_list("subscription_id", flat=True))
    if not waiting:
        return
    batches_in_flight_wait(book.pk)  # as for every first settlement
    for subscription in owned(Subscription, book).filter(pk__in=waiting).order_by("pk"):
        credit_pool_sync(subscription=subscription, pool=pool_for(subscription), now=now)


def credit_pool_alerts_evaluate_all(*, now: datetime) -> str:
    """Scheduled job (after the period rollover): settle ended periods (an ended subscription's last one too) and
    send the pool alerts due, every book."""
    running = (Subscription.objects.filter(current_period_start__lte=now, current_period_end__gt=now,
                                           plan__strategies__pricing_model="credit_pool")
               .values_list("book_id", flat=True).distinct())
    # and the books with an ended period not settled yet (an ended subscription's last one runs no more)
    unsettled = (CreditGrant.objects.filter(kind=PERIOD, settled_at__isnull=True, period_end__lte=now)
                 .values_list("book_id", flat=True).distinct())
    # and those whose stored period ended before its grant says (a grant written before an end moved it)
    cut_short = (CreditGrant.objects.filter(kind=PERIOD, settled_at__isnull=True,
                                            subscription__current_period_start=F("period_start"),
                                            subscription__current_period_end__lte=now)
                 .values_list("book_id", flat=True).distinct())
    unsettled = set(unsettled)
    book_ids = {*running, *unsettled, *cut_short}
    sent = 0
    failures = BookFailures("credit-pool-alerts")
    for book in Book.objects.select_related("organization").filter(id__in=book_ids).order_by("pk"):
        with failures.isolated(book.pk):
            sent += credit_pool_alerts_evaluate(book=book, now=now)
            if book.pk in unsettled:
                _settle_without_a_balance(book=book, now=now)
    return failures.finish(f"{sent} sent")
