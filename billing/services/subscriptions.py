"""Subscriptions: creation with the first billing period, updates recorded in the changelog, invoice-date
adjustments, and the scheduled job that moves statuses and rolls the stored billing period forward."""
from collections import Counter, defaultdict
from datetime import date, datetime

from django.db import transaction
from django.db.models import Q

from billing.events import subscription_event
from billing.models import BillingCycle, PlanAgent, PricingPlan, Subscription, SubscriptionStatus
from billing.pricing.periods import Period, is_valid_timezone, local_midnight, period_as_of
from billing.pricing.terms import day_instant, effective_end, period_end_grown_back, period_in_force, schedule_of
from billing.services.changelog import SYSTEM_ACTOR, Kind, changelog_add, diff, json_value
from billing.services.credit_pools import claims_pools_lock, credit_pools_follow_claims
from billing.services.invoices import invoices_fit_to_end
from core.database import retried_on_deadlock
from core.errors import BadRequest, Conflict, NotFound, Unprocessable
from core.jobs import BookFailures
from core.scoping import get_owned, owned
from webhooks.models import EventType
from customers.models import Agent, Customer

Status = SubscriptionStatus
LIVE_STATUSES = (Status.UPCOMING, Status.ACTIVE)

# camelCase field -> attribute, for changelog snapshots (values as the API renders them).
SNAPSHOT_FIELDS = {
    "name": "name", "planId": "plan_id", "agentId": "agent_id", "customerId": "customer_id",
    "startDate": "start_date", "status": "status", "billingCycle": "billing_cycle", "billingModel": "billing_model",
    "netTerms": "net_terms", "endDate": "end_date", "isForever": "is_forever",
    "subscriptionDetails": "subscription_details", "seatsCount": "seats_count", "customCycleDays": "custom_cycle_days",
    "proratedAmount": "prorated_amount", "timezone": "timezone", "billingDay": "billing_day",
    "invoiceMemo": "invoice_memo", "metadata": "metadata", "currentPeriodStart": "current_period_start",
    "currentPeriodEnd": "current_period_end",
}
CREATED_FIELDS = ("planId", "agentId", "customerId", "startDate", "endDate", "status", "billingCycle",
                  "currentPeriodStart", "currentPeriodEnd")
KIND_OF_FIELD = {
    "planId": Kind.PLAN_CHANGE, "agentId": Kind.PLAN_CHANGE, "status": Kind.STATUS_TRANSITION,
    "endDate": Kind.DATE_ADJUSTMENT, "isForever": Kind.DATE_ADJUSTMENT, "billingDay": Kind.DATE_ADJUSTMENT,
    "timezone": Kind.DATE_ADJUSTMENT, "currentPeriodStart": Kind.DATE_ADJUSTMENT,
    "currentPeriodEnd": Kind.DATE_ADJUSTMENT,
}
KIND_ORDER = (Kind.PLAN_CHANGE, Kind.STATUS_TRANSITION, Kind.DATE_ADJUSTMENT, Kind.UPDATE)
PLAIN_FIELDS = ("name", "billing_model", "net_terms", "subscription_details", "seats_count", "prorated_amount",
                "invoice_memo", "metadata")
SCHEDULE_FIELDS = ("end_date", "is_forever", "billing_day", "timezone")


def snapshot(subscription: Subscription) -> dict:
    return {name: json_value(getattr(subscription, attribute)) for name, attribute in SNAPSHOT_FIELDS.items()}


def _local_instant(value: date | datetime | None, timezone: str) -> datetime | None:
    """A bare date means local midnight in the subscription's time zone; a timestamp is taken as given."""
    if value is None or isinstance(value, datetime):
        return value
    return local_midnight(value, timezone)


def _set_period(subscription: Subscription, period: Period | None) -> None:
    subscription.current_period_start = period.start if period else None
    subscription.current_period_end = period.end if period else None


