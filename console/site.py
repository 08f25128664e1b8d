"""The operator console: Django's admin site with a dashboard on its index page and the CSV export on every list.

`console.apps.ConsoleAdminConfig` replaces `django.contrib.admin` in INSTALLED_APPS, so every app's
`admin.site` is this site.
The dashboard shows, for each organization the operator sees (at most DASHBOARD_BOOKS at once; pick one with the
organization selector), one of its books (test or live), with the figures of `analytics.dashboard`: revenue, cost,
margin and the daily costs of the chosen month (the `month` parameter, default the current month to date), the
others as they are now.
"""
import uuid
from dataclasses import dataclass
from decimal import Decimal
from urllib.parse import urlencode

from django.contrib import admin
from django.urls import reverse

from analytics.dashboard import NEAR_EMPTY_PERCENT, BookFigures, book_figures, dashboard_month, dashboard_months
from accounts.admin_actions import export_csv
from accounts.api import client_ip
from accounts.admin_scoping import visible_books, visible_organizations
from accounts.models import Environment
from console.models import LedgerDrift
from accounts.throttling import failed_login_retry_after
from core import clock
from core.charts import BarChart, bar_chart
from core.money import quantized
from core.scoping import owned
from customers.models import Customer, EventStatus

DASHBOARD_BOOKS = 10
CHART_PLACES = Decimal("0.0001")


@dataclass(frozen=True)
class BookPanel:
    figures: BookFigures
    chart: BarChart
    overdue_url: str
    pools_url: str
    unpriced_url: str
    drift: list  # what the ledger verifier last found different from the ledger (console/verification.py)

    @property
    def chart_id(self) -> str:
        return f"chart-{self.figures.book.pk}"


def _changelist(name: str, **params) -> str:
    return f"{reverse(f'admin:{name}_changelist')}?{urlencode(params)}"


def book_panel(figures: BookFigures) -> BookPanel:
    book = figures.book.pk
    chart = bar_chart([(day.day.strftime("%b %-d"), quantized(day.cost, CHART_PLACES)) for day in figures.daily_costs],
                      unit="USD", reference=quantized(figures.average_daily_revenue, CHART_PLACES), tick_prefix="$")
    return BookPanel(
        figures, chart,
        overdue_url=_changelist("billing_invoice", book=book, status__exact="overdue"),
        pools_url=_changelist("billing_subscription", book=book, pool_left=NEAR_EMPTY_PERCENT),
        unpriced_url=_changelist("customers_usageevent", book=book,
                                 event_status__exact=EventStatus.NEEDS_COST_BACKFILL),
        drift=list(owned(LedgerDrift, book).order_by("first_found_at", "check_name")[:6]))


def default_environment(books) -> str:
    """The environment the dashboard opens on when none is chosen: live once any visible live book has
    customers, else test when a test book has some (a test-key quickstart shows its numbers at once), else live."""
    with_data = Customer.objects.filter(book__in=books)
    if with_data.filter(book__environment=Environment.LIVE).exists():
        return Environment.LIVE
    return Environment.TEST if with_data.filter(book__environment=Environment.TEST).exists() else Environment.LIVE


def _uuid_or_none(value: str | None):
    try:
        return uuid.UUID(value) if value else None
    except ValueError:
        return None


class ConsoleSite(admin.AdminSite):
    site_header = "Billing console"
    site_title = "Billing console"
    index_title = "Dashboard"
    index_template = "admin/console/index.html"
    site_url = None  # the service has no public home page to "view"
    # The app list is on the dashboard: without the sidebar a list and its filters fit a 1,366 px window.
    enable_nav_sidebar = False

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.add_action(export_csv)

    def login(self, request, extra_context=None):
        """Django's sign-in page, with failed sign-ins counted per network: past ADMIN_LOGIN_FAILURE_LIMIT each
        further failure is a 429 (accounts/throttling.py); a valid sign-in always works."""
        response = super().login(request, extra_context)
        failed = request.method == "POST" and response.status_code == 200 and not request.user.is_authenticated
        retry_after = failed_login_retry_after(client_ip(request)) if failed else None
        if retry_after:
            response.context_data["form"].add_error(None, "Too many failed sign-ins from this network: this one was "
                                                          "refused and logged. A correct username and password "
                                                          "still sign in.")
            response.status_code = 429
            response["Retry-After"] = str(retry_after)
        return response

    def index(self, request, extra_context=None):
        environment = request.GET.get("environment")
        organizations = list(visible_organizations(request.user).order_by("name").values_list("pk", "name"))
        chosen = _uuid_or_none(request.GET.get("organization"))
        books = visible_books(request.user)
        if environment not in Environment.values:
            environment = default_environment(books if chosen is None else books.filter(organization_id=chosen))
        books = books.filter(environment=environment).order_by("organization__name")
        if chosen is not None:
            books = books.filter(organization_id=chosen)
        now = clock.now()
        month = dashboard_month(request.GET.get("month"), now=now)
        panels = [book_panel(book_figures(book=book, now=now, month=month)) for book in books[:DASHBOARD_BOOKS]]
        hidden = 0 if chosen is not None else max(books.count() - len(panels), 0)
        dashboard = {"panels": panels, "environment": environment, "environments": Environment.values,
                     "organizations": organizations, "chosen": chosen, "hidden": hidden,
                     "month": month, "months": dashboard_months(now=now, chosen=month), "now": now,
                     "near_empty_percent": NEAR_EMPTY_PERCENT}
        return super().index(request, {**(extra_context or {}), "dashboard": dashboard})
