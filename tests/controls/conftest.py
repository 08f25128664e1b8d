"""Fixtures of spend controls and watches: a settable clock, ledger rows written with the ORM, members."""
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.core.management import call_command

from accounts.services import member_ensure
from core import clock
from customers.models import CODING_AGENT_CODE, Agent, Customer, EventStatus, Signal
from tests.factories import CustomerFactory, UsageEventFactory

# A Wednesday: its week started Monday 2025-03-10, its month 2025-03-01.
NOW = datetime(2025, 3, 12, 15, 0, tzinfo=timezone.utc)


class SettableClock:
    def __init__(self, moment: datetime):
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def frozen_now(monkeypatch):
    """`clock.now()` answers `frozen_now.moment` (set it to move time); every view reads time through it."""
    settable = SettableClock(NOW)
    monkeypatch.setattr(clock, "now", settable)
    return settable


def _usage(book, customer, agent_code: str, cost, at: datetime):
    agent, _ = Agent.objects.get_or_create(book=book, agent_code=agent_code, defaults={"name": agent_code})
    signal, _ = Signal.objects.get_or_create(book=book, agent=agent, name="calls", defaults={"short_name": "calls"})
    return UsageEventFactory(
        book=book, customer=customer, signal=signal, usage_date=at,
        usage_cost=None if cost is None else Decimal(str(cost)),
        event_status=EventStatus.NEEDS_COST_BACKFILL if cost is None else EventStatus.PROCESSED)


@pytest.fixture
def coding_usage(book):
    """coding_usage(developer_email, cost or None, at=, book=): one internal coding-agent event (None: unpriced)."""
    def record(developer: str, cost, *, at: datetime = NOW, in_book=None):
        target = in_book or book
        developer_row = (Customer.objects.filter(book=target, external_id=developer).first()
                         or CustomerFactory(book=target, name=developer, external_id=developer, is_internal=True))
        return _usage(target, developer_row, CODING_AGENT_CODE, cost, at)
    return record


@pytest.fixture
def customer_usage(book):
    """customer_usage(customer, cost or None, at=): one customer-billing event of an ordinary agent."""
    def record(customer, cost, *, at: datetime = NOW):
        return _usage(customer.book, customer, "support-agent", cost, at)
    return record


@pytest.fixture
def member(org):
    """member(role, email=None) -> the member's email (the user and membership are created)."""
    def make(role: str, email: str | None = None) -> str:
        email = email or f"{role}-member@acme.example.com"
        member_ensure(organization=org, email=email, role=role)
        return email
    return make


@pytest.fixture
def run_jobs(django_capture_on_commit_callbacks):
    """run_jobs(moment=NOW): `manage.py run_scheduled_jobs --now moment`, its on-commit emails sent."""
    def run(moment: datetime = NOW) -> None:
        with django_capture_on_commit_callbacks(execute=True):
            call_command("run_scheduled_jobs", "--now", moment.isoformat())
    return run
