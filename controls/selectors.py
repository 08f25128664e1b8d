"""Reads of spend controls: windows, spend on internal coding-agent usage, coverage, lists."""
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import Count, Max, Q, QuerySet

from accounts.models import Book
from core import clock
from core.scoping import owned
from controls.models import CapPeriod, CustomerAlert, Device, SpendCap
from customers.models import CODING_AGENT_CODE, UsageEvent
from customers.usage_sums import Sums, event_sums, ledger_snapshot

COVERAGE_WINDOW = timedelta(days=7)
WINDOWS = {CapPeriod.DAY: clock.day_window, CapPeriod.WEEK: clock.week_window, CapPeriod.MONTH: clock.month_window}


# How long after a window ends (a spend cap's day, week or month; a customer alert's month or custom range) it is
# judged once more, over the whole window: what its last minutes recorded is evaluated only after it ended (the job
# runs every few minutes, ingestion's follow-up seconds later), and a batch arriving late is dated into it. Longer
# than the job's interval, so a late run still sees it; a window that ended before alerts nothing.
ENDED_WINDOW_GRACE = timedelta(hours=1)


def ended_window_due(row, window_end: datetime, now: datetime) -> bool:
    """Whether an evaluation at `now` judges, for a spend cap or a customer watch (`row`), a window that ended at
    `window_end`: only if the row was as it is now before the window ended (one created or changed after never
    watched it), then for ENDED_WINDOW_GRACE after the end (late batches dated into it), and however late when no
    evaluation of the row has run since the window ended (`judged_at`; never judged: since its creation), since the
    runs that would have judged its last part were lost (a worker or the broker down): a crossing is reported late
    rather than never."""
    if row.updated_at >= window_end:
        return False
    return now - window_end <= ENDED_WINDOW_GRACE or (row.judged_at or row.created_at) < window_end


def period_window(period: str, moment: datetime) -> tuple[datetime, datetime]:
    """The UTC day, week (from Monday 00:00) or calendar month holding `moment`, half-open."""
    return WINDOWS[period](moment)


@dataclass(frozen=True)
class SpendTotals:
    spent_usd: Decimal | None  # None: no priced usage in the window
    event_count: int
    unpriced_event_count: int


def coding_agent_usage(book: Book) -> QuerySet:
    """Internal coding-agent usage only: never customer-billing events (contract.md)."""
    return owned(UsageEvent, book).filter(agent_code=CODING_AGENT_CODE)


def _spent(sums: Sums) -> Decimal | None:
    return sums.cost if sums.priced_count else None


def _totals(queryset: QuerySet) -> SpendTotals:
    [sums] = event_sums(queryset, measures=("event_count", "unpriced_count", "cost"))
    return SpendTotals(_spent(sums), sums.event_count, sums.unpriced_count)


def spend_totals(*, book: Book, start: datetime, end: datetime,
                 customer_external_id: str | None = None) -> SpendTotals:
    usage = coding_agent_usage(book).filter(usage_date__gte=start, usage_date__lt=end)
    if customer_external_id is not None:
        usage = usage.filter(customer_external_id=customer_external_id)
    return _totals(usage)


def spend_by_developer(*, book: Book, start: datetime, end: datetime, developers) -> dict[str, Decimal]:
    """Priced spend of each listed developer in the window, in one query (absent: none)."""
    usage = coding_agent_usage(book).filter(usage_date__gte=start, usage_date__lt=end,
                                            customer_external_id__in=list(developers))
    rows = event_sums(usage, by=("customer_external_id",), measures=("event_count", "unpriced_count", "cost"))
    return {row.key[0]: row.cost for row in rows if row.priced_count}


@dataclass(frozen=True)
class Coverage:
    armed: int
    total: int
    as_of: datetime | None


def coverage(*, book: Book, now: datetime) -> Coverage:
    """Developers seen in the trailing 7 days (by heartbeat or by internal coding-agent usage), and how
    many of them are armed: every machine they checked in from in the window last reported armed."""
    since = now - COVERAGE_WINDOW
    devices = owned(Device, book).filter(last_seen_at__gte=since, last_seen_at__lte=now)
    machines = devices.values("customer_external_id").annotate(
        machines=Count("id"), armed_machines=Count("id", filter=Q(armed=True)))
    armed = {row["customer_external_id"] for row in machines if row["machines"] == row["armed_machines"]}
    usage = coding_agent_usage(book).filter(usage_date__gte=since, usage_date__lte=now)
    developers = {row["customer_external_id"] for row in machines}
    developers |= set(usage.values_list("customer_external_id", flat=True).distinct())
    latest = [moment for moment in (devices.aggregate(at=Max("last_seen_at"))["at"],
                                    usage.aggregate(at=Max("usage_date"))["at"]) if moment is not None]
    return Coverage(armed=len(armed), total=len(developers), as_of=max(latest) if latest else None)


def spend_cap_list(*, book: Book) -> QuerySet:
    return owned(SpendCap, book).order_by("-scope", "scope_value")  # the org cap first, then developers


def customer_alert_list(*, book: Book) -> QuerySet:
    return owned(CustomerAlert, book).select_related("customer").order_by("-created_at")


def spend_report(*, book: Book, now: datetime, period: str, customer_external_id: str | None = None) -> dict:
    """Spend of the current UTC window of `period`: the whole team and, when asked, one developer, both from one
    snapshot of the ledger (a batch committed between the two statements made a developer's spend exceed the
    team's)."""
    start, end = period_window(period, now)
    with ledger_snapshot():
        org = spend_totals(book=book, start=start, end=end)
        dev = (None if customer_external_id is None
               else spend_totals(book=book, start=start, end=end, customer_external_id=customer_external_id))
    report = {"period": period, "window": {"start": start, "end": end}, "as_of": now, "org": org, "dev": None}
    if dev is not None:
        report["dev"] = {"customer_external_id": customer_external_id, "spent_usd": dev.spent_usd,
                         "event_count": dev.event_count, "unpriced_event_count": dev.unpriced_event_count}
    return report
