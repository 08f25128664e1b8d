"""Work of the billing app that runs at a moment of a lower app (registered in config/hooks.py)."""
from billing.models import CreditGrant, Invoice, InvoiceStatus, Subscription, SubscriptionStatus
from billing.selectors.subscriptions import billed_customers_locked

# The invoices whose usage is still read from the ledger: a draft's lines are refreshed from the events by
# regenerating it and by the end-of-period job before it issues. Every other status has its lines stored.
REFRESHED_FROM_EVENTS = (InvoiceStatus.DRAFT,)
NAMED = 5  # invoices and subscriptions a refusal names


def _named(rows, count: int) -> str:
    names = [f"{name} ({organization})" for name, organization in rows[:NAMED]]
    return ", ".join(names) + (f" and {count - NAMED} more" if count > NAMED else "")


def refuse_detaching_a_billed_month(*, start, end) -> None:
    """customers' `ledger_month_detaching`, across every book: ValueError naming what still bills from the
    month [start, end): a draft invoice whose period overlaps it, or an active subscription whose current
    billing period does (its invoice is yet to be generated from the events), or a credit pool's period not settled
    yet (the pool-alert job settles it from the events). Detaching it would take its usage out of them without a
    word."""
    drafts = Invoice.objects.filter(status__in=REFRESHED_FROM_EVENTS, period_start__lt=end, period_end__gt=start)
    current = Subscription.objects.filter(status=SubscriptionStatus.ACTIVE, current_period_start__lt=end,
                                          current_period_end__gt=start)
    unsettled = CreditGrant.objects.filter(kind=CreditGrant.Kind.PERIOD, settled_at__isnull=True,
                                           period_start__lt=end, period_end__gt=start)
    organization = "book__organization__name"
    reasons = []
    if count := drafts.count():
        rows = list(drafts.order_by("period_start", "pk").values_list("invoice_number", organization)[:NAMED])
        reasons.append(f"{count} draft invoice(s) cover it, {_named(rows, count)}: finalize or void them first")
    if count := current.count():
        rows = list(current.order_by("current_period_start", "pk").values_list("name", organization)[:NAMED])
        reasons.append(f"the current billing period of {count} active subscription(s) covers it, "
                       f"{_named(rows, count)}: wait until those periods have ended and their invoices are final")
    if count := unsettled.count():
        rows = list(unsettled.order_by("period_start", "pk").values_list("subscription__name", organization)[:NAMED])
        reasons.append(f"{count} credit pool period(s) not settled yet cover it, of {_named(rows, count)}: run the "
                       "scheduled jobs (they settle every ended period) first")
    if reasons:
        raise ValueError(f"{start:%Y-%m} is still billed from the ledger: {'; '.join(reasons)}. Nothing was changed.")


def refuse_marking_a_billed_customer_internal(*, book, customer_id) -> None:
    """customers' `customer_marking_internal`: ValueError for a customer the book bills (it has a subscription).
    Internal usage is cost, never revenue: the mark would take its issued and paid invoices out of Billed,
    Collected, MRR and revenue after the fact, and refuse its next invoice. The customer's row is locked as
    recording's own check locks it, so a subscription created meanwhile waits for this mark or sees it."""
    if billed_customers_locked(book=book, customer_ids=[customer_id]):
        raise ValueError("This customer has a subscription: an internal customer is never billed, and marking it "
                         "would take its invoices out of every revenue figure. End and delete its subscriptions "
                         "first, or record the developer's usage under another customer.")