def _customer_locked(book, customer_id) -> Customer:
    """The customer row, locked: overlap checks for one customer run one at a time. Deleted customers are 404."""
    live = owned(Customer, book).filter(deleted_at__isnull=True).select_for_update()
    return get_owned(Customer, book, customer_id, queryset=live)


def _agent_for_customer(book, agent_id) -> Agent:
    """404 for an unknown agent; 422 for an agent of another organization than the customer (spec section 7).
    Only that existence check looks outside the caller's book; nothing of the other record is revealed."""
    agent = owned(Agent, book).filter(pk=agent_id).first()
    if agent is not None:
        return agent
    if Agent.objects.filter(pk=agent_id).exists():
        raise Unprocessable(["agentId: The agent belongs to another organization (or environment) than the customer."])
    raise NotFound("Agent not found")


def _require_link(book, plan: PricingPlan, agent: Agent) -> None:
    """The agent must be linked to the plan (400, contract.md). The link row is locked against an unlink."""
    if owned(PlanAgent, book).select_for_update().filter(plan=plan, agent=agent).first() is None:
        raise BadRequest(["agentId: The agent is not linked to this plan; link it with "
                          "POST /v1/pricing-plans/{planId}/agents or use one of the plan's agents."])


def _schedule_errors(subscription: Subscription) -> list[str]:
    errors = []
    if subscription.end_date is not None and subscription.end_date <= subscription.start_date:
        errors.append("endDate: Must be after startDate.")
    custom = subscription.billing_cycle == BillingCycle.CUSTOM
    if custom and not subscription.custom_cycle_days:
        errors.append("customCycleDays: Required when billingCycle is custom.")
    if not custom and subscription.custom_cycle_days:
        errors.append("customCycleDays: Only used with billingCycle custom.")
    if custom and subscription.billing_day:
        errors.append("billingDay: Not used with billingCycle custom: its periods run every customCycleDays days "
                      "from startDate.")
    return errors


def _refuse_overlap(book, subscription: Subscription, *, ended_too: bool = False) -> None:
    """One live subscription per customer, plan and agent at a time: another upcoming or active one whose
    [startDate, endDate) overlaps is a 409 (ended subscriptions never block). `ended_too`: check an ended one as
    well (one created ended, whose life was never checked)."""
    if subscription.status == Status.ENDED and not ended_too:
        return
    others = owned(Subscription, book).filter(
        customer_id=subscription.customer_id, plan_id=subscription.plan_id, agent_id=subscription.agent_id,
        status__in=LIVE_STATUSES,
    ).exclude(pk=subscription.pk).filter(
        Q(is_forever=True) | Q(end_date__isnull=True) | Q(end_date__gt=subscription.start_date))
    end = effective_end(subscription)
    if end is not None:
        others = others.filter(start_date__lt=end)
    clash = others.order_by("start_date").first()
    if clash is not None:
        raise Conflict(f"The customer already has subscription {clash.id} ('{clash.name}', {clash.status}) on this "
                       "plan and agent for an overlapping period; end it or start this one after it ends.")


