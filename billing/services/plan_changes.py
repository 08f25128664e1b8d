"""Plan changes (contract: "Plan changes"): a subscription ends at `effectiveAt` and a new one on another plan
starts at that instant, carrying the old one's settings; a change scheduled for later can be replaced or
withdrawn until it takes effect.

The money of the split period is the pricing engine's (`billing.pricing`): each side's fees prorated by the local
days it covers (the change day is the new side's), usage billed by the side whose life holds the event, credit
pools prorated in units and price, no one-time fee for the new plan. These functions only write the two rows, the
links between them, the changelog and the old side's draft invoices; the rules are in
docs/decisions/plans-and-subscriptions.md.
"""
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import transaction

from billing.models import (CreditGrant, Invoice, InvoiceLine, InvoiceStatus, PlanAgent, PricingPlan, Subscription,
                            SubscriptionStatus)
from billing.pricing.terms import day_instant, effective_end, period_holding, period_in_force
from billing.events import subscription_event
from billing.services.changelog import Kind, changelog_add, json_value
from billing.services.credit_pools import claims_pools_lock, credit_pools_follow_claims
from webhooks.models import EventType
from billing.services.invoices import NEVER_VOIDED, invoice_generate, invoices_fit_to_end, void_first
from billing.services.subscriptions import (_customer_locked_quietly, _fit_period_to_end, _refuse_overlap,
                                            _set_period)
from core.database import retried_on_deadlock
from core.errors import Conflict, NotFound, Unprocessable
from core.scoping import get_owned, owned

Status = SubscriptionStatus
# What the new subscription takes over from the one it replaces (contract: customer, agent, billing day,
# timezone, cycle, net terms, seats, memo and metadata; the rest of the billing settings and the remaining term
# come along so the customer's contract reads the same on the new plan).
CARRIED_FIELDS = ("customer_id", "agent_id", "billing_cycle", "billing_model", "net_terms", "subscription_details",
                  "seats_count", "custom_cycle_days", "timezone", "billing_day", "period_rules_since",
                  "earlier_period_rules", "invoice_memo", "metadata")
MICROSECOND = timedelta(microseconds=1)


def _locked(book, subscription_id) -> Subscription:
    """The subscription row, locked after its customer's (the order every subscription writer uses) and after the
    pool syncs of the customer's subscriptions of its agent: a change settles their pools again (what it moves,
    `credit_pools_follow_claims`), and a sync holding one of them references the subscription's row when it
    commits (a grant, an alert), so taking them after the row waited for a sync that waited for the row."""
    subscription = get_owned(Subscription, book, subscription_id)
    _customer_locked_quietly(book, subscription.customer_id)
    claims_pools_lock(book=book, pairs=[(subscription.customer_id, subscription.agent_id)])
    return (owned(Subscription, book).select_for_update(of=("self",)).select_related("plan", "agent")
            .get(pk=subscription.pk))


def _plan_for_agent(book, plan_id, subscription: Subscription) -> PricingPlan:
    plan = get_owned(PricingPlan, book, plan_id)
    if owned(PlanAgent, book).select_for_update().filter(plan=plan, agent_id=subscription.agent_id).first() is None:
        raise Unprocessable([f"planId: Plan '{plan.name}' is not a plan of agent '{subscription.agent.name}'; a plan "
                             "change keeps the subscription's agent, so the new plan must be linked to it."])
    if not plan.is_active:
        raise Unprocessable(["planId: The plan is inactive; activate it or choose another plan."])
    return plan


