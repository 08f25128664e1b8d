"""The client's former single module, kept so that `from agentbilling.client import ...` goes on working: the
clients live in `agentbilling._client`, each resource in `agentbilling.resources.<name>`, the typed answers in
`agentbilling.models`."""
from agentbilling._client import AsyncClient, Client
from agentbilling.pagination import Page
from agentbilling.resources import (Agents, Analytics, CreditBalances, CustomerAlerts, Customers, Events, Invoices,
                                    Jobs, MatterRules, Matters, Plans, PortalSessions, Services, Signals,
                                    SpendControls, Strategies, Subscriptions, Usage, WebhookEndpoints)
from agentbilling.resources._base import MAX_RECORDS_PER_REQUEST, new_idempotency_key

__all__ = [
    "Agents", "Analytics", "AsyncClient", "Client", "CreditBalances", "CustomerAlerts", "Customers", "Events",
    "Invoices", "Jobs", "MAX_RECORDS_PER_REQUEST", "MatterRules", "Matters", "Page", "Plans", "PortalSessions",
    "Services", "Signals", "SpendControls", "Strategies", "Subscriptions", "Usage", "WebhookEndpoints",
    "new_idempotency_key",
]