@transaction.atomic
def subscription_create(*, book, now: datetime, actor: str, customer_id, plan_id, agent_id, start_date,
                        end_date=None, timezone: str | None = None, status: str | None = None,
                        **fields) -> Subscription:
    """A subscription of a customer to a plan for one of the plan's agents.

    Without `status` it is upcoming for a future startDate and active otherwise (contract.md); an active one
    stores the billing period in force now. `timezone` defaults to the customer's."""
    customer = _customer_locked(book, customer_id)
    plan = get_owned(PricingPlan, book, plan_id)
    agent = _agent_for_customer(book, agent_id)
    if customer.is_internal:  # a developer's own coding-agent usage is cost, never billed (contract.md)
        raise BadRequest(["customerId: Internal coding-agent customers (developers) are never billed; a subscription "
                          "needs a customer the book bills (a customer marked internal by mistake is unmarked on its "
                          "console page)."])
    _require_link(book, plan, agent)
    if not plan.is_active:
        raise Unprocessable(["planId: The plan is inactive; activate it or choose another plan."])
    timezone = timezone or (customer.timezone if is_valid_timezone(customer.timezone) else "UTC")
    start = _local_instant(start_date, timezone)
    subscription = Subscription(book=book, customer=customer, plan=plan, agent=agent, start_date=start,
                                end_date=_local_instant(end_date, timezone), timezone=timezone,
                                status=status or (Status.UPCOMING if start > now else Status.ACTIVE), **fields)
    errors = _schedule_errors(subscription)
    if errors:
        raise Unprocessable(errors)
    if subscription.status != Status.UPCOMING:
        _set_period(subscription, period_in_force(subscription, now))
    if subscription.status == Status.ENDED:
        # Created ended (an earlier contract entered afterwards): its life is what an operator's end gives it, and
        # that life bills usage, so it must not overlap another one on the plan either.
        _end_now(subscription, now=now)
        _refuse_overlap(book, subscription, ended_too=True)
    else:
        _refuse_overlap(book, subscription)
    subscription.save()
    created = snapshot(subscription)
    changelog_add(subscription=subscription, kind=Kind.CREATED, actor=actor,
                  summary=f"Subscription created ({subscription.status}) on plan '{plan.name}' "
                          f"for agent '{agent.name}'",
                  changes={field: {"before": None, "after": created[field]} for field in CREATED_FIELDS
                           if created[field] is not None})
    subscription_event(subscription, EventType.SUBSCRIPTION_CREATED, now=now)
    if subscription.status == Status.ENDED:  # no job will move it to ended: a receiver learns it ended here
        subscription_event(subscription, EventType.SUBSCRIPTION_ENDED, now=now)
    if start < now:  # started earlier than another subscription of the customer's usage, it bills that usage now
        credit_pools_follow_claims(book=book, customer_id=customer.pk, agent_id=agent.pk, since=start, now=now)
    return subscription


def _refuse_end_move(subscription: Subscription, field: str) -> None:
    """A subscription that a plan change ends keeps its end where the next one starts (422): the change is
    replaced or withdrawn through change-plan instead, so the two never overlap nor leave a gap."""
    if subscription.next_subscription_id is not None:
        raise Unprocessable([f"{field}: The subscription ends at {json_value(subscription.end_date)} by a plan change "
                             f"to subscription {subscription.next_subscription_id}; replace it (POST) or withdraw "
                             "it (DELETE) with /v1/subscriptions/{id}/change-plan instead."])


def _change_status(subscription: Subscription, status: str, *, now: datetime) -> None:
    """Operator status moves: upcoming -> active (stores the period in force), upcoming or active -> ended
    (an active one ends now unless it already ends earlier). Ended is final; started is never upcoming again."""
    if subscription.status == Status.ENDED:
        raise Unprocessable(["status: An ended subscription stays ended; create a new one."])
    if status == Status.UPCOMING:
        raise Unprocessable(["status: A started subscription cannot become upcoming again."])
    if status == Status.ENDED:
        _refuse_end_move(subscription, "status")
    subscription.status = status
    if status == Status.ACTIVE and subscription.current_period_start is None:
        _set_period(subscription, period_in_force(subscription, now))
    if status == Status.ENDED:
        _end_now(subscription, now=now)


def _end_now(subscription: Subscription, *, now: datetime) -> None:
    """The life of a subscription made `ended`: it ends now unless it already ends earlier, and one that has not
    started gets a life of no instant (its startDate), billing nothing. Left open, its life would run on, and as
    the earliest-started subscription of the customer and agent it would take their usage from the one that runs."""
    end = effective_end(subscription)
    if subscription.start_date >= now:
        subscription.end_date, subscription.is_forever = subscription.start_date, False
        _set_period(subscription, None)
    elif end is None or end > now:
        subscription.end_date, subscription.is_forever = now, False
        _fit_period_to_end(subscription, end)