def _refuse_invoiced(book, subscription: Subscription, effective_at: datetime) -> None:
    """409 when a finalized invoice (any status but draft or void) bills the subscription at or after the
    change: its period would be split after it was issued."""
    blocking = list(owned(Invoice, book).filter(subscription=subscription, period_end__gt=effective_at)
                    .exclude(status__in=(InvoiceStatus.DRAFT, InvoiceStatus.VOID)).order_by("period_start"))
    if blocking:
        invoice = blocking[0]
        # The first instant no finalized invoice bills: a change from an earlier one is refused again by a later
        # invoice (the advice named the end of the first one, whatever came after it); none when the last of
        # them reaches the subscription's end.
        free_from, term_end = max(row.period_end for row in blocking), effective_end(subscription)
        later = (f"change the plan from {json_value(free_from)} on" if term_end is None or free_from < term_end
                 else "")
        others = (f" ({len(blocking) - 1} later finalized invoice{'s' if len(blocking) > 2 else ''} "
                  f"{', '.join(row.invoice_number for row in blocking[1:])} bill{'' if len(blocking) > 2 else 's'} "
                  f"the subscription after it too)" if len(blocking) > 1 else "")
        if invoice.status in NEVER_VOIDED:
            remedy = f"a paid invoice stays as it is{others}" + (f": {later}" if later else "")
        else:
            remedy = f"{void_first(invoice)}{others}" + (f", or {later}" if later else "")
        # A finalized invoice wholly after the change would bill, under the old plan, days the subscription no
        # longer runs: refused too, since a final invoice is never changed.
        effect = ("would split" if invoice.period_start < effective_at
                  else "would leave billing the old plan after the subscription ended")
        raise Conflict(f"Invoice {invoice.invoice_number} ({invoice.id}, {invoice.status}) already bills "
                       f"{json_value(invoice.period_start)} to {json_value(invoice.period_end)}, which the change at "
                       f"{json_value(effective_at)} {effect}; {remedy}.", code="period_invoiced")


def _scheduled_successor(book, subscription: Subscription, *, now: datetime) -> Subscription | None:
    """The subscription's pending successor (locked), None when it has none; 409 once the change took effect."""
    if subscription.next_subscription_id is None:
        return None
    successor = owned(Subscription, book).select_for_update(of=("self",)).get(pk=subscription.next_subscription_id)
    if successor.status != Status.UPCOMING or successor.start_date <= now:
        raise Conflict(f"The plan already changed at {json_value(successor.start_date)}: this subscription continues "
                       f"as {successor.id}; change that subscription's plan instead.", code="plan_already_changed")
    # A successor that scheduled a change of its own would leave that change's subscription without the one it
    # continues: the later change is withdrawn first, in the reverse of the order they were made.
    if successor.next_subscription_id is not None:
        raise Conflict(f"Subscription {successor.id}, which the scheduled change starts, has a plan change of its own "
                       f"scheduled (to subscription {successor.next_subscription_id}); withdraw that one first with "
                       f"DELETE /v1/subscriptions/{successor.id}/change-plan.", code="plan_change_chained")
    # Its invoices and top-ups are records of their own: a successor that has any is never deleted.
    if owned(Invoice, book).filter(subscription=successor).exists() or \
            owned(CreditGrant, book).filter(subscription=successor, kind=CreditGrant.Kind.TOPUP).exists():
        raise Conflict(f"Subscription {successor.id}, which the scheduled change starts, already has invoices or "
                       "top-ups, so the scheduled change can no longer be replaced or withdrawn; end that subscription "
                       "instead.", code="plan_change_invoiced")
    return successor


def _end_before_change(subscription: Subscription, successor: Subscription) -> tuple[datetime | None, bool]:
    """The endDate and isForever the subscription had before the change that scheduled `successor`, as its
    changelog recorded them (an entry lists a field only when the change moved it). The successor's own end is
    not it: a PATCH may have moved that since."""
    entry = (subscription.changes.filter(kind=Kind.PLAN_CHANGE, changes__nextSubscriptionId__after=str(successor.id))
             .order_by("-created_at", "-id").first())
    if entry is None:  # a change made before the changelog recorded it: the term the successor took over
        return successor.end_date, successor.is_forever
    changes = entry.changes
    end_date = subscription.end_date
    if "endDate" in changes:
        recorded = changes["endDate"]["before"]
        end_date = None if recorded is None else datetime.fromisoformat(recorded)
    is_forever = changes["isForever"]["before"] if "isForever" in changes else subscription.is_forever
    return end_date, is_forever


