from django.db.models import Prefetch

from core.scoping import get_owned, owned
from webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint


def webhook_endpoint_list(*, book):
    return owned(WebhookEndpoint, book).order_by("-created_at", "-id")


def webhook_endpoint_get(*, book, endpoint_id) -> WebhookEndpoint:
    return get_owned(WebhookEndpoint, book, endpoint_id)


def webhook_delivery_list(*, book, endpoint_id, status: str | None = None):
    """The endpoint's delivery log, newest first, with each delivery's event and attempts."""
    endpoint = webhook_endpoint_get(book=book, endpoint_id=endpoint_id)
    deliveries = (owned(WebhookDelivery, book).filter(endpoint=endpoint).select_related("event")
                  .prefetch_related(Prefetch("attempt_log", queryset=WebhookAttempt.objects.order_by("-number"))))
    if status:
        deliveries = deliveries.filter(status=status)
    return deliveries.order_by("-created_at", "-id")


def webhook_delivery_get(*, book, delivery_id) -> WebhookDelivery:
    return get_owned(WebhookDelivery, book, delivery_id, queryset=webhook_delivery_list_base(book))


def webhook_delivery_list_base(book):
    return (owned(WebhookDelivery, book).select_related("event")
            .prefetch_related(Prefetch("attempt_log", queryset=WebhookAttempt.objects.order_by("-number"))))
