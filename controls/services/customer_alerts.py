"""Customer watches: create, change, delete and evaluate.

Windows (spec §3): `month` is the current UTC calendar month (a new window each month); `rolling` is the last
30 days and fires once per crossing; `custom` is a fixed range that fires at most once and expires at its end.
A `CustomerAlertFiring` row per watch and window key referees "once per window" and is kept for good.
"""
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial

from django.conf import settings
from django.db import DataError, IntegrityError, transaction

from accounts.models import Book, Membership
from accounts.api import MONEY_ROLES
from core import clock
from core.emails import send_templated
from core.errors import BadRequest, Conflict
from core.jobs import BookFailures
from core.money import quantized
from core.scoping import get_owned, owned
from controls.events import customer_alert_triggered
from controls.metrics import customer_metric_value
from controls.models import AlertMetric, CustomerAlert, CustomerAlertFiring, Notification, WindowMode
from controls.selectors import ended_window_due
from controls.services.judged import judged_mark
from controls.sentences import usd
from customers.models import Customer

logger = logging.getLogger("billing.controls")

ROLLING_WINDOW = timedelta(days=30)


def customer_console_link(customer: Customer) -> str:
    """The customer's page in the operator console (Django admin change view)."""
    opts = customer._meta
    return f"{settings.PUBLIC_BASE_URL}/admin/{opts.app_label}/{opts.model_name}/{customer.pk}/change/"


def window_phrase(alert: CustomerAlert) -> str:
    if alert.window_mode == WindowMode.MONTH:
        return "in a calendar month (UTC)"
    if alert.window_mode == WindowMode.ROLLING:
        return "over the last 30 days"
    return f"between {clock_text(alert.custom_start)} and {clock_text(alert.custom_end)} (UTC)"


def clock_text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M")


def _money_member_email(book: Book, email: str) -> str | None:
    """The member's email when they are a current owner, admin or finance member of the organization."""
    return (Membership.objects.filter(organization=book.organization, user__email__iexact=email.strip(),
                                      role__in=MONEY_ROLES)
            .values_list("user__email", flat=True).first())


def _checked_window(window_mode: str, custom_start: datetime | None, custom_end: datetime | None) -> None:
    if window_mode == WindowMode.CUSTOM:
        missing = [f"{name}: Required when windowMode is custom." for name, value in
                   (("customStartDate", custom_start), ("customEndDate", custom_end)) if value is None]
        if missing:
            raise BadRequest(missing)
        if custom_end <= custom_start:
            raise BadRequest(["customEndDate: Must be after customStartDate."])
    elif custom_start is not None or custom_end is not None:
        raise BadRequest(["customStartDate: Custom dates are only allowed with windowMode custom."])


def _identical_watch() -> Conflict:
    return Conflict("An identical watch already exists (same customer, metric, threshold, window and recipient).")


def customer_alert_create(*, book: Book, created_by_user_id: str, customer_id, metric: str, threshold_usd: Decimal,
                          window_mode: str, notify_email: str, now: datetime, custom_start: datetime | None = None,
                          custom_end: datetime | None = None) -> CustomerAlert:
    """A watch on a live, non-internal customer for a money-role member; identical watches 409; at most
    `CUSTOMER_ALERT_LIMIT` per book (400). Emails the recipient a confirmation on commit."""
    customer = get_owned(Customer, book, customer_id)
    if customer.deleted_at is not None:
        raise BadRequest(["customerId: This customer was deleted; deleted customers cannot be watched."])
    if customer.is_internal:
        raise BadRequest(["customerId: This is a developer of internal coding-agent usage, not a billed "
                          "customer; use spend caps (/v1/control/caps) for internal spend."])
    _checked_window(window_mode, custom_start, custom_end)
    recipient = _money_member_email(book, notify_email)
    if recipient is None:
        raise BadRequest(["notifyEmail: Must be a current member of this organization with the owner, admin or "
                          "finance role."])
    with transaction.atomic():
        # Serializes creates in this book so the count below cannot be raced past the limit.
        Book.objects.select_for_update().filter(pk=book.pk).first()
        if owned(CustomerAlert, book).count() >= settings.CUSTOMER_ALERT_LIMIT:
            raise BadRequest([f"This organization already has {settings.CUSTOMER_ALERT_LIMIT} watches, the most "
                              "allowed; delete one first."])
        try:
            with transaction.atomic():
                alert = CustomerAlert.objects.create(
                    book=book, customer=customer, metric=metric, threshold_usd=threshold_usd,
                    window_mode=window_mode, custom_start=custom_start, custom_end=custom_end,
                    recipient_email=recipient, created_by_user_id=created_by_user_id, rolling_armed_at=now)
        except IntegrityError:
            raise _identical_watch()
        transaction.on_commit(partial(_confirmation_email, alert=alert), robust=True)
    return alert