def _withdraw(subscription: Subscription, successor: Subscription, *, actor: str, reason: str,
              now: datetime) -> None:
    """Undo a scheduled change: the old subscription gets back the end it had before the change."""
    previous_end = effective_end(subscription)
    before = {"endDate": json_value(subscription.end_date), "isForever": subscription.is_forever,
              "nextSubscriptionId": str(successor.id)}
    subscription.end_date, subscription.is_forever = _end_before_change(subscription, successor)
    subscription.next_subscription = None
    _fit_period_to_end(subscription, previous_end)
    subscription.save()
    invoices_fit_to_end(book=subscription.book_id, subscription=subscription, now=now, reason=reason,
                        previous_end=previous_end)  # a draft the change had cut grows back
    changelog_add(subscription=subscription, kind=Kind.PLAN_CHANGE, actor=actor,
                  summary=f"{reason}: the change to plan '{successor.plan.name}' at "
                          f"{json_value(successor.start_date)} (subscription {successor.id}) is withdrawn",
                  changes={"endDate": {"before": before["endDate"], "after": json_value(subscription.end_date)},
                           "isForever": {"before": before["isForever"], "after": subscription.is_forever},
                           "nextSubscriptionId": {"before": before["nextSubscriptionId"], "after": None}})
    # A receiver told of the successor (`subscription.created`, `plan_changed`) learns it is gone, as it last was.
    subscription_event(successor, EventType.SUBSCRIPTION_DELETED, now=now)
    successor.delete()


def _end_at(subscription: Subscription, effective_at: datetime, *, now: datetime) -> None:
    """The old side ends at the change; its stored period is cut there (or recomputed when the change lies
    before it), and it is ended at once when the change is not in the future."""
    previous_end = effective_end(subscription)
    subscription.end_date, subscription.is_forever = effective_at, False
    if subscription.current_period_start is not None and subscription.current_period_start >= effective_at:
        _set_period(subscription, period_in_force(subscription, now))
    else:
        _fit_period_to_end(subscription, previous_end)
    if effective_at <= now:
        subscription.status = Status.ENDED


