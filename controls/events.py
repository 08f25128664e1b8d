"""Spend controls' outbound events (webhooks, docs/webhooks.md), written in the transaction that records
the alert, `data` the object as the API shows it plus what the crossing was."""
from datetime import datetime

from controls.models import CustomerAlert, CustomerAlertFiring, SpendCap, SpendCapAlert
from controls.serializers import CustomerAlertOut, SpendCapOut
from webhooks.events import emit
from webhooks.models import EventType


def spend_cap_threshold_crossed(cap: SpendCap, alert: SpendCapAlert, *, now: datetime | None = None) -> None:
    """The cap as `GET /v1/control/caps` lists it, with the threshold reached, the spend and the window."""
    emit(cap.book_id, EventType.SPEND_CAP_THRESHOLD_CROSSED, {
        "cap": SpendCapOut(cap).data, "thresholdPercent": alert.threshold_percent, "spentUsd": alert.spent_usd,
        "amountUsd": alert.amount_usd, "windowStart": alert.window_start, "windowEnd": alert.window_end}, now=now)


def customer_alert_triggered(alert: CustomerAlert, firing: CustomerAlertFiring, *,
                             now: datetime | None = None) -> None:
    """The watch as `GET /v1/customer-alerts` lists it, with the value that crossed its threshold and the window."""
    emit(alert.book_id, EventType.CUSTOMER_ALERT_TRIGGERED, {
        "alert": CustomerAlertOut(alert).data, "valueUsd": firing.value_usd, "thresholdUsd": firing.threshold_usd,
        "windowStart": firing.window_start, "windowEnd": firing.window_end}, now=now)
