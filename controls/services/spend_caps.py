"""Writes of spend controls: caps and their ceiling rule, device heartbeats, the pre-tool-call check and the
alert ladder. The API itself never blocks anything: armed machines act on the check's answer."""
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from functools import partial

from django.db import DataError, IntegrityError, transaction
from django.db.models import Max, Q

from accounts.models import Book
from accounts.selectors import billing_recipients
from core.emails import send_templated
from core.errors import BadRequest, Conflict
from core.jobs import BookFailures
from core.money import SUMS, ZERO
from core.scoping import get_owned, owned
from controls.events import spend_cap_threshold_crossed
from controls.models import CapMode, CapScope, Device, SpendCap, SpendCapAlert
from controls.selectors import (ENDED_WINDOW_GRACE, ended_window_due, period_window, spend_by_developer,
                                spend_totals)
from controls.services.judged import judged_mark
from controls.sentences import usd

logger = logging.getLogger("billing.controls")


def _locked_org_cap(book: Book) -> SpendCap | None:
    # Every rule about the ceiling locks the org cap row first, so a dev cap cannot slip past a concurrent
    # change or deletion of the org cap.
    return owned(SpendCap, book).select_for_update().filter(scope=CapScope.ORG).first()


def _check_under_ceiling(amount_usd: Decimal, ceiling: SpendCap | None) -> None:
    if ceiling is None:
        raise BadRequest(["scope: A dev cap needs an org cap: create the whole-team cap first."])
    if amount_usd > ceiling.amount_usd:
        raise BadRequest([f"amountUsd: A dev cap cannot exceed the org cap of {usd(ceiling.amount_usd)}."])


def spend_cap_create(*, book: Book, created_by_user_id: str, scope: str, amount_usd: Decimal, period: str,
                     mode: str, scope_value: str | None = None, provider_scope: str = "all",
                     cool_off_hours: int | None = None, alert_thresholds: list[int] | None = None) -> SpendCap:
    """One cap per scope and target (409); a dev cap needs the org cap and stays at or under it (400)."""
    fields = dict(scope=scope, scope_value=scope_value, provider_scope=provider_scope, amount_usd=amount_usd,
                  period=period, mode=mode, cool_off_hours=cool_off_hours, created_by_user_id=created_by_user_id)
    if alert_thresholds is not None:
        fields["alert_thresholds"] = alert_thresholds
    with transaction.atomic():
        ceiling = _locked_org_cap(book)
        if scope == CapScope.DEV:
            _check_under_ceiling(amount_usd, ceiling)
        try:
            with transaction.atomic():
                return SpendCap.objects.create(book=book, **fields)
        except IntegrityError:
            target = "the whole team" if scope == CapScope.ORG else scope_value
            raise Conflict(f"A cap for {target} already exists; change it with PATCH /v1/control/caps/{{id}}.")


@transaction.atomic
def spend_cap_update(*, book: Book, cap_id, **changes) -> SpendCap:
    """Change amount, period, mode, cool-off or thresholds; the ceiling rule holds both ways. An edit ends a
    running cool-off: the operator has reconsidered the cap."""
    ceiling = _locked_org_cap(book)
    cap = get_owned(SpendCap, book, cap_id, queryset=owned(SpendCap, book).select_for_update())
    amount_usd = changes.get("amount_usd", cap.amount_usd)
    if cap.scope == CapScope.DEV:
        _check_under_ceiling(amount_usd, ceiling)
    else:
        highest_dev = owned(SpendCap, book).filter(scope=CapScope.DEV).aggregate(top=Max("amount_usd"))["top"]
        if highest_dev is not None and amount_usd < highest_dev:
            raise BadRequest([f"amountUsd: A developer's cap is {usd(highest_dev)}; the org cap cannot go below it."])
    for field, value in changes.items():
        setattr(cap, field, value)
    cap.tripped_at = None
    cap.save()
    return cap


@transaction.atomic
def spend_cap_delete(*, book: Book, cap_id) -> str:
    """Delete a cap; returns its sentence. The org cap stays while dev caps depend on it (400)."""
    _locked_org_cap(book)
    cap = get_owned(SpendCap, book, cap_id)
    if cap.scope == CapScope.ORG and owned(SpendCap, book).filter(scope=CapScope.DEV).exists():
        raise BadRequest(["The org cap is the ceiling of developer caps: delete the dev caps first."])
    sentence = cap.sentence
    cap.delete()
    return sentence


