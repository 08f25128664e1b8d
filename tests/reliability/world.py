"""One of every record an API key can address, built lazily in the key's book.

`World(client)` creates nothing up front: each attribute creates its record (and what it depends on) the
first time it is read, through the API where one exists, so a test pays only for what it touches. The
isolation sweep and the fuzzer both resolve path parameters and body ids from it (`PATH_RECORDS`).
"""
import uuid
from datetime import datetime, timezone
from decimal import Decimal
from functools import cached_property

from billing.models import Invoice, Payment
from billing.services.payments import payment_record
from customers.models import CODING_AGENT_CODE, Customer, Signal
from tests.factories import ServiceEntryFactory, UsageEventFactory

JAN = ("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z")
FEB = ("2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z")
UNKNOWN_MODEL = ("mystery-model-9000", "acme")

# Path parameter name -> the World attribute whose `id` fills it. A route with a new parameter name needs
# a record here (and a World attribute building it).
PATH_RECORDS = {
    "customer_id": "customer", "agent_id": "agent", "signal_id": "signal", "plan_id": "plan",
    "strategy_id": "strategy", "subscription_id": "subscription", "invoice_id": "invoice",
    "payment_id": "payment", "matter_id": "matter", "rule_id": "rule", "cap_id": "cap", "alert_id": "alert",
    "service_id": "service", "session_id": "portal_session", "job_id": "job", "override_id": "price_override",
    "endpoint_id": "webhook_endpoint", "delivery_id": "webhook_delivery",
}


def ok(resp, *statuses):
    assert resp.status_code in (statuses or (200, 201)), (resp.status_code, resp.content[:500])
    return resp.json() if resp.content else None


class Record:
    """A record as the API shows it, with `.id` and its JSON fields as attributes."""

    def __init__(self, body: dict):
        self.__dict__.update(body)

    def __getitem__(self, name):
        return self.__dict__[name]


