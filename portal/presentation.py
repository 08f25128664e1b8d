"""What the portal's home page shows, as rows a template prints: reads the selectors, formats money and dates.

Every read takes the session's book and customer (portal/selectors.py), so the page holds that customer's
rows only.
"""
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.urls import reverse

from billing.invoice_documents import money, period_days
from billing.models import PAYABLE, Invoice, InvoiceStatus, Subscription, SubscriptionStatus
from billing.pricing.periods import local_date
from billing.pricing.terms import period_timezone
from billing.selectors.credit_pools import credit_balance_list
from billing import stripe_gateway
from billing.services.payments import local_checkout_enabled
from customers.models import Customer
from customers.serializers import CustomerWriteIn
from portal import selectors
from core import display
from core.charts import BarChart, bar_chart
from portal.models import PortalSession


@dataclass(frozen=True)
class InvoiceRow:
    number: str
    status: str
    period: tuple[str, str]
    total: str
    amount_due: str
    overpaid: str | None  # collected beyond the total (paid twice): owed back to the customer
    refunded: str | None  # given back to the customer (a partial refund leaves the invoice paid)
    due_date: date | None
    pdf_url: str
    pay_url: str | None  # unpaid and payable: the pay-now button
    pay_label: str = ""  # "Pay $12.00", or "How to pay $12.00" where no online payment is configured
    # Received so far on an invoice not settled by it (a part payment), as the pay page's "Amount paid": without it
    # the row showed the whole total beside a button for less.
    paid: str | None = None


def invoice_rows(invoices: list[Invoice], *, livemode: bool) -> list[InvoiceRow]:
    # Without online payment (or for an amount Stripe does not take) the button leads to the seller's payment
    # instructions: it says so.
    local = local_checkout_enabled()
    refunded = selectors.refunded_by_invoice(invoices)
    rows = []
    for invoice in invoices:
        payable = invoice.status in PAYABLE and invoice.amount_due > 0
        online = local or stripe_gateway.pays_online(invoice.amount_due, invoice.currency, livemode=livemode)
        rows.append(InvoiceRow(
            invoice.invoice_number, invoice.status, period_days(invoice), money(invoice.total, invoice.currency),
            money(invoice.amount_due, invoice.currency),
            money(invoice.amount_overpaid, invoice.currency) if invoice.amount_overpaid > 0 else None,
            money(refunded[invoice.pk], invoice.currency) if invoice.pk in refunded else None,
            # A void or refunded invoice is due never: its old due date read as money still owed.
            None if invoice.status in (InvoiceStatus.VOID, InvoiceStatus.REFUNDED) else invoice.due_date,
            reverse("portal-invoice-pdf", args=[invoice.pk]),
            reverse("portal-invoice-pay", args=[invoice.pk]) if payable else None,
            f"{'Pay' if online else 'How to pay'} "
            f"{money(invoice.amount_due, invoice.currency)}",
            money(invoice.amount_paid, invoice.currency) if invoice.amount_paid > 0 and invoice.status not in (
                InvoiceStatus.PAID, InvoiceStatus.REFUNDED, InvoiceStatus.VOID) else None))
    return rows


@dataclass(frozen=True)
class SubscriptionRow:
    name: str
    plan: str
    status: str
    period: tuple[str, str] | None  # the current billing period as local days, inclusive
    start: date  # its first local day
    end: date | None  # its last local day (the day before an end at midnight), as the periods write their days


def _local_days(start: datetime, end: datetime, timezone: str) -> tuple[str, str]:
    return display.period_days(start, end, timezone)


def subscription_rows(subscriptions: list[Subscription]) -> list[SubscriptionRow]:
    rows = []
    for row in subscriptions:
        period = None
        if row.current_period_start and row.current_period_end:
            period = _local_days(row.current_period_start, row.current_period_end,
                                 period_timezone(row, row.current_period_start))
        end = None
        if not row.is_forever and row.end_date is not None and row.end_date > row.start_date:
            last = row.end_date - timedelta(microseconds=1)
            end = local_date(last, period_timezone(row, last))
        rows.append(SubscriptionRow(row.name, row.plan.name, row.status, period,
                                    local_date(row.start_date, period_timezone(row, row.start_date)), end))
    return rows


