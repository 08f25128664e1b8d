"""Billing fixtures: customers, agents and signals are built with the ORM (their endpoints live in the
customers app); plans, strategies and subscriptions go through the HTTP API like a client's."""
from datetime import datetime, timezone
from types import SimpleNamespace

import pytest

from core import clock
from tests.billing.support import create_plan
from tests.factories import AgentFactory, CustomerFactory, SignalFactory

NOW = datetime(2025, 6, 10, 12, 0, tzinfo=timezone.utc)


@pytest.fixture
def frozen_now(monkeypatch):
    """The API's clock reads NOW (2025-06-10T12:00Z); returns a setter to move it."""
    current = {"now": NOW}
    monkeypatch.setattr(clock, "now", lambda: current["now"])

    def move(moment: datetime) -> datetime:
        current["now"] = moment
        return moment
    return move


@pytest.fixture
def agent(book):
    return AgentFactory(book=book)


@pytest.fixture
def signal(book, agent):
    return SignalFactory(book=book, agent=agent)


@pytest.fixture
def customer(book):
    return CustomerFactory(book=book)


@pytest.fixture
def chain(api, book, agent, signal, customer):
    """A customer, an agent with a signal, and a plan linked to the agent (no strategies, no subscription)."""
    return SimpleNamespace(agent=agent, signal=signal, customer=customer, plan=create_plan(api, agent.id))
