"""A commit whose answer was lost (the connection dies while the transaction commits: a crash, a restart, a
failover) answers what PostgreSQL did, for every write (core/postgresql). Contract: a request whose writes
committed never answers 5xx. A 503 for a committed refund, strategy or webhook endpoint made the client send it
again, and the second request stored a second one (a second refund, a fee billed twice, every event delivered
twice). Usage batches have their own test in test_faults.py."""
import psycopg
import pytest
from django.db import OperationalError, connections, transaction

from billing.models import CreditGrant, Invoice, Payment, PricingStrategy, Refund, Subscription
from customers.models import Customer
from tests.reliability.world import World
from webhooks.models import WebhookDelivery, WebhookEndpoint


class LoseTheNextCommitsAnswer:
    """The next commit is made (or, `committed=False`, rolled back), then the connection is gone with its answer."""

    def __init__(self, monkeypatch, *, committed: bool):
        self.wrapper = connections["default"]
        self.real_commit = self.wrapper._commit
        self.committed, self.fired = committed, 0
        monkeypatch.setattr(self.wrapper, "_commit", self._commit)

    def _commit(self):
        if self.fired:
            return self.real_commit()
        self.fired += 1
        if self.committed:
            self.real_commit()
        else:
            self.wrapper.connection.rollback()
        self.wrapper.connection.close()
        raise OperationalError("server closed the connection unexpectedly")


def _refund(world):
    invoice = world.paid_invoice
    payment = Payment.objects.get(invoice_id=invoice.id)
    return (f"/v1/invoices/{invoice.id}/payments/{payment.pk}/refund", {"amount": "1.00"},
            lambda: Refund.objects.filter(payment=payment).count())


def _strategy(world):
    world.strategy
    return (f"/v1/pricing-plans/{world.plan.id}/pricing-strategies",
            [{"name": "Platform fee", "agentId": world.agent.id, "chargeType": "recurring", "rate": "5"}],
            lambda: PricingStrategy.objects.filter(name="Platform fee").count())


def _webhook_endpoint(world):
    return ("/v1/webhook-endpoints", {"url": "https://hooks.example.com/billing"},
            lambda: WebhookEndpoint.objects.filter(url="https://hooks.example.com/billing").count())


def _subscription(world):
    world.strategy
    return ("/v1/subscriptions", {"name": "Second seat", "planId": world.plan.id, "agentId": world.agent.id,
                                  "customerId": world.customer.id, "startDate": "2025-01-01T00:00:00Z"},
            lambda: Subscription.objects.filter(name="Second seat").count())


def _plan_change(world):
    subscription = world.subscription
    other = world.post("/v1/pricing-plans", {"name": "Growth", "agentId": world.agent.id})
    return (f"/v1/subscriptions/{subscription.id}/change-plan",
            {"planId": other.id, "effectiveAt": "2025-03-01T00:00:00Z"},
            lambda: Subscription.objects.filter(plan_id=other.id).count())


def _top_up(world):
    subscription = world.pool_subscription
    return (f"/v1/subscriptions/{subscription.id}/credit-topup", {"units": "5", "idempotencyKey": "top-up-1"},
            lambda: CreditGrant.objects.filter(idempotency_key="top-up-1").count())


def _customer(world):
    return ("/v1/customers", {"name": "Initech", "externalId": "initech"},
            lambda: Customer.objects.filter(external_id="initech").count())


WRITES = {"refund": _refund, "strategy": _strategy, "webhook endpoint": _webhook_endpoint,
          "subscription": _subscription, "plan change": _plan_change, "top-up": _top_up, "customer": _customer}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("committed", [True, False], ids=["committed", "rolled-back"])
@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_a_write_whose_commit_lost_its_answer_answers_what_postgresql_did(api, monkeypatch, write, committed):
    """Committed: its 2xx, and a working connection behind it. Not committed: 503 with nothing stored, and the
    client's retry stores it once."""
    path, body, stored = write(World(api))
    lost = LoseTheNextCommitsAnswer(monkeypatch, committed=committed)
    resp = api.post(path, body)
    assert lost.fired == 1
    if committed:
        assert resp.status_code in (200, 201), resp.content
        assert stored() == 1
        assert api.get("/v1/customers").status_code == 200
    else:
        assert resp.status_code == 503, resp.content
        assert stored() == 0
        assert api.post(path, body).status_code in (200, 201)
        assert stored() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("committed", [True, False], ids=["committed", "rolled-back"])
def test_work_that_waits_for_the_commit_runs_only_when_it_happened(book, monkeypatch, committed):
    ran = []
    LoseTheNextCommitsAnswer(monkeypatch, committed=committed)
    try:
        with transaction.atomic():
            Customer.objects.create(book=book, external_id="acme", name="Acme")
            transaction.on_commit(lambda: ran.append("after commit"))
    except OperationalError:
        assert not committed
    assert ran == (["after commit"] if committed else [])
    assert Customer.objects.filter(external_id="acme").exists() is committed


