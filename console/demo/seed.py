"""Write the demo book through the services the API calls, each request body parsed by the API's serializer, so
the rows are the ones the API would have written. Time-dependent services get `now=` back-dated to when the
thing would have happened: usage over the last 90 days, each finished billing period invoiced, sent and paid
the days after it ended.

Idempotent: the whole book is written in one transaction, and only into a test book that has no customers yet;
run again, it writes nothing. Every run mints a new secret test key (keys are stored as digests only, so an
earlier key cannot be shown again).
"""
import calendar
from collections import Counter
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from decimal import Decimal

from django.db import transaction

from billing.models import Invoice, InvoiceStatus, Payment, PricingPlan, PricingStrategy, Subscription
from billing.pricing.periods import Period, first_period, next_period
from billing.recording import usage_record
from billing.pricing.terms import schedule_of
from billing.serializers.plans import PlanCreateIn
from billing.serializers.strategies import StrategyIn
from billing.serializers.subscriptions import SubscriptionCreateIn
from billing.services.credit_pools import credit_pool_alerts_evaluate, credit_topup
from billing.services.invoices import invoice_generate, invoice_send, invoice_void, invoices_mark_overdue
from billing.services.payments import LOCAL, payment_record
from billing.services.plans import plan_create
from billing.services.strategies import strategies_create
from billing.services.subscriptions import subscription_create
from catalog.event_pricing import UNKNOWN_MODEL
from accounts.models import ApiKey, Book, Environment, KeyScope, KeyType, Membership, Organization, Role
from accounts.services import api_key_mint, book_for, member_ensure, organization_ensure
from core.scoping import owned
from core.serialization import parse, parse_many
from console.demo import book as demo
from console.demo.usage import UNPRICED_MODEL, usage_records
from controls.models import SpendCap
from controls.serializers import CustomerAlertCreateIn, SpendCapCreateIn
from controls.services.customer_alerts import customer_alert_create
from controls.services.spend_caps import device_heartbeat, spend_cap_create, spend_caps_evaluate
from customers.models import Agent, Customer, Signal, UsageEvent
from customers.serializers import AgentWriteIn, CustomerWriteIn, SignalCreateIn
from customers.services import agent_create, customer_create, signal_create
from matters.models import Matter, MatterRule
from matters.serializers import MatterIn, MatterRuleIn
from matters.services import matter_create, matter_rule_create

BATCH = 100  # records per usage_record call, the API's limit
# The near-empty pool's current period ends this long after `now`, so that most of it has passed.
POOL_PERIOD_LEFT = timedelta(days=3)


class DemoSeedError(Exception):
    """A record the demo describes was refused: the description and the services disagree."""


@dataclass(frozen=True)
class DemoSeed:
    organization: Organization
    book: Book
    key: ApiKey
    raw_key: str
    created: bool  # False: the book already had customers, nothing was written


def demo_seed(*, now: datetime, organization_name: str = demo.ORGANIZATION,
              owner_email: str = demo.OWNER_EMAIL) -> DemoSeed:
    """The demo organization and its owner (created when missing), a new secret test key of the owner, and,
    when the organization's test book has no customers yet, the whole demo book as of `now`."""
    with transaction.atomic():
        organization = organization_ensure(name=organization_name)
        membership = member_ensure(organization=organization, email=owner_email, role=Role.OWNER)
        book = book_for(organization=organization, environment=Environment.TEST)
        # One seed of a book at a time: a second waits here, then finds the customers the first wrote.
        list(Book.objects.select_for_update().filter(pk=book.pk).values_list("pk", flat=True))
        key, raw_key = api_key_mint(membership=membership, key_type=KeyType.SECRET, environment=Environment.TEST,
                                    scope=KeyScope.FULL, name=demo.KEY_NAME)
        created = not owned(Customer, book).exists()
        if created:
            _Seeder(book=book, membership=membership, actor=f"api-key:{key.id}", now=now).run()
    return DemoSeed(organization, book, key, raw_key, created)


