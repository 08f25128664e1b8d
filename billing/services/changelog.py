"""The subscription changelog: who changed what, with before/after values as the API renders them."""
from datetime import datetime
from decimal import Decimal
from uuid import UUID

from billing.models import PricingStrategy, Subscription, SubscriptionChange
from core.scoping import owned
from core.serialization import decimal_number

SYSTEM_ACTOR = "system"
Kind = SubscriptionChange.Kind

# The strategy fields that decide what a subscription is charged (name and tags are labels only).
PRICING_TERMS = {
    "agentId": "agent_id", "chargeType": "charge_type", "signalId": "signal_id", "pricingModel": "pricing_model",
    "billingFrequency": "billing_frequency", "tiers": "tiers", "rate": "rate",
    "minimumCommitment": "minimum_commitment", "active": "active",
}


def json_value(value):
    """A model value as the API renders it: ids and instants as text, decimals as JSON numbers."""
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, Decimal):
        return decimal_number(value)
    return value


def diff(before: dict, after: dict) -> dict:
    """{field: {before, after}} for every field whose value differs."""
    return {field: {"before": before.get(field), "after": after.get(field)}
            for field in {**before, **after} if before.get(field) != after.get(field)}


def changelog_add(*, subscription: Subscription, kind: str, summary: str, changes: dict, actor: str,
                  strategy: PricingStrategy | None = None) -> SubscriptionChange:
    return SubscriptionChange.objects.create(book_id=subscription.book_id, subscription=subscription, kind=kind,
                                             summary=summary[:500], changes=changes, actor=actor, strategy=strategy)


def pricing_terms(strategy: PricingStrategy | None) -> dict:
    """The strategy's charging terms, camelCase, JSON-ready; empty for no strategy (before a create)."""
    if strategy is None:
        return {}
    terms = {name: json_value(getattr(strategy, attribute)) for name, attribute in PRICING_TERMS.items()}
    terms["tiers"] = [{key: None if tier[key] is None else decimal_number(Decimal(tier[key]))
                       for key in ("lower", "upper", "rate")} for tier in strategy.tiers]
    return terms


def price_update_record(*, strategy: PricingStrategy, before: dict, after: dict, summary: str, actor: str,
                        extra: dict | None = None) -> int:
    """A `price_update` entry on every subscription the strategy prices (its plan, with the strategy's agent
    before or after the change). Nothing is written when no charging term changed. Returns the entry count."""
    changes = {**diff(before, after), **(extra or {})}
    if not changes:
        return 0
    agent_ids = {value for value in (before.get("agentId"), after.get("agentId")) if value}
    subscriptions = owned(Subscription, strategy.book_id).filter(plan_id=strategy.plan_id, agent_id__in=agent_ids)
    entries = [SubscriptionChange(book_id=strategy.book_id, subscription=subscription, kind=Kind.PRICE_UPDATE,
                                  summary=summary[:500], changes=changes, actor=actor, strategy=strategy)
               for subscription in subscriptions.only("id")]
    SubscriptionChange.objects.bulk_create(entries)
    return len(entries)
