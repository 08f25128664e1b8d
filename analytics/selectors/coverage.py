"""Ledger segments for the analytics reads, from the pricing seam's attribution rules
(`billing.pricing.attribution`): cost segments (an event's cost belongs to the subscription whose life
holds it) and billing segments (the events a subscription bills, per signal and terms piece)."""
from billing.models import Subscription
from billing.pricing.attribution import cost_intervals
from config.core.scoping import owned
from customers.usage_sums import Segment


def book_segments(*, book, customer_id=None) -> dict:
    """Subscription id -> the cost segments of every subscription of the book (or of one customer), each
    labelled with the subscription's id."""
    subscriptions = owned(Subscription, book).only("id", "customer_id", "agent_id", "start_date", "end_date",
                                                  "is_forever")
    if customer_id is not None:
        subscriptions = subscriptions.filter(customer_id=customer_id)
    return {subscription_id: [Segment(customer_id, agent_id, lo, hi, str(subscription_id))
                              for customer_id, agent_id, lo, hi in intervals]
            for subscription_id, intervals in cost_intervals(subscriptions).items()}