class World:
    def __init__(self, client):
        self.client = client
        self.key = client.key
        self.book = client.key.book
        self.tag = uuid.uuid4().hex[:10]  # makes every name and external id of this world unique

    def post(self, path, body, *statuses) -> Record:
        return Record(ok(self.client.post(path, body), *statuses))

    @cached_property
    def owner_email(self) -> str:
        return self.key.membership.user.email

    # ------------------------------------------------------------------ identities and the catalog
    @cached_property
    def customer(self):
        return self.post("/v1/customers", {"name": f"Customer {self.tag}", "externalId": f"cust-{self.tag}",
                                           "email": f"billing-{self.tag}@client.example.com"})

    @cached_property
    def agent(self):
        return self.post("/v1/agents", {"name": f"Agent {self.tag}", "agentCode": f"agent-{self.tag}"})

    @cached_property
    def signal(self):
        return self.post("/v1/signals", {"name": f"pages-{self.tag}", "agentId": self.agent.id})

    @cached_property
    def service(self):
        return ServiceEntryFactory(canonical_name=f"world-llm-{self.tag}", provider="worldai",
                                   input_cost=Decimal("0.000001"), output_cost=Decimal("0.000002"))

    # ------------------------------------------------------------------ pricing
    @cached_property
    def plan(self):
        return self.post("/v1/pricing-plans", {"name": f"Plan {self.tag}", "agentId": self.agent.id})

    @cached_property
    def spare_agent(self):
        """An agent not linked to the plan (to link it)."""
        return self.post("/v1/agents", {"name": f"Spare {self.tag}", "agentCode": f"spare-{self.tag}"})

    @cached_property
    def strategy(self):
        usage, _ = ok(self.client.post(f"/v1/pricing-plans/{self.plan.id}/pricing-strategies", [
            {"name": "per page", "agentId": self.agent.id, "chargeType": "usage", "signalId": self.signal.id,
             "pricingModel": "flat", "rate": "0.25"},
            {"name": "platform fee", "agentId": self.agent.id, "chargeType": "recurring", "rate": "10"}]), 201)
        return Record(usage)

    @cached_property
    def subscription(self):
        self.strategy  # the plan bills something
        return self.post("/v1/subscriptions", {
            "name": f"Sub {self.tag}", "planId": self.plan.id, "agentId": self.agent.id,
            "customerId": self.customer.id, "startDate": JAN[0], "status": "active"})

    @cached_property
    def pool_plan(self):
        """A plan selling a credit pool of 100 units of the signal a period, 0.75 a unit beyond."""
        plan = self.post("/v1/pricing-plans", {"name": f"Pool {self.tag}", "agentId": self.agent.id})
        ok(self.client.post(f"/v1/pricing-plans/{plan.id}/pricing-strategies", [
            {"name": "credit pool", "agentId": self.agent.id, "chargeType": "usage", "signalId": self.signal.id,
             "pricingModel": "credit_pool", "tiers": [{"lower": 0, "upper": 100, "rate": 50},
                                                      {"lower": 100, "upper": None, "rate": "0.75"}]}]), 201)
        return plan

    @cached_property
    def pool_subscription(self):
        """The customer's subscription to the pool plan (what the credit-balance routes address)."""
        return self.post("/v1/subscriptions", {
            "name": f"Pool sub {self.tag}", "planId": self.pool_plan.id, "agentId": self.agent.id,
            "customerId": self.customer.id, "startDate": JAN[0], "status": "active"})

    @cached_property
    def pool_topup(self):
        return self.post(f"/v1/subscriptions/{self.pool_subscription.id}/credit-topup",
                         {"units": "25", "idempotencyKey": f"topup-{self.tag}"}, 201)

    # ------------------------------------------------------------------ webhooks
    @cached_property
    def webhook_endpoint(self):
        return self.post("/v1/webhook-endpoints", {"url": f"https://hooks-{self.tag}.example.com/billing"}, 201)

    @cached_property
    def webhook_delivery(self):
        """A test event's delivery to the endpoint (its attempt waits for the commit, which a test never makes)."""
        return self.post(f"/v1/webhook-endpoints/{self.webhook_endpoint.id}/test", {}, 202)

    # ------------------------------------------------------------------ the ledger
    def _event(self, **fields):
        return UsageEventFactory(book=self.book, customer=Customer.objects.get(pk=self.customer.id),
                                 signal=Signal.objects.get(pk=self.signal.id),
                                 usage_date=datetime(2025, 1, 15, tzinfo=timezone.utc), **fields)

    @cached_property
    def event(self):
        """A priced event with an idempotency key, no matter."""
        return self._event(quantity=Decimal("4"), usage_cost=Decimal("0.0042"), model=self.service.canonical_name,
                           model_provider="worldai", idempotency_key=f"idem-{self.tag}")

    @cached_property
    def price_override(self):
        return self.post("/v1/price-overrides", {"modelProvider": "worldai", "discountPercent": 10,
                                                 "effectiveFrom": "2025-01-01T00:00:00Z"})

    @cached_property
    def unpriced_event(self):
        model, provider = UNKNOWN_MODEL
        return self._event(model=model, model_provider=provider, usage_cost=None,
                           event_status="NEEDS_COST_BACKFILL")

    @cached_property
    def recorded_event(self):
        """A priced event of the customer's signal on 2025-01-15, recorded through the API (so the analytics
        rollup counts it, as it counts every recorded event)."""
        resp = self.post("/v1/usage/record", {"records": [{
            "customerExternalId": self.customer.externalId, "agentCode": self.agent.agentCode,
            "signalName": self.signal.shortName, "model": self.service.canonical_name, "modelProvider": "worldai",
            "inputTokens": 1000, "quantity": 3, "usageDate": "2025-01-15T12:00:00Z"}]})
        assert resp.successful == 1, resp.__dict__
        return Record({"id": resp.results["success"][0]["eventId"]})

    @cached_property
    def developer_email(self) -> str:
        return f"dev-{self.tag}@team.example.com"

    @cached_property
    def coding_event(self):
        """Internal coding-agent usage of a developer (what spend controls count), recorded now."""
        resp = self.post("/v1/usage/record", {"records": [{
            "customerExternalId": self.developer_email, "agentCode": CODING_AGENT_CODE, "signalName": "tool-calls",
            "model": self.service.canonical_name, "modelProvider": "worldai", "inputTokens": 1000000}]})
        assert resp.successful == 1, resp.__dict__
        return resp

    # ------------------------------------------------------------------ invoices
    @cached_property
    def invoice(self):
        """A draft invoice of January."""
        return self.post("/v1/invoices/generate", {
            "customerId": self.customer.id, "subscriptionId": self.subscription.id,
            "billingPeriodStart": JAN[0], "billingPeriodEnd": JAN[1]}, 201)

    @cached_property
    def paid_invoice(self):
        """February's invoice, sent and paid in full (one payment)."""
        invoice = self.post("/v1/invoices/generate", {
            "customerId": self.customer.id, "subscriptionId": self.subscription.id,
            "billingPeriodStart": FEB[0], "billingPeriodEnd": FEB[1]}, 201)
        ok(self.client.post(f"/v1/invoices/{invoice.id}/send", {}))
        row = Invoice.objects.get(pk=invoice.id)
        payment_record(invoice=row, amount=row.total, provider="local",
                       provider_payment_id=f"pay-{self.tag}", now=datetime.now(timezone.utc))
        return invoice

    @cached_property
    def payment(self):
        return Payment.objects.get(invoice_id=self.paid_invoice.id)

    # ------------------------------------------------------------------ matters
    @cached_property
    def matter(self):
        return self.post("/v1/matters", {"matterNumber": f"M-{self.tag}", "name": "Smith v Jones",
                                         "clientName": "Smith & Co"})

    @cached_property
    def rule(self):
        return self.post("/v1/matter-rules", {"matterId": self.matter.id, "agentCode": self.agent.agentCode})

    @cached_property
    def job(self):
        """A rules sweep's job (what `POST /v1/matter-rules/apply` answers the id of)."""
        return Record({"id": self.post("/v1/matter-rules/apply", {}, 201).jobId})

    # ------------------------------------------------------------------ controls
    @cached_property
    def cap(self):
        """The org cap (enforce, reached by `coding_event` when that exists)."""
        return self.post("/v1/control/caps", {"scope": "org", "providerScope": "all", "amountUsd": "0.5",
                                              "period": "month", "mode": "enforce"}, 201)

    @cached_property
    def device(self):
        return self.post("/v1/control/devices/heartbeat", {
            "customerExternalId": self.developer_email, "deviceId": f"laptop-{self.tag}", "armed": True})

    @cached_property
    def alert(self):
        return self.post("/v1/customer-alerts", {
            "customerId": self.customer.id, "metric": "cost", "thresholdUsd": "10", "windowMode": "month",
            "notifyEmail": self.owner_email}, 201)

    # ------------------------------------------------------------------ portal
    @cached_property
    def portal_session(self):
        return self.post("/v1/portal-sessions", {"customerId": self.customer.id}, 201)

    def record_id_of(self, attribute: str) -> str:
        return str(getattr(self, attribute).id)