@transaction.atomic
def customer_alert_update(*, book: Book, alert_id, now: datetime, **changes) -> CustomerAlert:
    """Change metric, threshold or window (custom dates go with custom mode); customer and recipient stay.
    Windows that already fired stay fired (the firing key does not depend on metric or threshold)."""
    alert = get_owned(CustomerAlert, book, alert_id,
                      queryset=owned(CustomerAlert, book).select_for_update().select_related("customer"))
    window_mode = changes.get("window_mode", alert.window_mode)
    dates_sent = "custom_start" in changes or "custom_end" in changes
    if window_mode == WindowMode.CUSTOM:
        custom_start = changes.get("custom_start", alert.custom_start)
        custom_end = changes.get("custom_end", alert.custom_end)
    elif dates_sent:
        raise BadRequest(["customStartDate: Custom dates are only allowed with windowMode custom."])
    else:
        custom_start = custom_end = None
    _checked_window(window_mode, custom_start, custom_end)
    if window_mode == WindowMode.ROLLING and alert.window_mode != WindowMode.ROLLING:
        alert.rolling_armed_at = now
    alert.metric = changes.get("metric", alert.metric)
    alert.threshold_usd = changes.get("threshold_usd", alert.threshold_usd)
    alert.window_mode, alert.custom_start, alert.custom_end = window_mode, custom_start, custom_end
    try:
        with transaction.atomic():
            alert.save()
    except IntegrityError:
        raise _identical_watch()
    return alert


@transaction.atomic
def customer_alert_delete(*, book: Book, alert_id) -> str:
    """Delete a watch; its in-app notifications go with it, its firing records stay (alert set to null)."""
    alert = get_owned(CustomerAlert, book, alert_id)
    deleted_id = str(alert.id)
    owned(Notification, book).filter(alert=alert).delete()
    alert.delete()
    return deleted_id


@dataclass(frozen=True)
class Window:
    key: str
    start: datetime
    end: datetime


def _month(moment: datetime) -> Window:
    start, end = clock.month_window(moment)
    return Window(f"month:{start:%Y-%m}", start, end)


def _custom(alert: CustomerAlert) -> Window:
    return Window(f"custom:{alert.custom_start.isoformat()}/{alert.custom_end.isoformat()}", alert.custom_start,
                  alert.custom_end)


def current_window(alert: CustomerAlert, now: datetime) -> Window | None:
    """The window a watch judges now; None for a custom range not started yet or already over."""
    if alert.window_mode == WindowMode.MONTH:
        return _month(now)
    if alert.window_mode == WindowMode.ROLLING:
        return Window(f"rolling:{alert.rolling_armed_at.isoformat()}", now - ROLLING_WINDOW, now)
    if alert.custom_start <= now < alert.custom_end:
        return _custom(alert)
    return None




def just_ended_window(alert: CustomerAlert, now: datetime) -> Window | None:
    """The month or custom window that has ended, if an evaluation now still judges it (`ended_window_due`: the
    watch was as it is now before it ended, and it ended within ENDED_WINDOW_GRACE or after the watch's last
    evaluation; a month watch created on April 1 says nothing of March); None otherwise (a rolling window never
    ends)."""
    if alert.window_mode == WindowMode.MONTH:
        window = _month(_month(now).start - timedelta(microseconds=1))
    elif alert.window_mode == WindowMode.CUSTOM and alert.custom_end <= now:
        window = _custom(alert)
    else:
        return None
    return window if ended_window_due(alert, window.end, now) else None


TITLE_MAX_CHARS = Notification._meta.get_field("title").max_length


def _title(name: str, what: str) -> str:
    """`<customer>'s cost reached $10.50` within the title's column: a long customer name is cut, never the figure."""
    room = TITLE_MAX_CHARS - len(what) - len("'s ")
    if len(name) > room:
        name = name[:max(room - 1, 0)] + "…"
    return f"{name}'s {what}"[:TITLE_MAX_CHARS]


def _fire(*, book: Book, alert: CustomerAlert, window: Window, value: Decimal, now: datetime) -> bool:
    """Insert the permanent firing of this window (False when it already exists), add the in-app notification
    and email the recipient on commit if they still hold a money role."""
    try:
        with transaction.atomic():
            firing = CustomerAlertFiring.objects.create(
                book=book, alert=alert, window_key=window.key, window_start=window.start, window_end=window.end,
                customer=alert.customer, metric=alert.metric, threshold_usd=alert.threshold_usd, value_usd=value,
                recipient_email=alert.recipient_email)
    except IntegrityError:
        return False
    link = customer_console_link(alert.customer)
    Notification.objects.create(
        book=book, alert=alert, firing=firing, link=link,
        title=_title(alert.customer.name, f"{alert.metric} reached {_value_shown(value, alert.threshold_usd)}"),
        body=f"Watch threshold {usd(alert.threshold_usd)} {window_phrase(alert)}; window "
             f"{clock_text(window.start)} to {clock_text(window.end)} UTC. Emailed {alert.recipient_email}.")
    customer_alert_triggered(alert, firing, now=now)
    if _money_member_email(book, alert.recipient_email) is None:
        logger.info("watch %s fired; %s is no longer a money-role member, no email sent", alert.id,
                    alert.recipient_email)
    else:
        transaction.on_commit(partial(_fired_email, alert=alert, firing=firing, link=link), robust=True)
    return True