def _fit_period_to_end(subscription: Subscription, previous_end: datetime | None) -> None:
    """Keep the stored current period inside the subscription's life after its end moved: cut it at an earlier
    end; a period the previous end had cut grows back to its cycle's end (or the new, later end)."""
    if subscription.current_period_start is None:
        return
    end = effective_end(subscription)
    if end is not None and subscription.current_period_end > end:
        subscription.current_period_end = end
    elif (previous_end is not None and subscription.current_period_end == previous_end
          and (end is None or end > previous_end)):
        subscription.current_period_end = max(previous_end,
                                              period_end_grown_back(subscription, subscription.current_period_start))


def _summary(kind: str, fields: dict, *, names: dict) -> str:
    listed = ", ".join(fields)
    if kind == Kind.PLAN_CHANGE:
        moves = [f"{what} '{names[what][0]}' -> '{names[what][1]}'" for what in ("plan", "agent")
                 if names[what][0] != names[what][1]]
        return "Changed " + ("; ".join(moves) or listed)  # names may repeat across plans or agents
    if kind == Kind.STATUS_TRANSITION:
        return f"Status {fields['status']['before']} -> {fields['status']['after']}"
    if kind == Kind.DATE_ADJUSTMENT:
        text = f"Billing dates adjusted: {listed}"
        if {"billingDay", "timezone"} & set(fields) and names.get("next_period_start"):
            text += f"; new period boundaries apply from {names['next_period_start']}"
        return text
    return f"Updated {listed}"


def _log_changes(subscription: Subscription, before: dict, after: dict, *, actor: str, names: dict) -> None:
    grouped = defaultdict(dict)
    for field, change in diff(before, after).items():
        grouped[KIND_OF_FIELD.get(field, Kind.UPDATE)][field] = change
    for kind in KIND_ORDER:
        if grouped[kind]:
            changelog_add(subscription=subscription, kind=kind, changes=grouped[kind], actor=actor,
                          summary=_summary(kind, grouped[kind], names=names))


def _customer_locked_quietly(book, customer_id) -> None:
    """Lock the customer row (deleted or not) before the subscription row, the order every writer uses."""
    list(owned(Customer, book).select_for_update().filter(pk=customer_id).values_list("pk", flat=True))


def _rules_change_from_next_period(subscription: Subscription) -> None:
    """A new billingDay or timezone takes effect at the end of the current period; the periods before keep the
    rules they were billed on (`earlier_period_rules`). A second change within the same period replaces the
    first, which never took effect."""
    until = subscription.current_period_end
    if subscription.period_rules_since != until:
        since = subscription.period_rules_since
        subscription.earlier_period_rules = [*subscription.earlier_period_rules, {
            "until": until.isoformat(), "billingDay": subscription.billing_day, "timezone": subscription.timezone,
            "since": since.isoformat() if since else None}]
    subscription.period_rules_since = until


