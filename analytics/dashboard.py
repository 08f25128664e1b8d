"""The console dashboard's figures for one organization book: each comes from the selector that answers the same
question in the API, called once (docs/console.md lists the figures and their definitions).

"This month" is the window `GET /v1/analytics/...?startDate=<the month's first day>` reads: from the first of the
month 00:00 UTC to the end of today (UTC), whole days.
"""
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from analytics.selectors.cost import CostAnalytics, cost_analytics
from analytics.selectors.mrr import ALL, AllMrr, mrr_report
from analytics.selectors.revenue import RevenueMetrics, revenue_metrics
from analytics.selectors.window import analytics_window
from billing.selectors.credit_pools import NEAR_EMPTY_PERCENT, CreditBalance, credit_balance_list
from billing.selectors.invoices import OverdueInvoices, overdue_invoices
from accounts.models import Book
from core.clock import month_window
from core.money import ZERO, to_cents
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
    def margin_shown(self) -> Decimal:
        """The margin as the dashboard shows it: revenue less cost as shown, each in cents, so the three figures
        add up on the page (the exact margin rounded on its own can be a cent off their difference)."""
        return to_cents(self.revenue.revenue) - to_cents(self.revenue.cost)

    @property
    def margin_percent_shown(self) -> Decimal | None:
        """The shown margin as a percent of the shown revenue; None without revenue."""
        revenue = to_cents(self.revenue.revenue)
        return None if not revenue else self.margin_shown * 100 / revenue

    @property
    def average_daily_revenue(self) -> Decimal:
        return self.revenue.revenue / self.days


def month_so_far(now: datetime) -> Window:
    return analytics_window(start=month_window(now)[0].date(), end=None, now=now)


def book_figures(*, book: Book, now: datetime) -> BookFigures:
    window = month_so_far(now)
    return BookFigures(
        book=book, window=window,
        revenue=revenue_metrics(book=book, window=window, period_limit=None),  # a month: nothing to bound
        cost=cost_analytics(book=book, window=window),
        mrr=mrr_report(book=book, variant=ALL, now=now),
        overdue=overdue_invoices(book=book),
        pools_near_empty=credit_balance_list(book=book, now=now, below_percent=NEAR_EMPTY_PERCENT),
        unpriced_events=unpriced_event_count(book=book))