def demo_counts(*, book: Book) -> dict[str, int]:
    """How many of each record the book holds (what the command prints)."""
    counts = {
        "customers": owned(Customer, book).filter(is_internal=False).count(),
        "developers": owned(Customer, book).filter(is_internal=True).count(),
        "agents": owned(Agent, book).count(),
        "signals": owned(Signal, book).count(),
        "plans": owned(PricingPlan, book).count(),
        "strategies": owned(PricingStrategy, book).count(),
        "subscriptions": owned(Subscription, book).count(),
        "usage events": owned(UsageEvent, book).count(),
        "matters": owned(Matter, book).count(),
        "matter rules": owned(MatterRule, book).count(),
        "spend caps": owned(SpendCap, book).count(),
    }
    statuses = Counter(owned(Invoice, book).values_list("status", flat=True))
    counts.update({f"invoices {status}": statuses.get(status, 0) for status in InvoiceStatus.values})
    return counts


def _month_start(moment: datetime) -> date:
    return moment.date().replace(day=1)


class _Seeder:
    """One run of the demo: the book's records by natural key (agent code, externalId, plan name)."""

    def __init__(self, *, book: Book, membership: Membership, actor: str, now: datetime):
        self.book, self.membership, self.actor, self.now = book, membership, actor, now
        self.agents: dict[str, Agent] = {}
        self.signals: dict[tuple[str, str], Signal] = {}
        self.customers: dict[str, Customer] = {}
        self.plans: dict[str, tuple[PricingPlan, Agent]] = {}
        self.subscriptions: dict[str, Subscription] = {}  # by customer externalId

    def run(self) -> None:
        self.billing_profile()
        self.identities()
        self.pricing()
        self.subscribe()
        self.matters()
        self.spend_controls()
        self.record_usage()
        self.top_up()
        self.invoice()
        self.watch()
        # The periodic jobs' work on this book, as of now: pool grants settled and their alerts, cap alerts.
        credit_pool_alerts_evaluate(book=self.book, now=self.now)
        spend_caps_evaluate(book=self.book, now=self.now)

    def billing_profile(self) -> None:
        """The seller on the invoices; fields the organization already filled in stay as they are."""
        organization = self.book.organization
        blank = {field: value for field, value in demo.BILLING_PROFILE.items() if not getattr(organization, field)}
        if blank:
            for field, value in blank.items():
                setattr(organization, field, value)
            organization.save(update_fields=[*blank, "updated_at"])

    def identities(self) -> None:
        for agent_spec in demo.AGENTS:
            agent = agent_create(book=self.book, data=parse(AgentWriteIn, agent_spec.body))
            self.agents[agent.agent_code] = agent
            for signal_body in agent_spec.signals:
                signal = signal_create(book=self.book, data=parse(SignalCreateIn, {**signal_body,
                                                                                   "agentId": str(agent.id)}))
                self.signals[(agent.agent_code, signal.short_name)] = signal
        for body in demo.CUSTOMERS:
            customer = customer_create(book=self.book, data=parse(CustomerWriteIn, body))
            self.customers[customer.external_id] = customer

    def pricing(self) -> None:
        for plan_spec in demo.PLANS:
            agent = self.agents[plan_spec.agent_code]
            plan = plan_create(book=self.book, **parse(PlanCreateIn, {**plan_spec.body, "agentId": str(agent.id)}))
            items = []
            for strategy in plan_spec.strategies:
                item = {key: value for key, value in strategy.items() if key != "signal"}
                item["agentId"] = str(agent.id)
                if "signal" in strategy:
                    item["signalId"] = str(self.signals[(agent.agent_code, strategy["signal"])].id)
                items.append(item)
            strategies_create(book=self.book, plan_id=plan.id, items=parse_many(StrategyIn, items), actor=self.actor,
                              now=self.now)
            self.plans[plan.name] = plan, agent

    def subscribe(self) -> None:
        usage_begins = _month_start(self.now - timedelta(days=90))
        for spec in demo.SUBSCRIPTIONS:
            plan, agent = self.plans[spec.plan]
            start = usage_begins if spec.starts_days_ago is None else \
                (self.now - timedelta(days=spec.starts_days_ago)).date()
            body = {**spec.body, "planId": str(plan.id), "agentId": str(agent.id),
                    "customerId": str(self.customers[spec.customer].id), "startDate": start.isoformat(),
                    "isForever": True}
            if spec.customer == demo.NEAR_EMPTY_POOL:
                body["billingDay"] = (self.now + POOL_PERIOD_LEFT).day
                # It starts on its billing day: a start on the 1st made a first period of a day or so, which a pool
                # bills at its whole price (contract: a pool bills its price for every period it covers). The billing
                # day on or before the usage's first month start, so that it always has three finished periods: the
                # one after that month start left it two on the days when 90 days back fell on a month's first days.
                if body["billingDay"] > start.day:
                    start = (start.replace(day=1) - timedelta(days=1)).replace(day=1)
                last_day = calendar.monthrange(start.year, start.month)[1]
                body["startDate"] = start.replace(day=min(body["billingDay"], last_day)).isoformat()
            self.subscriptions[spec.customer] = subscription_create(
                book=self.book, now=self.now, actor=self.actor, **parse(SubscriptionCreateIn, body))

    def matters(self) -> None:
        matters = [matter_create(book=self.book, **parse(MatterIn, {**body,
                                                                    "responsibleUserId": str(self.membership.user_id)}))
                   for body in demo.MATTERS]
        matter_rule_create(book=self.book, **parse(MatterRuleIn, {**demo.MATTER_RULE, "matterId": str(matters[0].id)}))

    def spend_controls(self) -> None:
        for body in demo.SPEND_CAPS:
            spend_cap_create(book=self.book, created_by_user_id=str(self.membership.user_id),
                             **parse(SpendCapCreateIn, body))
        for index, developer in enumerate(demo.DEVELOPERS):
            device_heartbeat(book=self.book, customer_external_id=developer, device_id=f"laptop-{index + 1}",
                             armed=True, now=self.now - timedelta(hours=index + 1))

    def record_usage(self) -> None:
        """The 90 days in time order, 100 records a call, each call made as of its last record."""
        pool = self.subscriptions[demo.NEAR_EMPTY_POOL]
        records = usage_records(now=self.now, starts={external_id: subscription.start_date for external_id,
                                                      subscription in self.subscriptions.items()},
                                pool_period=(pool.current_period_start, pool.current_period_end))
        for offset in range(0, len(records), BATCH):
            batch = records[offset:offset + BATCH]
            recorded_at = min(datetime.fromisoformat(batch[-1]["usageDate"]) + timedelta(seconds=1), self.now)
            outcome = usage_record(book=self.book, body={"records": batch}, now=recorded_at)
            # Only the in-house model goes unpriced: any other failure means the demo names a model the catalog
            # (catalog/data) no longer has, or a record the API refuses.
            unexpected = [failure for failure in outcome.failed
                          if (failure["code"], failure.get("model")) != (UNKNOWN_MODEL, UNPRICED_MODEL)]
            if unexpected:
                raise DemoSeedError(f"usage records not priced as the demo expects: {unexpected[:3]}")

    def top_up(self) -> None:
        external_id, units = demo.TOPPED_UP_POOL
        credit_topup(book=self.book, subscription_id=self.subscriptions[external_id].id, units=Decimal(units),
                     idempotency_key="demo-topup-1", note="Prepaid minutes for the spring campaign",
                     created_by=self.actor, now=self.now)

    # ----------------------------------------------------------------------------------------------- invoices

    def _at(self, moment: datetime) -> datetime:
        """Never after now (the latest period ended moments ago on some days)."""
        return min(moment, self.now)

    def invoice(self) -> None:
        """Every finished period invoiced the day it ended, sent the next morning and paid days later (see
        `DemoSubscription.collection`), in the order the periods ended (so invoice numbers follow time); then a
        draft of every current period and the overdue sweep."""
        due = []
        for spec in demo.SUBSCRIPTIONS:
            finished = self._finished_periods(self.subscriptions[spec.customer])
            due += [(period.end, spec.customer, period, len(finished) - 1 - index, spec.collection)
                    for index, period in enumerate(finished)]
        for _, customer, period, age, collection in sorted(due, key=lambda item: item[:2]):
            self._bill(self.subscriptions[customer], period, age=age, collection=collection)
        for subscription in self.subscriptions.values():
            invoice_generate(book=self.book, now=self.now, customer_id=subscription.customer_id,
                             subscription_id=subscription.id)
        invoices_mark_overdue(now=self.now)  # the periodic job, as of now

    def _finished_periods(self, subscription: Subscription) -> list[Period]:
        schedule = schedule_of(subscription)
        periods, period = [], first_period(schedule)
        while period is not None and period.end <= self.now:
            periods.append(period)
            period = next_period(schedule, period)
        return periods

    def _generate(self, subscription: Subscription, period: Period, *, at: datetime) -> Invoice:
        invoice, _ = invoice_generate(book=self.book, now=at, customer_id=subscription.customer_id,
                                      subscription_id=subscription.id, billing_period_start=period.start,
                                      billing_period_end=period.end)
        # The history is backdated, and the console's lists date a record by its creation: as it would have been.
        owned(Invoice, self.book).filter(pk=invoice.pk).update(created_at=at)
        return invoice

    def _bill(self, subscription: Subscription, period: Period, *, age: int, collection: str) -> None:
        """One finished period; `age` 0 is the latest."""
        generated_at = self._at(period.end + timedelta(hours=1))
        sent_at = self._at(period.end + timedelta(hours=9))
        invoice = self._generate(subscription, period, at=generated_at)
        invoice_send(book=self.book, invoice_id=invoice.id, now=sent_at)
        if collection == "void" and age == 1:
            invoice_void(book=self.book, invoice_id=invoice.id, now=sent_at + timedelta(hours=2),
                         reason="Sent to the wrong billing contact; replaced by a corrected invoice")
            invoice = self._generate(subscription, period, at=sent_at + timedelta(hours=2))
            invoice_send(book=self.book, invoice_id=invoice.id, now=sent_at + timedelta(hours=3))
        if collection == "prompt":
            paid_at = sent_at + timedelta(days=2)
        elif age == 0 or (collection == "overdue" and age == 1):
            return
        else:
            paid_at = sent_at + timedelta(days=4 + 3 * age)
        if paid_at <= self.now:
            self._pay(invoice, at=paid_at)

    def _pay(self, invoice: Invoice, *, at: datetime) -> None:
        """What is due, as the development checkout records it (provider `local`: a refund never calls Stripe)."""
        with transaction.atomic():
            invoice = owned(Invoice, self.book).select_for_update().get(pk=invoice.pk)
            if invoice.amount_due > 0:
                payment, _ = payment_record(invoice=invoice, amount=invoice.amount_due, provider=LOCAL,
                                            provider_payment_id=f"local_demo_{invoice.invoice_number}", now=at)
                owned(Payment, self.book).filter(pk=payment.pk).update(created_at=at)  # received when it was paid

    def watch(self) -> None:
        customer = self.customers[demo.WATCH["customer"]]
        body = {key: value for key, value in demo.WATCH.items() if key != "customer"}
        customer_alert_create(book=self.book, created_by_user_id=str(self.membership.user_id), now=self.now,
                              **parse(CustomerAlertCreateIn, {**body, "customerId": str(customer.id),
                                                              "notifyEmail": self.membership.user.email}))