@dataclass(frozen=True)
class PlanChangeRow:
    """One plan change of the customer: from which plan to which, on which local day, done or scheduled."""

    from_plan: str
    to_plan: str
    on: date
    at: datetime
    scheduled: bool


def plan_history(subscriptions: list[Subscription]) -> list[PlanChangeRow]:
    """The customer's plan changes, newest first: each subscription a change started, against the one it replaced
    (both are the customer's, so both are in `subscriptions`)."""
    by_id = {row.pk: row for row in subscriptions}
    rows = [PlanChangeRow(by_id[row.previous_subscription_id].plan.name, row.plan.name,
                          local_date(row.start_date, row.timezone), row.start_date,
                          row.status == SubscriptionStatus.UPCOMING)
            for row in subscriptions if row.previous_subscription_id in by_id]
    return sorted(rows, key=lambda row: row.at, reverse=True)


@dataclass(frozen=True)
class PoolRow:
    subscription: str
    plan: str
    pool_size: str
    consumed: str
    remaining: str
    remaining_percent: Decimal
    bar_percent: Decimal  # remaining_percent clamped to 0-100 for the gauge
    period: tuple[str, str] | None
    # "971.6 this period + 500 top-ups" under the remaining units, when top-ups are left: the remaining units and
    # the percent count them (spec), while "consumed of pool" does not, so without it the figures did not add up.
    split: str | None = None
    # Set for a subscription outside its periods (not started, or ended): its pool cannot be drawn on now, so
    # the page says when it starts or ended instead of a full gauge the customer would read as credit to use.
    not_current: str | None = None
    # Units already billing as overage this period, in words: the selector's `overage_in_progress_units` (the
    # invoice's own math), which top-ups do not reduce (spec), so a pool with top-ups left can still bill overage.
    overage: str | None = None


def _overage(balance, top_ups_left: Decimal, *, issued: bool) -> str | None:
    """`issued`: the period's invoice is final already, and bills none of the usage recorded after it."""
    units = balance.overage_in_progress_units
    if units <= 0:
        return None
    if issued:
        return f"{display.quantity(units)} units beyond the pool, recorded after this period's invoice was issued"
    rate = balance.pool.overage_rate  # the pool's own tier 2, as the invoice prices it; None when it cannot say
    text = (f"{display.quantity(units)} units beyond the pool bill as overage on this period's invoice"
            + (f" ({display.price(rate)} each)" if rate is not None else ""))
    return text + ("; top-ups do not reduce it" if top_ups_left > 0 else "")


def _not_current(balance, now: datetime) -> str | None:
    if not balance.no_active_period:
        return None
    subscription = balance.subscription
    if subscription.start_date > now:
        return f"Starts {display.day(subscription.start_date, subscription.timezone)}"
    if subscription.end_date is not None and subscription.end_date <= now:
        return f"Ended {display.day(subscription.end_date - timedelta(microseconds=1), subscription.timezone)}"
    return None  # running, its next period not rolled over yet: the pool it starts with, as the API says


def pool_rows(*, book, customer: Customer, now: datetime) -> list[PoolRow]:
    """Balances of the customer's subscriptions whose plan sells a credit pool (none: the section is hidden)."""
    rows = []
    balances = credit_balance_list(book=book, now=now, customer_id=customer.pk)
    issued = selectors.periods_issued(book=book, customer=customer) if balances else set()
    for balance in balances:
        subscription = balance.subscription
        period = (_local_days(balance.period_start, balance.period_end,
                              period_timezone(subscription, balance.period_start))
                  if balance.period_start and balance.period_end else None)
        period_left = max(balance.pool.size - balance.consumed_units, Decimal(0))
        top_ups_left = balance.remaining_units - period_left
        split = (f"{display.quantity(period_left)} this period + {display.quantity(top_ups_left)} top-ups"
                 if top_ups_left > 0 else None)
        rows.append(PoolRow(subscription.name, subscription.plan.name, display.quantity(balance.pool.size),
                            display.quantity(balance.consumed_units), display.quantity(balance.remaining_units),
                            balance.remaining_percent, min(max(balance.remaining_percent, Decimal(0)), Decimal(100)),
                            period, split, _not_current(balance, now),
                            _overage(balance, top_ups_left, issued=(subscription.pk, balance.period_start) in issued)))
    return rows