def customer_alert_evaluate(*, book: Book, alert: CustomerAlert, now: datetime) -> int:
    """Judge one watch now (its current window, and a window that has just ended, once more over its whole span);
    how many windows fired (0 to 2)."""
    fired = 0
    ended = just_ended_window(alert, now)
    if ended is not None and not alert.firings.filter(window_key=ended.key).exists():
        fired += _judge(book=book, alert=alert, window=ended, now=now)
    window = current_window(alert, now)
    if window is not None:
        fired += _judge(book=book, alert=alert, window=window, now=now)
    return fired


def _judge(*, book: Book, alert: CustomerAlert, window: Window, now: datetime) -> bool:
    # Revenue recognizes fees by the day (and a one-time fee at its subscription's start): over the whole month it
    # would count the days still to come, and a watch would fire on the 1st for a month's fee not yet earned.
    # Judged up to now; cost is what events recorded, whatever their date.
    end = min(window.end, now) if alert.metric == AlertMetric.REVENUE else window.end
    value = customer_metric_value(book=book, customer=alert.customer, metric=alert.metric, start=window.start,
                                  end=end)
    if value >= alert.threshold_usd:
        with transaction.atomic():
            return _fire(book=book, alert=alert, window=window, value=value, now=now)
    if alert.window_mode == WindowMode.ROLLING and alert.firings.filter(window_key=window.key).exists():
        # Back under the threshold after firing: re-arm, so the next crossing is a new window.
        owned(CustomerAlert, book).filter(pk=alert.pk, rolling_armed_at=alert.rolling_armed_at) \
            .update(rolling_armed_at=now)
    return False


def customer_alerts_evaluate(*, book: Book, now: datetime) -> int:
    """Evaluate every watch of the book on a customer that is not deleted; returns how many fired."""
    fired = 0
    alerts = owned(CustomerAlert, book).select_related("customer", "book__organization") \
        .filter(customer__deleted_at__isnull=True)
    judged = []
    for alert in alerts:
        try:
            with transaction.atomic():
                fired += customer_alert_evaluate(book=book, alert=alert, now=now)
        except (DataError, ArithmeticError):
            # A value this watch cannot store or compute stops this watch alone, not the book's others after it.
            logger.exception("watch %s of book %s not judged; the book's other watches are", alert.pk, book.pk)
            continue
        judged.append(alert.pk)
    # Only once every watch is judged: a run that fails midway leaves their ended windows due for the next one.
    judged_mark(owned(CustomerAlert, book).filter(pk__in=judged), now)
    return fired


def customer_alerts_evaluate_all(*, now: datetime) -> int:
    """Scheduled job: evaluate the watches of every book."""
    book_ids = CustomerAlert.objects.values_list("book_id", flat=True).distinct()
    fired = 0
    failures = BookFailures("customer-alerts")
    for book in Book.objects.select_related("organization").filter(id__in=book_ids).order_by("pk"):
        with failures.isolated(book.pk):
            fired += customer_alerts_evaluate(book=book, now=now)
    return failures.finish(fired)


def _confirmation_email(*, alert: CustomerAlert) -> None:
    organization = alert.book.organization
    send_templated(
        template="controls/email/customer_alert_created", to=[alert.recipient_email],
        subject=f"{organization.display_name}: watching {alert.customer.name}'s {alert.metric}",
        context={"customer": alert.customer.name, "metric": alert.metric, "threshold": usd(alert.threshold_usd),
                 "window": window_phrase(alert), "link": customer_console_link(alert.customer),
                 "organization": organization.display_name, "alert_id": alert.id})


def _value_shown(value: Decimal, threshold: Decimal) -> str:
    """The value that crossed a watch's threshold, to the cent, or to the threshold's own places where it has finer
    ones: "reached $10.00" beside a threshold of $10.001 read as below it."""
    places = max(2, -Decimal(threshold).normalize().as_tuple().exponent)
    return usd(quantized(Decimal(value), Decimal(1).scaleb(-places)))


def _fired_email(*, alert: CustomerAlert, firing: CustomerAlertFiring, link: str) -> None:
    organization = alert.book.organization
    send_templated(
        template="controls/email/customer_alert_fired", to=[firing.recipient_email],
        subject=f"{organization.display_name}: {alert.customer.name}'s {firing.metric} reached "
                f"{_value_shown(firing.value_usd, firing.threshold_usd)}",
        context={"customer": alert.customer.name, "metric": firing.metric,
                 "value": _value_shown(firing.value_usd, firing.threshold_usd),
                 "threshold": usd(firing.threshold_usd), "window": window_phrase(alert), "link": link,
                 "window_start": firing.window_start, "window_end": firing.window_end,
                 "organization": organization.display_name})
