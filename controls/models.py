"""Spend caps on internal coding-agent spend, developer devices, and customer watches.

Every "only once" here is refereed by a unique row: a cap alert sent for one threshold of one window
(`SpendCapAlert`), a watch fired for one window (`CustomerAlertFiring`).
"""
from django.db import models
from django.db.models import Q

from core.exact_json import ExactJSONField
from core.models import OrgOwned
from core.money import SumField, TermField
from controls.sentences import cap_sentence

DEFAULT_ALERT_THRESHOLDS = (50, 80, 100)
PROVIDER_SCOPE_ALL = "all"  # caps cover every AI tool for now


def default_alert_thresholds() -> list[int]:
    return list(DEFAULT_ALERT_THRESHOLDS)


class CapScope(models.TextChoices):
    ORG = "org"  # the whole team's ceiling
    DEV = "dev"  # one developer, by their email


class CapPeriod(models.TextChoices):
    DAY = "day"
    WEEK = "week"  # weeks start Monday 00:00 UTC
    MONTH = "month"


class CapMode(models.TextChoices):
    TRACK = "track"  # alert emails only
    ENFORCE = "enforce"  # armed machines also refuse tool calls at the cap


class SpendCap(OrgOwned):
    scope = models.CharField(max_length=8, choices=CapScope.choices)
    scope_value = models.CharField(max_length=255, null=True, blank=True,
                                   help_text="The developer's email (their customerExternalId) for a dev cap.")
    provider_scope = models.CharField(max_length=16, default=PROVIDER_SCOPE_ALL)
    amount_usd = TermField()
    period = models.CharField(max_length=8, choices=CapPeriod.choices)
    mode = models.CharField(max_length=8, choices=CapMode.choices)
    cool_off_hours = models.PositiveIntegerField(null=True, blank=True)
    alert_thresholds = ExactJSONField(default=default_alert_thresholds)
    created_by_user_id = models.CharField(max_length=64)
    # Start of the current cool-off of an enforce cap (the check that saw it reached); see check_for_developer.
    tripped_at = models.DateTimeField(null=True, blank=True)
    # When an evaluation last judged its alert ladder (null: not yet, read as its creation). A window that ended after
    # it had its last part judged by no run, so the next run judges it however late that is (controls/selectors.py).
    judged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["scope", "scope_value"]
        constraints = [
            models.UniqueConstraint(fields=["book"], condition=Q(scope="org"), name="spend_cap_org_uniq"),
            models.UniqueConstraint(fields=["book", "scope_value"], condition=Q(scope="dev"),
                                    name="spend_cap_dev_uniq"),
            models.CheckConstraint(condition=Q(scope="org", scope_value__isnull=True)
                                   | Q(scope="dev", scope_value__isnull=False),
                                   name="spend_cap_scope_value_matches_scope"),
        ]

    def __str__(self):
        return self.sentence

    @property
    def sentence(self) -> str:
        return cap_sentence(scope=self.scope, scope_value=self.scope_value, amount_usd=self.amount_usd,
                            period=self.period, mode=self.mode, cool_off_hours=self.cool_off_hours,
                            alert_thresholds=self.alert_thresholds)


class SpendCapAlert(OrgOwned):
    """One alert-ladder email: a threshold of a cap crossed in one window (at most one row each)."""

    cap = models.ForeignKey(SpendCap, on_delete=models.CASCADE, related_name="alerts")
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    threshold_percent = models.PositiveIntegerField()
    amount_usd = TermField(help_text="The cap amount when the threshold was crossed.")
    spent_usd = SumField(help_text="Spend in the window when the crossing was seen.")
    recipients = ExactJSONField(default=list)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            # The window's end too: a cap moved from a day to a month on the 1st has a new window from the same
            # instant, whose ladder is its own.
            models.UniqueConstraint(fields=["cap", "window_start", "window_end", "threshold_percent"],
                                    name="spend_cap_alert_once_per_window"),
        ]

    def __str__(self):
        return f"{self.threshold_percent}% of {self.cap} from {self.window_start:%Y-%m-%d}"


