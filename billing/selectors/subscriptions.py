from billing.models import Subscription, SubscriptionChange
from core.scoping import get_owned, owned


def subscription_list(*, book):
    return owned(Subscription, book).order_by("-created_at", "id")


def subscription_get(*, book, subscription_id) -> Subscription:
    return get_owned(Subscription, book, subscription_id)


def subscription_changelog(*, book, subscription_id):
    """Newest entries first."""
    subscription = get_owned(Subscription, book, subscription_id)
    return owned(SubscriptionChange, book).filter(subscription=subscription).order_by("-created_at", "-id")