def device_heartbeat(*, book: Book, customer_external_id: str, device_id: str, armed: bool, now: datetime) -> Device:
    """Record a machine's check-in (one row per developer and device, upserted in one statement)."""
    Device.objects.bulk_create(
        [Device(book=book, customer_external_id=customer_external_id, device_id=device_id, armed=armed,
                last_seen_at=now)],
        update_conflicts=True, unique_fields=["book", "customer_external_id", "device_id"],
        update_fields=["armed", "last_seen_at", "updated_at"])
    return owned(Device, book).get(customer_external_id=customer_external_id, device_id=device_id)


@dataclass(frozen=True)
class CheckAnswer:
    allowed: bool
    reason: str | None = None
    cap_id: str | None = None
    cool_off_until: datetime | None = None


def _spent_against(cap: SpendCap, book: Book, start: datetime, end: datetime) -> Decimal:
    developer = cap.scope_value if cap.scope == CapScope.DEV else None
    spent = spend_totals(book=book, start=start, end=end, customer_external_id=developer).spent_usd
    return spent if spent is not None else ZERO


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def _cool_off_end(cap: SpendCap) -> datetime | None:
    if not cap.cool_off_hours or cap.tripped_at is None:
        return None
    return cap.tripped_at + timedelta(hours=cap.cool_off_hours)


def _start_cool_off(cap: SpendCap, now: datetime) -> datetime | None:
    """Record the trip (unless another check just did) and return when the cool-off ends."""
    if not cap.cool_off_hours:
        return None
    expired = now - timedelta(hours=cap.cool_off_hours)
    SpendCap.objects.filter(Q(tripped_at__isnull=True) | Q(tripped_at__lte=expired), pk=cap.pk).update(tripped_at=now)
    cap.refresh_from_db(fields=["tripped_at"])
    return _cool_off_end(cap)


def spend_check(*, book: Book, customer_external_id: str, now: datetime) -> CheckAnswer:
    """May this developer's armed machine make a tool call now? Refused while an enforce cap (their own, then
    the org cap) is reached in its current window, or while that cap cools off after a trip: the refusal
    then holds until `coolOffUntil` even if the window resets meanwhile."""
    caps = [cap for cap in (owned(SpendCap, book).filter(mode=CapMode.ENFORCE, scope=CapScope.DEV,
                                                         scope_value=customer_external_id).first(),
                            owned(SpendCap, book).filter(mode=CapMode.ENFORCE, scope=CapScope.ORG).first())
            if cap is not None]
    for cap in caps:
        target = "the whole team" if cap.scope == CapScope.ORG else cap.scope_value
        cool_off_end = _cool_off_end(cap)
        if cool_off_end is not None and now < cool_off_end:
            reason = (f"Cooling off after AI tool spend for {target} reached its cap of {usd(cap.amount_usd)} per "
                      f"{cap.period}; calls are refused until {iso(cool_off_end)}.")
            return CheckAnswer(False, reason, str(cap.id), cool_off_end)
        start, end = period_window(cap.period, now)
        spent = _spent_against(cap, book, start, end)
        if spent >= cap.amount_usd:
            reason = (f"AI tool spend for {target} this {cap.period} is {usd(spent)}, at or over its cap of "
                      f"{usd(cap.amount_usd)}; the window resets at {iso(end)}.")
            return CheckAnswer(False, reason, str(cap.id), _start_cool_off(cap, now))
    return CheckAnswer(True)


def _alert_email(*, cap: SpendCap, alert: SpendCapAlert, organization) -> None:
    target = "the whole team" if cap.scope == CapScope.ORG else cap.scope_value
    limit = f"{usd(alert.amount_usd)} per {cap.period}"
    send_templated(
        template="controls/email/spend_cap_alert", to=alert.recipients,
        subject=f"{organization.display_name}: AI tool spend for {target} reached {alert.threshold_percent}% "
                f"of {limit}",
        context={"target": target, "threshold": alert.threshold_percent, "spent": usd(alert.spent_usd),
                 "limit": limit, "window_start": alert.window_start, "window_end": alert.window_end,
                 "sentence": cap.sentence, "enforce": cap.mode == CapMode.ENFORCE,
                 "organization": organization.display_name,
                 "reason": "the billing email" if organization.billing_email else "an owner or finance member"})