@pytest.mark.django_db(transaction=True)
def test_a_refused_commit_is_not_asked_about(book, monkeypatch):
    """A failure with the connection still open is the server's answer (it rolled the transaction back)."""
    wrapper = connections["default"]
    asked = []
    monkeypatch.setattr(wrapper, "_committed_after_all", lambda xid: asked.append(xid) or True)

    def refuse():
        wrapper.connection.rollback()
        raise OperationalError("could not serialize access due to concurrent update")

    monkeypatch.setattr(wrapper, "_commit", refuse)
    with pytest.raises(OperationalError):
        with transaction.atomic():
            Customer.objects.create(book=book, external_id="acme", name="Acme")
    monkeypatch.undo()
    assert asked == []
    assert not Customer.objects.filter(external_id="acme").exists()


@pytest.mark.django_db(transaction=True)
def test_a_usage_batch_knows_its_transaction_without_a_round_trip_of_its_own(api, monkeypatch):
    """The hot path: the ledger's insert reads the transaction's id, so the batch's commit asks nothing more (the
    work after it, inline here, commits transactions of its own)."""
    import traceback

    from tests.factories import ServiceEntryFactory
    wrapper = connections["default"]
    real, asked_by = wrapper._transaction_id, []
    monkeypatch.setattr(wrapper, "_transaction_id",
                        lambda: asked_by.append({frame.name for frame in traceback.extract_stack()}) or real())
    ServiceEntryFactory(canonical_name="known-llm", provider="acme")
    records = [{"customerExternalId": "acme", "agentCode": "bot", "signalName": "calls", "model": "known-llm",
                "modelProvider": "acme", "inputTokens": 10, "outputTokens": 5}]
    assert api.post("/v1/usage/record", {"records": records}).status_code == 200
    assert asked_by and not any("_store" in frames for frames in asked_by)  # others asked; the batch did not
    assert wrapper.transaction_id_known is None


class DropTheConnectionAfterTheNextCommit:
    """The next commit is made and answered; then the server ends the connection's backend (a restart just after
    it): the next statement on that connection fails, as the read that builds the write's answer would."""

    def __init__(self, monkeypatch):
        self.wrapper = connections["default"]
        self.real_commit = self.wrapper._commit
        self.fired = 0
        monkeypatch.setattr(self.wrapper, "_commit", self._commit)

    def _commit(self):
        self.real_commit()
        if not self.fired:
            self.fired += 1
            backend = self.wrapper.connection.info.backend_pid
            with psycopg.connect(**self.wrapper.get_connection_params(), autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s, 5000)", [backend])


def _generate(world):
    world.subscription
    return ("/v1/invoices/generate", {"customerId": world.customer.id, "subscriptionId": world.subscription.id,
                                      "billingPeriodStart": "2025-03-01T00:00:00Z",
                                      "billingPeriodEnd": "2025-04-01T00:00:00Z"},
            lambda: Invoice.objects.filter(subscription_id=world.subscription.id).count())


def _void(world):
    invoice = world.invoice
    return (f"/v1/invoices/{invoice.id}/void", {},
            lambda: Invoice.objects.filter(pk=invoice.id, status="void").count())


def _webhook_test(world):
    endpoint = world.webhook_endpoint
    return (f"/v1/webhook-endpoints/{endpoint.id}/test", {},
            lambda: WebhookDelivery.objects.filter(endpoint_id=endpoint.id).count())


def _send(world):
    invoice = world.invoice
    return (f"/v1/invoices/{invoice.id}/send", {},
            lambda: Invoice.objects.filter(pk=invoice.id, status="issued").count())


WRITES_READ_BACK = {"invoice generate": _generate, "invoice void": _void, "invoice send": _send, "top-up": _top_up,
                    "webhook test": _webhook_test}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("write", WRITES_READ_BACK.values(), ids=WRITES_READ_BACK.keys())
def test_a_write_whose_answer_is_read_after_its_commit_answers_2xx_when_the_server_restarts_between(
        api, monkeypatch, write):
    """The answer of these writes is read after they committed (the invoice in full, the pool's balance, the
    delivery). With the connection gone between the two, they answered 503 for what was stored; the read now runs
    again on a new connection."""
    path, body, stored = write(World(api))
    dropped = DropTheConnectionAfterTheNextCommit(monkeypatch)
    resp = api.post(path, body)
    assert dropped.fired == 1
    assert resp.status_code in (200, 201, 202), resp.content
    assert stored() == 1
