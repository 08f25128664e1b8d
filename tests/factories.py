"""factory-boy factories for every model the tests build directly."""
from datetime import datetime, timezone
from decimal import Decimal

import factory

from accounts.models import Book, Membership, Organization, User
from accounts.services import organization_ensure
from customers.models import RollupBacklog, UsageEventKey


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization

    name = factory.Sequence(lambda n: f"Org {n}")

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        organization = organization_ensure(name=kwargs.pop("name"))
        for field, value in kwargs.items():
            setattr(organization, field, value)
        if kwargs:
            organization.save()
        return organization


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = User
        django_get_or_create = ["email"]

    email = factory.Sequence(lambda n: f"user{n}@example.com")


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    organization = factory.SubFactory(OrganizationFactory)
    user = factory.SubFactory(UserFactory)
    role = "owner"


def book_of(organization: Organization, environment: str = "test") -> Book:
    return Book.objects.get(organization=organization, environment=environment)


class CustomerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "customers.Customer"

    name = factory.Sequence(lambda n: f"Customer {n}")
    external_id = factory.Sequence(lambda n: f"cust-{n}")


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "customers.Agent"

    name = factory.Sequence(lambda n: f"Agent {n}")
    agent_code = factory.Sequence(lambda n: f"agent-{n}")


class SignalFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "customers.Signal"

    agent = factory.SubFactory(AgentFactory, book=factory.SelfAttribute("..book"))
    name = factory.Sequence(lambda n: f"signal-{n}")
    short_name = factory.SelfAttribute("name")


class UsageEventFactory(factory.django.DjangoModelFactory):
    """A ledger row written directly (the recording endpoint lives in billing)."""

    class Meta:
        model = "customers.UsageEvent"

    customer = factory.SubFactory(CustomerFactory, book=factory.SelfAttribute("..book"))
    signal = factory.SubFactory(SignalFactory, book=factory.SelfAttribute("..book"))
    agent = factory.SelfAttribute("signal.agent")
    customer_external_id = factory.SelfAttribute("customer.external_id")
    agent_code = factory.SelfAttribute("agent.agent_code")
    signal_name = factory.SelfAttribute("signal.short_name")
    usage_date = factory.LazyFunction(lambda: datetime.now(timezone.utc))

    @factory.post_generation
    def rollup_backlog(event, create, extracted, **kwargs):
        """As the ledger's insert does (customers/ledger.py): a new event waits in the rollup's backlog until a
        catch-up counts it, and a keyed one holds its key in the keys' table, so every figure derived from the
        ledger sees it (the end-of-test verification checks that, tests/conftest.py)."""
        if create:
            RollupBacklog.objects.get_or_create(event_id=event.pk, defaults={"book_id": event.book_id,
                                                                            "usage_date": event.usage_date})
            if event.idempotency_key is not None:  # the keys' table referees replays (customers/ledger.py)
                UsageEventKey.objects.get_or_create(book_id=event.book_id, idempotency_key=event.idempotency_key,
                                                    defaults={"event_id": event.pk, "usage_date": event.usage_date})


class ServiceEntryFactory(factory.django.DjangoModelFactory):
    """A catalog entry with known rates (tests never depend on the loaded price data's values)."""

    class Meta:
        model = "catalog.ServiceEntry"

    external_id = factory.Sequence(lambda n: f"test:model-{n}")
    canonical_name = factory.Sequence(lambda n: f"test-model-{n}")
    display_name = factory.LazyAttribute(lambda entry: entry.canonical_name)
    provider = "testai"
    service_type = "chat"
    input_cost = None
    output_cost = None
    cost_unit = "token"
    source = "curated"
    is_api = False
    is_active = True


class PlanFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "billing.PricingPlan"

    name = factory.Sequence(lambda n: f"Plan {n}")


class PlanAgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "billing.PlanAgent"

    plan = factory.SubFactory(PlanFactory, book=factory.SelfAttribute("..book"))
    agent = factory.SubFactory(AgentFactory, book=factory.SelfAttribute("..book"))


class StrategyFactory(factory.django.DjangoModelFactory):
    """A flat recurring fee unless told otherwise (the agent should be linked to the plan)."""

    class Meta:
        model = "billing.PricingStrategy"

    plan = factory.SubFactory(PlanFactory, book=factory.SelfAttribute("..book"))
    agent = factory.SubFactory(AgentFactory, book=factory.SelfAttribute("..book"))
    name = factory.Sequence(lambda n: f"strategy-{n}")
    charge_type = "recurring"
    rate = Decimal("10")


class SubscriptionFactory(factory.django.DjangoModelFactory):
    """An active monthly subscription from 2025-01-01 (dates and period are not derived: set what a test needs)."""

    class Meta:
        model = "billing.Subscription"

    name = factory.Sequence(lambda n: f"Subscription {n}")
    plan = factory.SubFactory(PlanFactory, book=factory.SelfAttribute("..book"))
    agent = factory.SubFactory(AgentFactory, book=factory.SelfAttribute("..book"))
    customer = factory.SubFactory(CustomerFactory, book=factory.SelfAttribute("..book"))
    start_date = datetime(2025, 1, 1, tzinfo=timezone.utc)
    status = "active"


class MatterFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "matters.Matter"

    matter_number = factory.Sequence(lambda n: f"M-{n:04d}")
    name = factory.Sequence(lambda n: f"Matter {n}")
    client_name = "Smith & Co"


class MatterRuleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "matters.MatterRule"

    matter = factory.SubFactory(MatterFactory)
    book = factory.SelfAttribute("matter.book")
