from django.db.models import Exists, OuterRef, Q

from billing.models import Invoice, Subscription, SubscriptionChange
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


def billed_customer_external_ids(*, book, external_ids) -> set[str]:
    """Of these external ids, those naming a customer (not deleted, not internal) with a subscription or an invoice:
    a customer the book bills, which usage under the internal coding agent must not turn internal (that would take
    its invoices out of every revenue figure after the fact)."""
    return set(owned(Customer, book)
               .filter(external_id__in=list(external_ids), deleted_at__isnull=True, is_internal=False)
               .filter(Q(Exists(Subscription.objects.filter(customer=OuterRef("pk"))))
                       | Q(Exists(Invoice.objects.filter(customer=OuterRef("pk")))))
               .values_list("external_id", flat=True))