class Device(OrgOwned):
    """A developer's machine as last reported by its heartbeat (feeds coverage)."""

    customer_external_id = models.CharField(max_length=255, help_text="The developer's email.")
    device_id = models.CharField(max_length=255)
    armed = models.BooleanField()
    last_seen_at = models.DateTimeField()

    class Meta:
        ordering = ["-last_seen_at"]
        constraints = [
            models.UniqueConstraint(fields=["book", "customer_external_id", "device_id"], name="device_uniq"),
        ]
        indexes = [models.Index(fields=["book", "last_seen_at"], name="device_book_seen")]

    def __str__(self):
        return f"{self.device_id} of {self.customer_external_id}"


class AlertMetric(models.TextChoices):
    COST = "cost"
    REVENUE = "revenue"


class WindowMode(models.TextChoices):
    MONTH = "month"  # current UTC calendar month
    ROLLING = "rolling"  # the last 30 days
    CUSTOM = "custom"  # a fixed range


class CustomerAlert(OrgOwned):
    """A watch: email a member when a customer's cost or revenue in a window reaches a threshold."""

    customer = models.ForeignKey("customers.Customer", on_delete=models.CASCADE, related_name="+")
    metric = models.CharField(max_length=8, choices=AlertMetric.choices)
    threshold_usd = TermField()
    window_mode = models.CharField(max_length=8, choices=WindowMode.choices)
    custom_start = models.DateTimeField(null=True, blank=True)
    custom_end = models.DateTimeField(null=True, blank=True, help_text="Exclusive end of a custom window.")
    recipient_email = models.EmailField(max_length=255)
    created_by_user_id = models.CharField(max_length=64)
    # Rolling windows fire once per crossing: the firing of the current arming is keyed by this instant,
    # and it moves forward when an evaluation sees the value below the threshold after a firing.
    rolling_armed_at = models.DateTimeField(null=True, blank=True)
    # When an evaluation last judged this watch (null: not yet, read as its creation), as a spend cap's `judged_at`.
    judged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["book", "customer", "metric", "threshold_usd", "window_mode", "custom_start", "custom_end",
                        "recipient_email"],
                nulls_distinct=False, name="customer_alert_identical_uniq"),
            models.CheckConstraint(condition=Q(window_mode="custom", custom_start__isnull=False,
                                               custom_end__isnull=False, custom_end__gt=models.F("custom_start"))
                                   | (~Q(window_mode="custom") & Q(custom_start__isnull=True, custom_end__isnull=True)),
                                   name="customer_alert_custom_dates_match_mode"),
        ]
        verbose_name = "customer alert"

    def __str__(self):
        return f"{self.metric} of {self.customer} >= ${self.threshold_usd:.2f} ({self.window_mode})"


class CustomerAlertFiring(OrgOwned):
    """The permanent record that a watch fired for one window; it outlives the watch."""

    alert = models.ForeignKey(CustomerAlert, on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="firings")
    window_key = models.CharField(max_length=128)
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    customer = models.ForeignKey("customers.Customer", on_delete=models.CASCADE, related_name="+")
    metric = models.CharField(max_length=8, choices=AlertMetric.choices)
    threshold_usd = TermField()
    value_usd = SumField()  # a sum of any number of events' exact amounts: unbounded
    recipient_email = models.EmailField(max_length=255)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["alert", "window_key"], name="customer_alert_firing_once_per_window"),
        ]

    def __str__(self):
        return f"{self.metric} of {self.customer} reached ${self.value_usd:.2f} ({self.window_key})"


class Notification(OrgOwned):
    """An in-app notice for the organization's operators (shown in the operator console)."""

    title = models.CharField(max_length=255)
    body = models.TextField()
    link = models.CharField(max_length=1024, help_text="Where the notice points, e.g. the customer's console page.")
    alert = models.ForeignKey(CustomerAlert, on_delete=models.CASCADE, null=True, blank=True,
                              related_name="notifications")
    firing = models.ForeignKey(CustomerAlertFiring, on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="+")

    class Meta:
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["book", "-created_at"], name="notification_book_created")]

    def __str__(self):
        return self.title
