"""What the demo book holds, written as the API's request bodies (camelCase), so the seed parses them with the
API's own serializers: the seller's billing profile, agents and their signals, customers, plans with every
pricing model and charge type, subscriptions, a matter with its routing rule, spend caps and a watch.

Ids are filled in by `seed.py` (an agent is named by its code, a signal by its shortName, a plan by its name).
"""
from dataclasses import dataclass, field

ORGANIZATION = "Demo Organization"
OWNER_EMAIL = "demo@example.com"
KEY_NAME = "seed_demo"

# Printed on the demo's invoices (only where the organization's own profile is blank).
BILLING_PROFILE = {
    "business_name": "Demo Agents Inc.",
    "address": "500 Market Street, Suite 200\nSan Francisco, CA 94105\nUnited States",
    "tax_id": "US 12-3456789",
    "sender_name": "Demo Agents Billing",
    "payment_instructions": "By bank transfer to Demo Agents Inc., account 000123456789, routing 110000000; put the "
                            "invoice number in the reference.",
}


@dataclass(frozen=True)
class DemoAgent:
    body: dict  # AgentWriteIn
    signals: list[dict]  # SignalFieldsIn each


AGENTS = [
    DemoAgent({"name": "Support Assistant", "agentCode": "support-bot",
               "description": "Answers customer support tickets in chat and email."},
              [{"name": "Resolved tickets", "shortName": "tickets_resolved", "type": "usage"},
               {"name": "Conversations", "shortName": "conversations", "type": "volume"}]),
    DemoAgent({"name": "Research Agent", "agentCode": "research-agent",
               "description": "Writes sourced research reports from web searches."},
              [{"name": "Research reports", "shortName": "reports_generated", "type": "usage"},
               {"name": "Embedding jobs", "shortName": "embedding_jobs", "type": "volume"}]),
    DemoAgent({"name": "Voice Agent", "agentCode": "voice-agent",
               "description": "Takes phone calls: speech to text, an LLM, text to speech."},
              [{"name": "Call minutes", "shortName": "call_minutes", "type": "usage"}]),
    DemoAgent({"name": "Contract Reviewer", "agentCode": "contract-reviewer",
               "description": "Reviews contracts and flags risky clauses for a law firm."},
              [{"name": "Reviewed documents", "shortName": "documents_reviewed", "type": "usage"}]),
]


def _customer(external_id: str, name: str, city: str, state: str, country: str = "US", **fields) -> dict:
    domain = f"{external_id}.example.com"
    return {"externalId": external_id, "name": name, "email": f"billing@{domain}",
            "billingContactName": "Accounts Payable", "billingContactEmail": f"ap@{domain}",
            "addressLine1": "1 Main Street", "city": city, "state": state, "country": country, **fields}


# example.com addresses (RFC 2606): the invoice emails the seed sends go nowhere real.
CUSTOMERS = [
    _customer("globex", "Globex Corporation", "Springfield", "OR", timezone="America/Los_Angeles"),
    _customer("initech", "Initech", "Austin", "TX", netTerms=15),
    _customer("umbrella-health", "Umbrella Health", "Raccoon City", "MO"),
    _customer("stark-industries", "Stark Industries", "Malibu", "CA"),
    _customer("wayne-enterprises", "Wayne Enterprises", "Gotham", "NJ"),
    _customer("acme-legal", "Acme Legal LLP", "New York", "NY"),
    _customer("hooli", "Hooli", "Palo Alto", "CA"),
]


def _tiers(*bounds: tuple) -> list[dict]:
    """(lower, upper or None, rate) triples as the API's tiers."""
    return [{"lower": lower, "upper": upper, "rate": rate} for lower, upper, rate in bounds]


@dataclass(frozen=True)
class DemoPlan:
    body: dict  # PlanCreateIn, without agentId
    agent_code: str
    strategies: list[dict] = field(default_factory=list)  # StrategyIn, `signal` naming the signal's shortName


