from decimal import Decimal

from billing.models import Subscription, SubscriptionChange
from billing.pricing.engine import SubscriptionTerms
from billing.pricing.periods import Schedule, first_uncovered_day, local_date
from config.core.scoping import get_owned, owned


def subscription_list(*, book):
    return owned(Subscription, book).order_by("-created_at", "id")


def subscription_get(*, book, subscription_id) -> Subscription:
    return get_owned(Subscription, book, subscription_id)


def subscription_changelog(*, book, subscription_id):
    """Newest entries first."""
    subscription = get_owned(Subscription, book, subscription_id)
    return owned(SubscriptionChange, book).filter(subscription=subscription).order_by("-created_at", "-id")


def effective_end(subscription: Subscription):
    """The exclusive end of the subscription's life; None while it runs on (isForever ignores endDate)."""
    return None if subscription.is_forever else subscription.end_date


def schedule_of(subscription: Subscription) -> Schedule:
    """The billing rules of a subscription, as the pure period engine takes them."""
    return Schedule(anchor=subscription.start_date, cycle=subscription.billing_cycle,
                    timezone=subscription.timezone, billing_day=subscription.billing_day,
                    custom_cycle_days=subscription.custom_cycle_days, end=effective_end(subscription))


def subscription_terms(subscription: Subscription) -> SubscriptionTerms:
    """The subscription as the pricing engine takes it: the local days it covers, `[startDate's day,
    endDate)`. The end is exclusive as stored (docs/decisions/plans-and-subscriptions.md); an end inside a
    day covers that day, as a start inside a day does."""
    timezone = subscription.timezone
    end = effective_end(subscription)
    return SubscriptionTerms(start=local_date(subscription.start_date, timezone),
                             end=None if end is None else first_uncovered_day(end, timezone),
                             billing_cycle=subscription.billing_cycle, seats_count=Decimal(subscription.seats_count),
                             prorated_amount=subscription.prorated_amount)
