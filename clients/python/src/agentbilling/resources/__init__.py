"""The /v1 resources, a module each. Every class serves both clients (see `resources._base`)."""
from agentbilling.resources.agents import Agents
from agentbilling.resources.analytics import Analytics
from agentbilling.resources.credit_balances import CreditBalances
from agentbilling.resources.customer_alerts import CustomerAlerts
from agentbilling.resources.customers import Customers
from agentbilling.resources.events import Events
from agentbilling.resources.invoices import Invoices
from agentbilling.resources.jobs import Jobs
from agentbilling.resources.keys import Keys
from agentbilling.resources.matter_rules import MatterRules
from agentbilling.resources.matters import Matters
from agentbilling.resources.plans import Plans
from agentbilling.resources.portal_sessions import PortalSessions
from agentbilling.resources.services import Services
from agentbilling.resources.signals import Signals
from agentbilling.resources.spend_controls import SpendControls
from agentbilling.resources.strategies import Strategies
from agentbilling.resources.subscriptions import Subscriptions
from agentbilling.resources.usage import Usage
from agentbilling.resources.webhook_endpoints import WebhookEndpoints

# The client attribute each resource is reached by, in the order the docs list them.
RESOURCES = {
    "usage": Usage, "events": Events, "customers": Customers, "agents": Agents, "signals": Signals,
    "plans": Plans, "subscriptions": Subscriptions, "invoices": Invoices, "credit_balances": CreditBalances,
    "analytics": Analytics, "portal_sessions": PortalSessions, "services": Services, "matters": Matters,
    "matter_rules": MatterRules, "jobs": Jobs, "spend_controls": SpendControls, "customer_alerts": CustomerAlerts,
    "webhook_endpoints": WebhookEndpoints,
}

__all__ = [
    "Agents", "Analytics", "CreditBalances", "CustomerAlerts", "Customers", "Events", "Invoices", "Jobs", "Keys",
    "MatterRules", "Matters", "Plans", "PortalSessions", "RESOURCES", "Services", "Signals", "SpendControls",
    "Strategies", "Subscriptions", "Usage", "WebhookEndpoints",
]