@retried_on_deadlock
@transaction.atomic
def subscription_change_plan(*, book, subscription_id, now: datetime, actor: str, plan_id, effective_at=None,
                             seats_count: int | None = None, name: str | None = None) -> Subscription:
    """Move a subscription to another plan at `effective_at` (default now); returns the new subscription.

    The old one ends at that instant (`nextSubscriptionId`), the new one starts there (`previousSubscriptionId`)
    with the old one's settings, remaining term and period grid; both changelogs record it. A change the old
    subscription already has scheduled and that has not taken effect is replaced. 422: a plan not linked to the
    subscription's agent, an ended subscription, an instant outside its life; 409: an instant in or before a
    period a finalized invoice bills. The old side's drafts are cut to the change (or voided past it)."""
    subscription = _locked(book, subscription_id)
    plan = _plan_for_agent(book, plan_id, subscription)
    # A bare date in the timezone of the period it falls in: a timezone change still pending leaves this one's days
    # in the old timezone.
    effective_at = now if effective_at is None else day_instant(subscription, effective_at)
    successor = _scheduled_successor(book, subscription, now=now)
    if successor is not None:
        _withdraw(subscription, successor, actor=actor, reason="Scheduled plan change replaced", now=now)
    if subscription.status == Status.ENDED:
        raise Unprocessable(["The subscription has ended; its plan no longer changes."])
    if effective_at <= subscription.start_date:
        raise Unprocessable([f"effectiveAt: Must be after the subscription's startDate "
                             f"({json_value(subscription.start_date)}); before it starts, change its planId with "
                             "PATCH /v1/subscriptions/{id}."])
    term_end = effective_end(subscription)
    if term_end is not None and effective_at >= term_end:
        raise Unprocessable([f"effectiveAt: Must be before the subscription's endDate ({json_value(term_end)})."])
    _refuse_invoiced(book, subscription, effective_at)

    old_snapshot = {"endDate": json_value(subscription.end_date), "isForever": subscription.is_forever,
                    "status": subscription.status}
    replacement = Subscription(
        book=book, plan=plan, name=name or subscription.name, start_date=effective_at,
        end_date=subscription.end_date if term_end is not None else None, is_forever=subscription.is_forever,
        cycle_anchor=subscription.cycle_anchor or subscription.start_date, previous_subscription=subscription,
        status=Status.UPCOMING if effective_at > now else Status.ACTIVE,
        **{field: getattr(subscription, field) for field in CARRIED_FIELDS})
    if seats_count is not None:
        replacement.seats_count = seats_count
    _end_at(subscription, effective_at, now=now)
    subscription.save()
    _refuse_overlap(book, replacement)
    if replacement.status == Status.ACTIVE:
        _set_period(replacement, period_in_force(replacement, now))
    replacement.save()
    subscription.next_subscription = replacement
    subscription.save(update_fields=["next_subscription", "updated_at"])
    invoices_fit_to_end(book=book, subscription=subscription, now=now,
                        reason=f"Plan changed to '{plan.name}' at {json_value(effective_at)}")
    # A change in the past moves the usage from its instant to the new side: the old side's settled pool periods
    # count only what it still bills (its pool's share, its draws on top-ups), and its periods past the change go.
    credit_pools_follow_claims(book=book, customer_id=subscription.customer_id, agent_id=subscription.agent_id,
                               since=effective_at, now=now)

    moved = f"plan '{subscription.plan.name}' -> '{plan.name}' at {json_value(effective_at)}"
    changelog_add(subscription=subscription, kind=Kind.PLAN_CHANGE, actor=actor,
                  summary=f"Plan change {moved}: this subscription ends there and continues as {replacement.id}",
                  changes={key: {"before": value, "after": after} for key, value, after in (
                      ("endDate", old_snapshot["endDate"], json_value(subscription.end_date)),
                      ("isForever", old_snapshot["isForever"], subscription.is_forever),
                      ("status", old_snapshot["status"], subscription.status),
                      ("nextSubscriptionId", None, str(replacement.id))) if value != after})
    changelog_add(subscription=replacement, kind=Kind.PLAN_CHANGE, actor=actor,
                  summary=f"Plan change {moved}: this subscription continues {subscription.id} "
                          f"({replacement.status})",
                  changes={"planId": {"before": str(subscription.plan_id), "after": str(plan.id)},
                           "previousSubscriptionId": {"before": None, "after": str(subscription.id)},
                           "startDate": {"before": None, "after": json_value(replacement.start_date)},
                           "seatsCount": {"before": subscription.seats_count, "after": replacement.seats_count},
                           "status": {"before": None, "after": replacement.status}})
    # Webhooks, in this transaction (the outbox): the new subscription as created and as the plan's change, and
    # the old one's end when the change ended it now (a scheduled end is reported by the job that ends it).
    subscription_event(replacement, EventType.SUBSCRIPTION_CREATED, now=now)
    subscription_event(replacement, EventType.SUBSCRIPTION_PLAN_CHANGED, now=now)
    if subscription.status == Status.ENDED:
        subscription_event(subscription, EventType.SUBSCRIPTION_ENDED, now=now)
    return replacement


@retried_on_deadlock
@transaction.atomic
def subscription_plan_change_withdraw(*, book, subscription_id, now: datetime, actor: str) -> Subscription:
    """Withdraw the subscription's scheduled plan change before it takes effect: the new subscription is deleted
    and this one runs on as before. 404 when nothing is scheduled, 409 once the change took effect."""
    subscription = _locked(book, subscription_id)
    successor = _scheduled_successor(book, subscription, now=now)
    if successor is None:
        raise NotFound("This subscription has no scheduled plan change.")
    _withdraw(subscription, successor, actor=actor, reason="Scheduled plan change withdrawn", now=now)
    return subscription


