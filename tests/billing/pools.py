"""Helpers of the credit-pool tests: a pool strategy of 100 units for 50 with overage at 0.75, subscriptions on it,
ledger rows written with the ORM, and the scheduled jobs run as of a given instant."""
from datetime import datetime
from decimal import Decimal
from io import StringIO
from types import SimpleNamespace

from django.core.management import call_command

from core import clock
from customers.models import UsageEvent

from tests.billing.conftest import NOW
from tests.billing.support import create_plan, create_strategies, create_subscription, ok, tiered
from tests.factories import AgentFactory, CustomerFactory, SignalFactory, UsageEventFactory


def pool_strategy(chain, size=100, price=50, overage="0.75", **fields) -> dict:
    return tiered(chain, "credit_pool", [{"lower": 0, "upper": size, "rate": price},
                                         {"lower": size, "upper": None, "rate": overage}], **fields)


def another_chain(api, book):
    """Like the `chain` fixture: a new customer, agent, signal and a plan linked to the agent."""
    agent = AgentFactory(book=book)
    return SimpleNamespace(agent=agent, signal=SignalFactory(book=book, agent=agent),
                           customer=CustomerFactory(book=book), plan=create_plan(api, agent.id))


def pool_subscription(api, chain, start="2025-06-01T00:00:00Z", strategy=None, **fields) -> dict:
    """A monthly subscription on a plan that sells the pool (its current period: June 2025 at NOW)."""
    create_strategies(api, chain.plan["id"], [strategy or pool_strategy(chain)])
    return create_subscription(api, chain, startDate=start, **fields)


def use(chain, quantity, at: datetime = NOW, **fields):
    """One ledger row of the chain's customer, agent and signal, stamped as recorded at the service's clock (as
    recording stamps it: a settlement counts the events recorded by its own instant)."""
    fields.setdefault("customer", chain.customer)
    fields.setdefault("signal", chain.signal)
    event = UsageEventFactory(book=chain.customer.book, quantity=Decimal(str(quantity)), usage_date=at, **fields)
    UsageEvent.objects.filter(pk=event.pk).update(created_at=clock.now())
    return event


def balance(api, subscription) -> dict:
    return ok(api.get(f"/v1/subscriptions/{subscription['id']}/credit-balance"))


def balances(api, **params) -> dict:
    return ok(api.get("/v1/credit-balances", params))


def topup(api, subscription, units, key="topup-1", **extra):
    return api.post(f"/v1/subscriptions/{subscription['id']}/credit-topup",
                    {"units": units, "idempotencyKey": key, **extra})


def pause(api, subscription, paused):
    return api.post(f"/v1/subscriptions/{subscription['id']}/credit-alerts-pause", {"paused": paused})


def run_jobs(now: str) -> str:
    out = StringIO()
    call_command("run_scheduled_jobs", "--now", now, stdout=out)
    return out.getvalue()
