from billing.models import Subscription, SubscriptionChange
from customers.models import Customer
from core.scoping import get_owned, owned


def subscription_list(*, book):
    return owned(Subscription, book).order_by("-created_at", "id")


def subscription_get(*, book, subscription_id) -> Subscription:
    return get_owned(Subscription, book, subscription_id)


def subscription_changelog(*, book, subscription_id):
    """Newest entries first."""
    subscription = get_owned(Subscription, book, subscription_id)
    return owned(SubscriptionChange, book).filter(subscription=subscription).order_by("-created_at", "-id")


def billed_customers_locked(*, book, customer_ids) -> set:
    """Of these customers (not internal yet), the ids of those the book bills: with a subscription (an invoice has
    one). Their rows are locked first, in id order, as `subscription_create` locks a customer before it checks it is
    not internal: neither can pass its check while the other makes it false. `FOR NO KEY UPDATE`, as the mark's own
    update takes: it waits for `subscription_create`'s `FOR UPDATE` but not for the key-share locks of rows that refer
    to the customer (a price change's re-pricing writes rollup rows while it holds the price lock this batch takes
    next: a stronger lock here deadlocked them). For the rare batch that names an existing customer under the internal
    coding agent, which must not turn a billed customer internal (that would take its invoices out of every revenue
    figure after the fact)."""
    ids = sorted(customer_ids, key=str)
    list(owned(Customer, book).select_for_update(no_key=True).filter(pk__in=ids).order_by("pk")
         .values_list("pk", flat=True))
    return set(owned(Subscription, book).filter(customer_id__in=ids).values_list("customer_id", flat=True))
