"""Reads of portal sessions (API) and of what the hosted portal shows one customer.

Every read behind a browser session is scoped by the session's book AND customer: a customer never reaches
another customer's rows, whatever id a URL carries.
"""
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal
from uuid import UUID
from zoneinfo import ZoneInfo

from django.db.models import QuerySet, Sum
from django.db.models.functions import TruncDate

from billing.models import Invoice, InvoiceStatus, Payment, Subscription, SubscriptionStatus
from billing.pricing.periods import local_midnight
from billing.pricing.terms import period_timezone
from billing.selectors.invoices import invoice_documents
from core.clock import month_window
from core.money import SUMS, ZERO
from core.scoping import get_owned, owned
from customers.models import Customer, Signal, UsageEvent
from customers.usage_sums import event_sums, ledger_snapshot
from portal.models import PortalSession

PORTAL_INVOICE_LIMIT = 50


# --------------------------------------------------------------------------- API

def portal_session_list(*, book, now: datetime, customer_id: UUID | None = None,
                        include_expired: bool = False) -> QuerySet:
    """Newest first; by default only links that can still be opened (not used, expired or revoked)."""
    sessions = owned(PortalSession, book).select_related("customer").order_by("-created_at", "-id")
    if customer_id is not None:
        sessions = sessions.filter(customer_id=customer_id)
    if not include_expired:
        sessions = sessions.filter(used_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now)
    return sessions


def portal_session_get(*, book, session_id) -> PortalSession:
    return get_owned(PortalSession, book, session_id,
                     queryset=owned(PortalSession, book).select_related("customer"))


# --------------------------------------------------------------------------- the hosted portal

def portal_session_live(*, session_id, now: datetime) -> PortalSession | None:
    """The consumed, unexpired, unrevoked session a browser is bound to (its cookie names it, like a token)."""
    try:
        session_id = UUID(str(session_id))
    except ValueError:
        return None
    return (PortalSession.objects.select_related("customer", "book__organization")
            .filter(pk=session_id, used_at__isnull=False, revoked_at__isnull=True, expires_at__gt=now,
                    customer__deleted_at__isnull=True).first())


def _shown(invoices):
    """Invoices the customer was ever given: finalized ones. Drafts still change, and a draft voided before it was
    finalized (no issue date) was never the customer's."""
    return invoices.exclude(status=InvoiceStatus.DRAFT).exclude(status=InvoiceStatus.VOID, issued_at__isnull=True)


def customer_invoices(*, book, customer: Customer) -> list[Invoice]:
    """The customer's finalized invoices, newest first."""
    return list(_shown(owned(Invoice, book).filter(customer=customer))
                .select_related("subscription").order_by("-created_at", "-id")[:PORTAL_INVOICE_LIMIT])


def periods_issued(*, book, customer: Customer) -> set[tuple]:
    """(subscription id, period start) of the customer's periods a final invoice bills (not a void one): usage
    recorded for such a period afterwards is on no invoice (docs/decisions/invoices.md). One read."""
    return set(owned(Invoice, book).filter(customer=customer)
               .exclude(status__in=(InvoiceStatus.DRAFT, InvoiceStatus.VOID))
               .values_list("subscription_id", "period_start"))


def refunded_by_invoice(invoices: list[Invoice]) -> dict:
    """What was refunded of each invoice's payments, by invoice id (invoices without a refund left out); one read."""
    if not invoices:
        return {}
    rows = (owned(Payment, invoices[0].book_id).filter(invoice__in=invoices, refunded_amount__gt=0)
            .values("invoice_id").annotate(refunded=Sum("refunded_amount")).order_by())
    return {row["invoice_id"]: row["refunded"] for row in rows}


def customer_invoice(*, book, customer: Customer, invoice_id) -> Invoice:
    """One finalized invoice of this customer, with what its PDF reads; any other id is a 404."""
    queryset = _shown(invoice_documents(book=book).filter(customer=customer))
    return get_owned(Invoice, book, invoice_id, queryset=queryset)


def customer_subscriptions(*, book, customer: Customer) -> list[Subscription]:
    """Active first, then upcoming, then ended; newest first within each."""
    order = {SubscriptionStatus.ACTIVE: 0, SubscriptionStatus.UPCOMING: 1}
    rows = list(owned(Subscription, book).filter(customer=customer).select_related("plan", "agent")
                .order_by("-created_at", "-id"))
    return sorted(rows, key=lambda row: order.get(row.status, 2))