def _send_alert_once(*, book: Book, cap: SpendCap, threshold: int, spent: Decimal, window: tuple,
                     recipients: list[str], now: datetime) -> bool:
    """Insert the sent-record of this threshold and window, then email on commit; False if already sent."""
    try:
        with transaction.atomic():
            alert = SpendCapAlert.objects.create(
                book=book, cap=cap, window_start=window[0], window_end=window[1], threshold_percent=threshold,
                amount_usd=cap.amount_usd, spent_usd=spent, recipients=recipients)
            spend_cap_threshold_crossed(cap, alert, now=now)
    except IntegrityError:
        return False
    except DataError:
        # A figure this alert cannot store stops this alert alone, not the book's other caps and windows.
        logger.exception("spend cap %s of book %s: the %s%% alert could not be stored", cap.pk, book.pk, threshold)
        return False
    # robust: a mail server failure is logged and does not stop the other books' alerts; the row stays.
    transaction.on_commit(partial(_alert_email, cap=cap, alert=alert, organization=book.organization), robust=True)
    return True


def spend_caps_evaluate(*, book: Book, now: datetime) -> int:
    """Send the alert-ladder emails due in this book: one per threshold crossed, per cap and window, in both
    modes: the window holding `now`, and those that ended and are still due (`_windows_due`). Returns how many were
    sent. Safe to run twice and concurrently."""
    caps = list(owned(SpendCap, book))
    if not caps:
        return 0
    recipients = billing_recipients(book.organization)
    sent = 0
    for period in sorted({cap.period for cap in caps}):
        of_period = [cap for cap in caps if cap.period == period]
        for window, judged in _windows_due(period, of_period, now):
            sent += _ladder(book=book, caps=judged, window=window, recipients=recipients, now=now)
    # Only once every window is judged: a run that fails midway leaves them due for the next one.
    judged_mark(owned(SpendCap, book).filter(pk__in=[cap.pk for cap in caps]), now)
    return sent


# Ended windows are judged this long after their end at most, however many runs were lost: a month of days, the
# last month, or the last few weeks.
MOST_LATE = timedelta(days=31)


def _windows_due(period: str, caps: list[SpendCap], now: datetime) -> list[tuple[tuple, list[SpendCap]]]:
    """The windows of `period` an evaluation at `now` judges, each with its caps: the one holding `now` for every
    cap, and each that has ended and is still due for some (`ended_window_due`), newest first."""
    window = period_window(period, now)
    due = [(window, caps)]
    while True:
        window = period_window(period, window[0] - timedelta(microseconds=1))
        if now - window[1] > MOST_LATE:
            break
        judged = [cap for cap in caps if ended_window_due(cap, window[1], now)]
        if not judged and now - window[1] > ENDED_WINDOW_GRACE:
            break  # the earlier windows ended before every cap's last judgement, or before it was as it is
        if judged:
            due.append((window, judged))
    return due


def _ladder(*, book: Book, caps: list[SpendCap], window: tuple, recipients: list[str], now: datetime) -> int:
    """The alert emails due for these caps (of one period) in `window`; how many were sent."""
    developers = [cap.scope_value for cap in caps if cap.scope == CapScope.DEV]
    by_developer = spend_by_developer(book=book, start=window[0], end=window[1], developers=developers)
    sent = 0
    for cap in caps:
        if cap.scope == CapScope.ORG:
            spent = _spent_against(cap, book, *window)
        else:
            spent = by_developer.get(cap.scope_value, ZERO)
        for threshold in cap.alert_thresholds:
            if SUMS.multiply(spent, 100) >= SUMS.multiply(cap.amount_usd, threshold):  # exact, as the cap's own test
                sent += _send_alert_once(book=book, cap=cap, threshold=threshold, spent=spent, window=window,
                                         recipients=recipients, now=now)
    return sent


def spend_caps_evaluate_all(*, now: datetime) -> int:
    """Scheduled job: evaluate every book that has caps."""
    book_ids = SpendCap.objects.values_list("book_id", flat=True).distinct()
    sent = 0
    failures = BookFailures("spend-cap-alerts")
    for book in Book.objects.select_related("organization").filter(id__in=book_ids).order_by("pk"):
        with failures.isolated(book.pk):
            sent += spend_caps_evaluate(book=book, now=now)
    return failures.finish(sent)