POOL_MINUTES = 2000
PLANS = [
    DemoPlan({"name": "Support Starter", "description": "Pay per resolved ticket, small platform fee",
              "featuresList": {"channels": ["chat", "email"], "sla": "next business day"}}, "support-bot", [
        {"name": "Platform fee", "chargeType": "recurring", "rate": "49"},
        {"name": "Resolved tickets", "chargeType": "usage", "pricingModel": "flat", "rate": "0.80",
         "signal": "tickets_resolved"},
    ]),
    DemoPlan({"name": "Support Scale", "description": "Conversations in graduated tiers, per-seat console access",
              "featuresList": {"channels": ["chat", "email", "voice"], "sla": "4 hours"}}, "support-bot", [
        {"name": "Conversations", "chargeType": "usage", "pricingModel": "graduated", "signal": "conversations",
         "tiers": _tiers((0, 1000, "0.05"), (1000, 5000, "0.03"), (5000, None, "0.02"))},
        {"name": "Agent seats", "chargeType": "seat_based", "pricingModel": "flat", "rate": "15",
         "minimumCommitment": "10"},
        {"name": "Onboarding", "chargeType": "onetime", "rate": "500"},
    ]),
    DemoPlan({"name": "Research Pro", "description": "Every report at the rate of the month's volume tier",
              "featuresList": {"sources": "web", "citations": True}}, "research-agent", [
        {"name": "Research reports", "chargeType": "usage", "pricingModel": "volume", "signal": "reports_generated",
         "tiers": _tiers((0, 100, "2.00"), (100, 500, "1.50"), (500, None, "1.00"))},
        {"name": "Platform fee", "chargeType": "recurring", "rate": "99"},
    ]),
    DemoPlan({"name": "Voice Credits", "description": f"{POOL_MINUTES} call minutes a month, then 0.20 a minute",
              "featuresList": {"languages": ["en", "es"]}}, "voice-agent", [
        {"name": "Voice credit pool", "chargeType": "usage", "pricingModel": "credit_pool", "signal": "call_minutes",
         "tiers": _tiers((0, POOL_MINUTES, "300"), (POOL_MINUTES, None, "0.20"))},
    ]),
    DemoPlan({"name": "Legal Review", "description": "Per reviewed document, reviewer seats in volume tiers",
              "featuresList": {"matters": True, "auditExport": True}}, "contract-reviewer", [
        {"name": "Reviewed documents", "chargeType": "usage", "pricingModel": "flat", "rate": "4.00",
         "signal": "documents_reviewed"},
        {"name": "Reviewer seats", "chargeType": "seat_based", "pricingModel": "volume",
         "tiers": _tiers((0, 10, "30"), (10, None, "25"))},
        {"name": "Platform fee", "chargeType": "recurring", "rate": "199"},
    ]),
]


@dataclass(frozen=True)
class DemoSubscription:
    customer: str  # externalId
    plan: str  # plan name
    body: dict  # SubscriptionCreateIn, without ids and startDate
    starts_days_ago: int | None = None  # None: the first of the month the 90 days of usage begin in
    # How its finished periods' invoices end up (seed.py): "paid" (the latest stays issued, as a fresh invoice
    # would), "prompt" (the latest is paid too), "overdue" (the one before the latest is never paid), "void"
    # (the one before the latest is voided and issued again, then paid).
    collection: str = "paid"


SUBSCRIPTIONS = [
    DemoSubscription("globex", "Support Starter", {"name": "Globex support", "billingModel": "hybrid"},
                     collection="prompt"),
    DemoSubscription("initech", "Support Scale", {"name": "Initech support desk", "billingModel": "hybrid",
                                                  "seatsCount": 12, "netTerms": 15}, collection="overdue"),
    DemoSubscription("umbrella-health", "Research Pro", {"name": "Umbrella research", "billingModel": "hybrid"}),
    # Its billing day is set by the seed so that its current period is nearly over: the pool is nearly used up.
    DemoSubscription("stark-industries", "Voice Credits", {"name": "Stark voice line", "billingModel": "usage"}),
    DemoSubscription("wayne-enterprises", "Voice Credits", {"name": "Wayne voice line", "billingModel": "usage"},
                     collection="void"),
    DemoSubscription("acme-legal", "Legal Review", {"name": "Acme contract review", "billingModel": "hybrid",
                                                    "seatsCount": 8, "invoiceMemo": "PO 4500-1187"}),
    DemoSubscription("hooli", "Support Starter", {"name": "Hooli support", "billingModel": "hybrid"},
                     starts_days_ago=40),
]
NEAR_EMPTY_POOL = "stark-industries"  # its pool's current period is this share used
NEAR_EMPTY_USED = "0.88"
TOPPED_UP_POOL = ("wayne-enterprises", "500")  # a top-up of 500 minutes

MATTERS = [  # MatterIn; the first gets the routing rule, the second is named by tags on events
    {"matterNumber": "ACME-2025-014", "name": "Northwind acquisition due diligence", "clientName": "Northwind Traders"},
    {"matterNumber": "ACME-2025-022", "name": "Contoso supply agreement renewal", "clientName": "Contoso Ltd"},
]
MATTER_RULE = {"priority": 10, "agentCode": "contract-reviewer", "customerExternalId": "acme-legal"}  # MatterRuleIn

DEVELOPERS = ["alice@demo.example.com", "bob@demo.example.com"]  # internal coding-agent usage
SPEND_CAPS = [  # SpendCapCreateIn: the team's monthly ceiling, then one developer's enforced cap under it
    {"scope": "org", "providerScope": "all", "amountUsd": "400", "period": "month", "mode": "track",
     "alertThresholds": [50, 80, 100]},
    {"scope": "dev", "scopeValue": "bob@demo.example.com", "providerScope": "all", "amountUsd": "150",
     "period": "month", "mode": "enforce", "coolOffHours": 4},
]
WATCH = {"customer": "umbrella-health", "metric": "cost", "thresholdUsd": "25", "windowMode": "month"}