@dataclass(frozen=True)
class UsageDay:
    day: date
    events: int
    quantity: Decimal


@dataclass(frozen=True)
class UsageTotal:
    signal_name: str
    events: int
    quantity: Decimal


@dataclass(frozen=True)
class CustomerUsage:
    start: datetime  # the current period, [start, end)
    end: datetime
    days: list[UsageDay]  # every day from start through today, zeros included (local days of the period)
    by_signal: list[UsageTotal]  # most events first

    @property
    def events(self) -> int:
        """Every event of the period, those dated after today included (the days stop at today)."""
        return sum(total.events for total in self.by_signal)


@dataclass(frozen=True)
class UsageWindow:
    start: datetime  # [start, end)
    end: datetime
    timezone: str  # the days the period is written and charted in


def current_usage_window(subscriptions: list[Subscription], now: datetime) -> UsageWindow:
    """The current period: from the earliest current-period start of the customer's active subscriptions to
    the latest end, in their periods' time zone (the local days the subscription rows show); without an active
    subscription in its period, the current UTC calendar month. Subscriptions whose periods run in different time
    zones share no local calendar: their window is written in UTC days."""
    periods = [(row.current_period_start, row.current_period_end, period_timezone(row, row.current_period_start))
               for row in subscriptions
               if row.status == SubscriptionStatus.ACTIVE and row.current_period_start and row.current_period_end
               and row.current_period_start <= now < row.current_period_end]
    if not periods:
        return UsageWindow(*month_window(now), "UTC")
    zones = {zone for _, _, zone in periods}
    return UsageWindow(min(start for start, _, _ in periods), max(end for _, end, _ in periods),
                       zones.pop() if len(zones) == 1 else "UTC")


def customer_usage(*, book, customer: Customer, start: datetime, end: datetime, now: datetime,
                   timezone: str = "UTC") -> CustomerUsage:
    """Daily events and quantity of the customer's usage from the period's start through today (days in
    `timezone`, the period's own; events dated later in the period are not drawn yet), and the totals per signal
    of the whole period, those events included (a pool row beside it counts them too), by the signal name each
    event recorded (`event_sums`: one customer's period, and names the rollup does not keep). The days and the
    totals are read from one snapshot of the ledger: a batch committed between the two statements was drawn in
    the chart and not counted in the totals (or the other way)."""
    zone = ZoneInfo(timezone)
    first = start.astimezone(zone).date()
    today = now.astimezone(zone).date()
    # Every day the window touches, the last one too when the period ends inside it (a Berlin period written in
    # UTC days ends at 22:00): its events are counted in the totals per signal, so the days must hold them as well.
    last = min((end - timedelta(microseconds=1)).astimezone(zone).date(), today)
    until = min(end, local_midnight(today + timedelta(days=1), timezone))
    period = owned(UsageEvent, book).filter(customer=customer, usage_date__gte=start, usage_date__lt=end)
    events = period.filter(usage_date__lt=until)
    measures = ("event_count", "quantity")
    with ledger_snapshot():
        daily = {row.key[0]: row for row in event_sums(events.annotate(day=TruncDate("usage_date", tzinfo=zone)),
                                                       by=("day",), measures=measures)}
        by_signal = _usage_by_signal(book, period, measures)
    days = []
    for offset in range(max((last - first).days + 1, 0)):
        day = first + timedelta(days=offset)
        row = daily.get(day)
        days.append(UsageDay(day, row.event_count, row.quantity) if row else UsageDay(day, 0, ZERO))
    return CustomerUsage(start, end, days, by_signal)


def _usage_by_signal(book, events, measures) -> list[UsageTotal]:
    """Totals per signal under the signal's display name, as the customer reads it on invoices; an event
    whose signal was deleted keeps the name it recorded. Signals of different agents with one display name
    make one row."""
    rows = event_sums(events, by=("signal_id", "signal_name"), measures=measures)
    names = dict(owned(Signal, book).filter(pk__in={row.key[0] for row in rows if row.key[0]})
                 .values_list("pk", "name"))
    totals: dict[str, list] = {}
    for row in rows:
        label = names.get(row.key[0]) or row.key[1]
        total = totals.setdefault(label, [0, ZERO])
        total[0] += row.event_count
        total[1] = SUMS.add(total[1], row.quantity)
    return sorted((UsageTotal(label, count, quantity) for label, (count, quantity) in totals.items()),
                  key=lambda total: (-total.events, total.signal_name))
