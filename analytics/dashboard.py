"""The console dashboard's figures for one organization book: each comes from the selector that answers the same
question in the API, called once (docs/console.md lists the figures and their definitions).

The window figures (revenue, cost, margin, the daily costs) are of one month, the operator's choice: the current
month to date is the window `GET /v1/analytics/...?startDate=<the month's first day>` reads (from the first of the
month 00:00 UTC to the end of today, UTC, whole days); an earlier month is read whole, as `startDate=<its first
day>&endDate=<its last day>` reads it. The other figures (MRR, overdue invoices, pools near empty, unpriced events)
describe the book now, whichever month is chosen.
"""
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.utils.dateformat import format as format_date

from analytics.selectors.cost import CostAnalytics, cost_analytics
from analytics.selectors.mrr import ALL, AllMrr, mrr_report
from analytics.selectors.revenue import RevenueMetrics, revenue_metrics
from analytics.selectors.window import analytics_window
from billing.selectors.credit_pools import NEAR_EMPTY_PERCENT, CreditBalance, credit_balance_list
from billing.selectors.invoices import OverdueInvoices, overdue_invoices
from accounts.models import Book
from core.clock import MIN_YEAR, day_start, month_window
from core.money import ZERO
from customers.selectors import unpriced_event_count
from customers.usage_sums import Window


@dataclass(frozen=True)
class DailyCost:
    day: datetime
    cost: Decimal


@dataclass(frozen=True)
class BookFigures:
    book: Book
    window: Window
    revenue: RevenueMetrics  # revenue, cost and margin of customers' usage (GET /v1/analytics/revenue)
    cost: CostAnalytics  # every event's cost, internal usage included, per day (GET /v1/analytics/cost)
    mrr: AllMrr  # canonical, runRate and committed (GET /v1/analytics/mrr?variant=all)
    overdue: OverdueInvoices
    pools_near_empty: list[CreditBalance]  # emptiest first (GET /v1/credit-balances?belowPercent=20)
    unpriced_events: int  # NEEDS_COST_BACKFILL

    @property
    def days(self) -> int:
        return self.window.length // timedelta(days=1)

    @property
    def daily_costs(self) -> list[DailyCost]:
        """Every day of the window, days without events at 0."""
        by_day = {row.key: row.cost for row in self.cost.by_day}
        return [DailyCost(day, by_day.get(day, ZERO)) for day in
                (self.window.start + timedelta(days=offset) for offset in range(self.days))]

    @property
    def average_daily_revenue(self) -> Decimal:
        return self.revenue.revenue / self.days


def month_so_far(now: datetime) -> Window:
    return analytics_window(start=month_window(now)[0].date(), end=None, now=now)


# The months before the current one that the dashboard's month choice offers (a year back, so last year's same
# month is one choice away); an earlier month can still be asked for by URL.
MONTHS_OFFERED = 12
# ASCII digits only: `\d` would take other scripts' digits, which int() reads but nobody typed as a month.
MONTH_VALUE = re.compile(r"([0-9]{4})-([0-9]{2})")


@dataclass(frozen=True)
class DashboardMonth:
    """A month the dashboard reads: the current one to date, or an earlier one whole."""
    first_day: date
    to_date: bool  # the current month: its window ends with today, not with the month

    @property
    def value(self) -> str:
        """The dashboard's `month` query parameter naming this month."""
        return f"{self.first_day.year:04d}-{self.first_day.month:02d}"

    @property
    def name(self) -> str:
        return format_date(self.first_day, "F Y")

    @property
    def label(self) -> str:
        return f"{self.name} (to date)" if self.to_date else self.name

    @property
    def phrase(self) -> str:
        """How a figure's label names the month: "Revenue this month", "Revenue in May 2025"."""
        return "this month" if self.to_date else f"in {self.name}"

    def window(self, now: datetime) -> Window:
        """The window of the API's analytics reads for the same month, so the dashboard's figures equal theirs:
        the current month as `startDate=<its first day>`, an earlier one as `startDate=<its first
        day>&endDate=<its last day>` (both days inclusive: [first day 00:00 UTC, next month's first day))."""
        if self.to_date:
            return month_so_far(now)
        start, end = month_window(day_start(self.first_day))
        return analytics_window(start=start.date(), end=(end - timedelta(days=1)).date(), now=now)


def _month_before(first_day: date) -> date:
    return (first_day - timedelta(days=1)).replace(day=1)


def dashboard_month(value: str | None, *, now: datetime) -> DashboardMonth:
    """The month the dashboard's `month` parameter (`YYYY-MM`) names, from January MIN_YEAR (the earliest date any
    read of the service takes) to the current month. Anything else (no value, not `YYYY-MM`, a future month, an
    earlier year) is the current month to date, the dashboard's default, rather than an error page."""
    current = month_window(now)[0].date()
    match = MONTH_VALUE.fullmatch(value or "")
    if match:
        year, month = int(match.group(1)), int(match.group(2))
        if year >= MIN_YEAR and 1 <= month <= 12 and date(year, month, 1) < current:
            return DashboardMonth(date(year, month, 1), to_date=False)
    return DashboardMonth(current, to_date=True)


def dashboard_months(*, now: datetime, chosen: DashboardMonth | None = None) -> list[DashboardMonth]:
    """The months the dashboard offers, newest first: the current one to date and the MONTHS_OFFERED before it,
    then `chosen` when it is older than those (asked for by URL), so the form shows and keeps it."""
    months = [DashboardMonth(month_window(now)[0].date(), to_date=True)]
    for _ in range(MONTHS_OFFERED):
        months.append(DashboardMonth(_month_before(months[-1].first_day), to_date=False))
    if chosen is not None and chosen not in months:
        months.append(chosen)
    return months


def book_figures(*, book: Book, now: datetime, month: DashboardMonth | None = None) -> BookFigures:
    """The book's figures: the window figures over `month` (default: the current month to date), the rest now."""
    window = month.window(now) if month is not None else month_so_far(now)
    return BookFigures(
        book=book, window=window,
        revenue=revenue_metrics(book=book, window=window, period_limit=None),  # a month: nothing to bound
        cost=cost_analytics(book=book, window=window),
        mrr=mrr_report(book=book, variant=ALL, now=now),
        overdue=overdue_invoices(book=book),
        pools_near_empty=credit_balance_list(book=book, now=now, below_percent=NEAR_EMPTY_PERCENT),
        unpriced_events=unpriced_event_count(book=book))