def _change_schedule(subscription: Subscription, changes: dict) -> None:
    """endDate, isForever, billingDay, timezone. Values equal to the stored ones are no change (a client may
    send the whole record back); an ended subscription's dates are final."""
    timezone = changes.get("timezone", subscription.timezone)
    wanted = {field: changes[field] for field in ("is_forever", "billing_day", "timezone") if field in changes}
    if "end_date" in changes:
        # A bare date ends the life at local midnight in the timezone of the period it closes (a timezone change
        # still pending leaves this period's days in the old one); with a new timezone sent beside it, in that one.
        end_date = changes["end_date"]
        wanted["end_date"] = (_local_instant(end_date, timezone) if end_date is None or timezone != subscription.timezone
                              else day_instant(subscription, end_date, ends_window=True))
    wanted = {field: value for field, value in wanted.items() if getattr(subscription, field) != value}
    if not wanted:
        return
    if subscription.status == Status.ENDED:
        raise Unprocessable(["The subscription has ended; its dates no longer change."])
    if {"end_date", "is_forever"} & set(wanted):
        _refuse_end_move(subscription, "endDate")
    previous_end = effective_end(subscription)
    if {"billing_day", "timezone"} & set(wanted) and subscription.current_period_end is not None:
        _rules_change_from_next_period(subscription)
    for field, value in wanted.items():
        setattr(subscription, field, value)
    errors = _schedule_errors(subscription)
    end = effective_end(subscription)
    if end is not None and subscription.current_period_start is not None and end <= subscription.current_period_start:
        errors.append(f"endDate: Must be after the current billing period's start "
                      f"({json_value(subscription.current_period_start)}); earlier periods may be invoiced already.")
    if errors:
        raise Unprocessable(errors)
    _fit_period_to_end(subscription, previous_end)


@retried_on_deadlock
@transaction.atomic
def subscription_update(*, book, subscription_id, now: datetime, actor: str, **changes) -> Subscription:
    """Change a subscription; each kind of change becomes one changelog entry.

    startDate, the current period, the billing cycle and the customer are refused at the edge. A new plan or
    agent applies to every period not yet invoiced (the agent must be linked to the plan). billingDay and
    timezone take effect from the next period; an endDate is cut into the current period when earlier."""
    subscription = get_owned(Subscription, book, subscription_id)
    _customer_locked_quietly(book, subscription.customer_id)
    # A new plan or agent moves which subscription bills the customer's usage through the old agent and the new one;
    # a new end (endDate, isForever, or `ended` ending it now) moves it through its agent from the earlier end on.
    claims_moved = {(subscription.customer_id, subscription.agent_id)}
    if "plan_id" in changes or "agent_id" in changes:
        claims_moved.add((subscription.customer_id, changes.get("agent_id", subscription.agent_id)))
    if {"plan_id", "agent_id", "end_date", "is_forever", "status"} & set(changes):
        claims_pools_lock(book=book, pairs=claims_moved)
    subscription = (owned(Subscription, book).select_for_update(of=("self",)).select_related("plan", "agent")
                    .get(pk=subscription.pk))
    before = snapshot(subscription)
    names = {"plan": [subscription.plan.name] * 2, "agent": [subscription.agent.name] * 2,
             "next_period_start": json_value(subscription.current_period_end)}
    if "plan_id" in changes or "agent_id" in changes:
        plan = get_owned(PricingPlan, book, changes.get("plan_id", subscription.plan_id))
        agent = _agent_for_customer(book, changes.get("agent_id", subscription.agent_id))
        _require_link(book, plan, agent)
        if plan.pk != subscription.plan_id and not plan.is_active:
            raise Unprocessable(["planId: The plan is inactive; activate it or choose another plan."])
        subscription.plan, subscription.agent = plan, agent
        names["plan"][1], names["agent"][1] = plan.name, agent.name
    previous_end = effective_end(subscription)
    if any(field in changes for field in SCHEDULE_FIELDS):
        _change_schedule(subscription, changes)
    if "status" in changes and changes["status"] != subscription.status:
        _change_status(subscription, changes["status"], now=now)
    end_moved = effective_end(subscription) != previous_end  # a new endDate, or `ended` ending it now
    for field in PLAIN_FIELDS:
        if field in changes:
            setattr(subscription, field, changes[field])
    _refuse_overlap(book, subscription)
    subscription.save()
    if end_moved:  # its drafts follow the new end, as after a plan change (cut, voided or grown back)
        invoices_fit_to_end(book=book, subscription=subscription, now=now, previous_end=previous_end,
                            reason=f"Subscription endDate changed to {json_value(effective_end(subscription))}")
    # Settled pool periods count the events their subscription bills now, as after a plan change: the new terms
    # apply to every period no final invoice holds; a new end gives the events past the earlier end to the next
    # subscription of the customer and agent, or takes them back.
    claims_since = None
    if before["planId"] != str(subscription.plan_id) or before["agentId"] != str(subscription.agent_id):
        claims_since = subscription.start_date
    elif end_moved:
        claims_since = min(end for end in (previous_end, effective_end(subscription)) if end is not None)
    if claims_since is not None:
        for customer_id, agent_id in sorted(claims_moved, key=str):
            credit_pools_follow_claims(book=book, customer_id=customer_id, agent_id=agent_id, since=claims_since,
                                       now=now)
    _log_changes(subscription, before, snapshot(subscription), actor=actor, names=names)
    if before["planId"] != str(subscription.plan_id):
        subscription_event(subscription, EventType.SUBSCRIPTION_PLAN_CHANGED, now=now)
    if before["status"] != Status.ENDED and subscription.status == Status.ENDED:
        subscription_event(subscription, EventType.SUBSCRIPTION_ENDED, now=now)
    return subscription


