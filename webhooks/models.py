"""Outbound webhooks of one book: the endpoints an operator registers, the events written in the same
transaction as the change they report (the outbox), one delivery per event and endpoint, and every attempt of
a delivery (webhooks/delivery.py sends them)."""
from django.db import models
from django.db.models import Q

from core.exact_json import ExactJSONField
from core.models import OrgOwned


class EventType(models.TextChoices):
    INVOICE_CREATED = "invoice.created", "A draft invoice was generated"
    INVOICE_ISSUED = "invoice.issued", "An invoice was finalized (by a send or at the end of its period)"
    INVOICE_SENT = "invoice.sent", "An invoice was emailed to the customer"
    INVOICE_PAID = "invoice.paid", "An invoice was paid in full"
    INVOICE_OVERDUE = "invoice.overdue", "An issued invoice passed its due date unpaid"
    INVOICE_VOIDED = "invoice.voided", "An invoice was voided"
    INVOICE_REFUNDED = "invoice.refunded", "A paid invoice's payments were all refunded"
    PAYMENT_SUCCEEDED = "payment.succeeded", "A payment was recorded"
    PAYMENT_REFUNDED = "payment.refunded", "A payment was refunded, in part or in full"
    CREDIT_POOL_THRESHOLD_CROSSED = "credit_pool.threshold_crossed", "A credit pool passed 50%, 80%, 95% or empty"
    SPEND_CAP_THRESHOLD_CROSSED = "spend_cap.threshold_crossed", "Spend reached one of a cap's alert thresholds"
    CUSTOMER_ALERT_TRIGGERED = "customer_alert.triggered", "A customer watch fired"
    SUBSCRIPTION_CREATED = "subscription.created", "A subscription was created"
    SUBSCRIPTION_ENDED = "subscription.ended", "A subscription ended"
    SUBSCRIPTION_PLAN_CHANGED = "subscription.plan_changed", "A subscription moved to another plan"
    SUBSCRIPTION_DELETED = "subscription.deleted", ("A subscription that had not started was deleted (its scheduled "
                                                    "plan change was replaced or withdrawn)")
    JOB_SUCCEEDED = "job.succeeded", "A long job finished"
    JOB_FAILED = "job.failed", "A long job failed"
    ENDPOINT_TEST = "webhook.test", "A test send asked for from the API or the console"


class WebhookEndpoint(OrgOwned):
    url = models.URLField(max_length=2000)
    description = models.CharField(max_length=500, blank=True)
    # Event types it receives; empty: every type (test sends always).
    event_types = ExactJSONField(default=list, blank=True)
    enabled = models.BooleanField(default=True)
    # The raw secret is kept (deliveries are signed with it); only the create and rotate answers show it.
    secret = models.CharField(max_length=100)
    # After a rotation the previous secret signs too, until it expires, so receivers can switch over.
    previous_secret = models.CharField(max_length=100, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    # Secrets replaced before the previous one and still inside their window (rotated twice within it):
    # [[secret, expiry as ISO 8601], ...]. Each keeps signing until its own expiry, as its rotation promised.
    earlier_secrets = ExactJSONField(default=list, blank=True)
    # Health: the first failed attempt since the last delivered one; cleared by a success.
    failing_since = models.DateTimeField(null=True, blank=True)
    last_success_at = models.DateTimeField(null=True, blank=True)
    last_failure_at = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.CharField(max_length=300, blank=True)
    created_by = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["book", "enabled"], name="webhook_endpoint_book_enabled")]

    def __str__(self):
        return self.url

    def receives(self, event_type: str) -> bool:
        return not self.event_types or event_type in self.event_types


class WebhookEvent(OrgOwned):
    """One thing that happened in the book, as its envelope says: `{id, type, createdAt, data}`."""

    type = models.CharField(max_length=64, choices=EventType.choices)
    # The object as the API rendered it, kept as that JSON text: every delivery and replay sends these very bytes
    # (key order and number digits included), which a jsonb column would reorder.
    data_json = models.TextField()

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["book", "created_at"], name="webhook_event_book_created")]

    def __str__(self):
        return f"{self.type} {self.pk}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"  # to be attempted at next_attempt_at
    DELIVERED = "delivered"  # a 2xx answer
    FAILED = "failed"  # retries exhausted, or the endpoint was disabled or deleted meanwhile


class WebhookDelivery(OrgOwned):
    """An event on its way to one endpoint. The webhook-id of every attempt is the event's id."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(WebhookEvent, on_delete=models.CASCADE, related_name="deliveries")
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)  # at most MOST_ATTEMPTS (webhooks/services.py)
    # Pending: when the next attempt is due (an attempt in flight holds it a lease ahead); else null.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    # Attempts counted from this number on follow the retry schedule afresh (a resend or a replay re-arms it).
    schedule_start = models.PositiveSmallIntegerField(default=0)

    class Meta:
        verbose_name_plural = "webhook deliveries"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["endpoint", "event"], name="webhook_delivery_endpoint_event_uniq"),
            models.CheckConstraint(condition=Q(status="pending", next_attempt_at__isnull=False) | ~Q(status="pending"),
                                   name="webhook_delivery_pending_has_due"),
        ]
        indexes = [
            # The sweep: pending deliveries by when they are due.
            models.Index(fields=["next_attempt_at"], name="webhook_delivery_due", condition=Q(status="pending")),
            models.Index(fields=["endpoint", "-created_at"], name="webhook_delivery_endpoint_log"),
        ]

    def __str__(self):
        return f"{self.event.type} to {self.endpoint.url} ({self.status})"


class WebhookAttempt(OrgOwned):
    """One POST of a delivery, as the delivery log shows it."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveSmallIntegerField()
    succeeded = models.BooleanField(default=False)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.TextField(blank=True, help_text="The first bytes of the answer.")
    error = models.CharField(max_length=500, blank=True, help_text="Why no answer was read (refused, timeout...).")
    latency_ms = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_number_uniq")]

    def __str__(self):
        return f"attempt {self.number} of {self.delivery_id}"