@dataclass(frozen=True)
class SidePreview:
    """What one side of a plan change bills for the period the change falls in."""

    subscription_name: str
    plan_name: str
    period_start: datetime
    period_end: datetime
    lines: tuple[tuple[str, Decimal], ...]  # (description, amount) as the invoice would show them
    total: Decimal


class _Preview(Exception):
    """Carries the preview out of the transaction it rolls back."""

    def __init__(self, sides):
        super().__init__("preview")
        self.sides = sides


def _side(book, subscription: Subscription, start: datetime, end: datetime, *, now: datetime) -> SidePreview:
    invoice, _ = invoice_generate(book=book, now=now, customer_id=subscription.customer_id,
                                  subscription_id=subscription.pk, billing_period_start=start, billing_period_end=end)
    lines = tuple(owned(InvoiceLine, book).filter(invoice=invoice).order_by("position")
                  .values_list("description", "amount"))
    return SidePreview(subscription.name, subscription.plan.name, start, end, lines, invoice.total)


def subscription_periods_preview(*, book, subscription_id, moments: list[datetime], now: datetime
                                 ) -> list[tuple[SidePreview, ...]]:
    """The invoices of the subscription's periods holding `moments` (each period once, its invoices together), as the
    subscription stands, without a change: what a plan change's preview is compared with (the period it splits, or
    the two it lies between). A change it already has scheduled is part of how it stands: from that change on the
    periods are its successor's, and a period that change cuts bills on both sides. Generated and rolled back, as
    the preview, so a draft is priced as it would be refreshed and nothing is kept."""
    try:
        with transaction.atomic():
            subscription = owned(Subscription, book).select_related("plan").get(pk=subscription_id)
            successor = (owned(Subscription, book).select_related("plan").filter(pk=subscription.next_subscription_id)
                         .first() if subscription.next_subscription_id is not None else None)
            periods, seen = [], set()
            for moment in sorted(moments):
                side = successor if successor is not None and moment >= successor.start_date else subscription
                period = period_in_force(side, moment)
                if (side.pk, period.start) in seen:
                    continue
                windows = [(side, period.start, period.end)]
                if side is subscription and successor is not None and period.end == successor.start_date:
                    rest = period_in_force(successor, successor.start_date)  # the rest of the period: the successor's
                    windows.append((successor, rest.start, rest.end))
                seen.update((side.pk, start) for side, start, _ in windows)
                periods.append(windows)
            raise _Preview([tuple(_side(book, side, start, end, now=now) for side, start, end in windows)
                            for windows in periods])
    except _Preview as preview:
        return preview.sides


def subscription_plan_change_preview(*, book, subscription_id, now: datetime, actor: str, plan_id, effective_at=None,
                                     seats_count: int | None = None, name: str | None = None
                                     ) -> tuple[SidePreview, SidePreview]:
    """The two sides' invoices for the period the change falls in (old side, new side), exactly as generating them
    after the change would give them: the change and both invoices are made and then rolled back, so the preview
    runs the same code as the change and nothing is kept. Refuses what the change refuses."""
    try:
        with transaction.atomic():
            replacement = subscription_change_plan(book=book, subscription_id=subscription_id, now=now, actor=actor,
                                                   plan_id=plan_id, effective_at=effective_at,
                                                   seats_count=seats_count, name=name)
            old = owned(Subscription, book).select_related("plan").get(pk=replacement.previous_subscription_id)
            moment = replacement.start_date
            before, after = period_holding(old, moment - MICROSECOND), period_holding(replacement, moment)
            raise _Preview((_side(book, old, before.start, before.end, now=now),
                            _side(book, replacement, after.start, after.end, now=now)))
    except _Preview as preview:
        return preview.sides