def subscription_advance(subscription: Subscription, *, now: datetime) -> list[str]:
    """Bring one (locked) subscription up to `now`: upcoming -> active at startDate with the period in force,
    the stored period rolled forward while now is past its end (never past endDate), active -> ended once
    endDate has passed (never with isForever). Each status move is a `status_transition` entry by `system`.
    Running it again changes nothing."""
    outcomes = []
    if subscription.status == Status.UPCOMING and subscription.start_date <= now:
        before = snapshot(subscription)
        subscription.status = Status.ACTIVE
        _set_period(subscription, period_in_force(subscription, now))
        changelog_add(subscription=subscription, kind=Kind.STATUS_TRANSITION, actor=SYSTEM_ACTOR,
                      summary=f"Status upcoming -> active: startDate {before['startDate']} reached",
                      changes=diff(before, snapshot(subscription)))
        outcomes.append("activated")
    if subscription.status == Status.ACTIVE:
        if subscription.current_period_end is None or now >= subscription.current_period_end:
            period = period_as_of(schedule_of(subscription, at=now), now, since=subscription.current_period_end)
            if period is not None and (period.start, period.end) != (subscription.current_period_start,
                                                                     subscription.current_period_end):
                _set_period(subscription, period)
                outcomes.append("rolled")
        end = effective_end(subscription)
        if end is not None and now >= end:
            subscription.status = Status.ENDED
            changelog_add(subscription=subscription, kind=Kind.STATUS_TRANSITION, actor=SYSTEM_ACTOR,
                          summary=f"Status active -> ended: endDate {json_value(end)} passed",
                          changes={"status": {"before": Status.ACTIVE, "after": Status.ENDED}})
            outcomes.append("ended")
    if outcomes:
        subscription.save()
    if "ended" in outcomes:
        subscription_event(subscription, EventType.SUBSCRIPTION_ENDED, now=now)
    return outcomes


def subscriptions_advance(*, now: datetime) -> str:
    """Scheduled job (every book): activate, roll and end what is due as of `now`. Idempotent."""
    due = (Subscription.objects.filter(
        Q(status=Status.UPCOMING, start_date__lte=now)
        | Q(status=Status.ACTIVE) & (Q(current_period_end__isnull=True) | Q(current_period_end__lte=now)
                                     | Q(is_forever=False, end_date__lte=now))
    ).order_by("pk").values_list("pk", "book_id"))
    counts = Counter()
    failures = BookFailures("subscriptions_advance")
    for pk, book_id in list(due):
        with failures.isolated(book_id), transaction.atomic():
            # A row another worker holds is skipped; that worker advances it.
            subscription = Subscription.objects.select_for_update(skip_locked=True).filter(pk=pk).first()
            if subscription is not None:
                counts.update(subscription_advance(subscription, now=now))
    return failures.finish(", ".join(f"{counts[what]} {what}" for what in ("activated", "rolled", "ended")))