@dataclass(frozen=True)
class UsageSection:
    period: tuple[str, str]  # local days of `timezone`, inclusive: as the subscription rows write the period
    timezone: str
    events: int
    chart: BarChart  # one bar per local day
    by_signal: list[tuple[str, int, str]]  # signal, events, quantity

    @property
    def zone_named(self) -> str | None:
        """The time zone to name beside the days; none for UTC, which the subscription rows do not name either."""
        return None if self.timezone == "UTC" else self.timezone


def usage_section(*, book, customer: Customer, subscriptions: list[Subscription], now: datetime) -> UsageSection:
    window = selectors.current_usage_window(subscriptions, now)
    usage = selectors.customer_usage(book=book, customer=customer, start=window.start, end=window.end, now=now,
                                     timezone=window.timezone)
    chart = bar_chart([(day.day.strftime("%b %-d"), Decimal(day.events)) for day in usage.days], unit="events",
                      unit_of_one="event", whole=True)
    # The chart's title names the whole period's local days and events, as the heading above it does: the days it
    # draws stop at today, and a title ending there (or on a UTC day) read as another period than the row's.
    first, last = (day.astimezone(ZoneInfo(window.timezone)) for day in
                   (window.start, window.end - timedelta(microseconds=1)))
    zone = "" if window.timezone == "UTC" else f" ({window.timezone})"
    chart = replace(chart, description=f"{usage.events} event{'' if usage.events == 1 else 's'} from "
                                       f"{first:%b %-d} to {last:%b %-d}{zone}")
    return UsageSection(_local_days(window.start, window.end, window.timezone), window.timezone, usage.events, chart,
                        [(display.unit(total.signal_name), total.events, display.quantity(total.quantity))
                         for total in usage.by_signal])


# --------------------------------------------------------------------------- profile form

@dataclass(frozen=True)
class ProfileField:
    name: str  # the customers API's camelCase field: the same validation rules
    label: str
    input_type: str
    autocomplete: str


PROFILE_FIELDS = [
    ProfileField("name", "Name", "text", "organization"),
    ProfileField("email", "Billing email", "email", "email"),
    ProfileField("phone", "Phone", "tel", "tel"),
    ProfileField("addressLine1", "Address", "text", "address-line1"),
    ProfileField("addressLine2", "Address line 2", "text", "address-line2"),
    ProfileField("city", "City", "text", "address-level2"),
    ProfileField("state", "State or region", "text", "address-level1"),
    ProfileField("zipCode", "Postal code", "text", "postal-code"),
    ProfileField("country", "Country", "text", "country-name"),
]


@dataclass(frozen=True)
class ProfileInput:
    field: ProfileField
    value: str
    max_length: int
    errors: list[str]
    required: bool


def profile_inputs(customer: Customer, submitted: dict | None = None, errors: dict | None = None) -> list[ProfileInput]:
    """The form's inputs: the customer's values, or what was submitted with the errors of each field."""
    api_fields = CustomerWriteIn().fields
    inputs = []
    for field in PROFILE_FIELDS:
        api_field = api_fields[field.name]
        value = submitted[field.name] if submitted is not None else getattr(customer, api_field.source)
        inputs.append(ProfileInput(field, value or "", api_field.max_length,
                                   [str(message) for message in (errors or {}).get(field.name, [])],
                                   not api_field.allow_blank))
    return inputs


def profile_submission(post) -> dict:
    return {field.name: post.get(field.name, "") for field in PROFILE_FIELDS}


# --------------------------------------------------------------------------- the page

def home_context(session: PortalSession, *, now: datetime, profile: list[ProfileInput] | None = None) -> dict:
    book, customer = session.book, session.customer
    subscriptions = selectors.customer_subscriptions(book=book, customer=customer)
    invoices = selectors.customer_invoices(book=book, customer=customer)
    return {
        "session": session,
        "customer": customer,
        "business_name": book.organization.display_name,
        "invoices": invoice_rows(invoices, livemode=book.livemode),
        "invoice_limit_reached": len(invoices) == selectors.PORTAL_INVOICE_LIMIT,
        "subscriptions": subscription_rows(subscriptions),
        "plan_history": plan_history(subscriptions),
        "usage": usage_section(book=book, customer=customer, subscriptions=subscriptions, now=now),
        "pools": pool_rows(book=book, customer=customer, now=now),
        "profile": profile if profile is not None else profile_inputs(customer),
        "ends_at": session.expires_at,
    }
