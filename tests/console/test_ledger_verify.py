"""The ledger verifier (console/verification.py, `manage.py ledger_verify`, the scheduled job): every
derived figure recomputed from the ledger; drift reported per book with what differs and by how much; repair
rewrites derived rows only, never the ledger."""
import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from billing.models import CreditGrant, Invoice, InvoiceLine, Payment
from billing.verification import READ_MARGIN
from console.models import LedgerDrift
from console.verification import ledger_verify, ledger_verify_all
from customers.models import RollupBacklog, UsageDailyRollup, UsageEvent, UsageEventKey
from customers.rollup import analytics_rollup_catch_up
from tests.billing.invoice_support import billing_chain
from tests.factories import ServiceEntryFactory

pytestmark = [pytest.mark.django_db, pytest.mark.ledger_drift_allowed]

D = Decimal
NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


@pytest.fixture
def llm(db):
    return ServiceEntryFactory(canonical_name="verify-llm", provider="verifyai", input_cost=D("0.000002"),
                               output_cost=D("0.00001"))


def record(api, llm, count=3, customer="cust-v", key_prefix="k"):
    records = [{"customerExternalId": customer, "agentCode": "bot", "signalName": "calls", "quantity": "1.5",
                "model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 1000, "outputTokens": 100,
                "usageDate": f"2026-11-{10 + index:02d}T09:00:00Z", "idempotencyKey": f"{key_prefix}-{index}"}
               for index in range(count)]
    response = api.post("/v1/usage/record", {"records": records})
    assert response.status_code == 200 and not response.json()["results"]["failed"], response.json()
    return response.json()


def verify(**options) -> tuple[int, str]:
    out = StringIO()
    arguments = [f"--{name}={value}" if value is not True else f"--{name}" for name, value in options.items()]
    try:
        call_command("ledger_verify", *arguments, stdout=out)
        status = 0
    except SystemExit as exit_:
        status = exit_.code
    return status, out.getvalue()


def ledger_digest() -> tuple:
    return (UsageEvent.objects.count(), sorted(UsageEvent.objects.values_list("quantity", flat=True)),
            sorted(str(cost) for cost in UsageEvent.objects.values_list("usage_cost", flat=True)))


def test_a_book_whose_derived_figures_equal_its_ledger_reports_no_drift(api, book, llm):
    record(api, llm)
    analytics_rollup_catch_up(book_id=book.pk)
    status, output = verify()
    assert status == 0, output
    assert "0 difference(s)" in output or "no difference" in output


def test_events_still_in_the_backlog_are_not_drift(api, book, llm, monkeypatch):
    import billing.recording

    monkeypatch.setattr(billing.recording, "usage_followup_schedule", lambda **_: None)
    record(api, llm)
    assert RollupBacklog.objects.count() == 3
    assert ledger_verify(now=NOW, book=book)[0].drift == 0


def test_a_rollup_row_that_differs_is_reported_with_both_figures_and_repaired_without_touching_the_ledger(
        api, book, llm):
    record(api, llm)
    analytics_rollup_catch_up(book_id=book.pk)
    before = ledger_digest()
    month_row = UsageDailyRollup.objects.get(grain=8)  # the month's row of the customer, agent and signal
    UsageDailyRollup.objects.filter(pk=month_row.pk).update(event_count=2, quantity=D("3"))
    status, output = verify()
    assert status == 1
    assert "rollup: rollup grain 8 2026-11-01" in output
    assert "event_count 3, quantity 4.5" in output and "event_count 2, quantity 3" in output
    status, output = verify(repair=True)
    assert status == 1 and "repaired" in output
    assert verify()[0] == 0
    assert UsageDailyRollup.objects.get(grain=8).event_count == 3
    assert ledger_digest() == before


def test_a_deleted_signal_and_agent_are_no_drift_and_a_repair_of_their_rows_counts_each_event_once(api, book, llm):
    """The ledger forgets a deleted signal's or agent's id (SET_NULL); the rollup keeps it and reads fold it to
    null (customers/models.py): the two say the same."""
    from customers.models import Agent, Signal

    record(api, llm)
    analytics_rollup_catch_up(book_id=book.pk)
    signal = Signal.objects.get(name="calls")
    assert api.delete(f"/v1/signals/{signal.pk}").status_code in (200, 204)
    assert UsageEvent.objects.filter(signal_id__isnull=True).count() == 3
    assert ledger_verify(now=NOW, book=book, checks=("rollup",))[0].drift == 0
    Agent.objects.filter(agent_code="bot").delete()
    assert ledger_verify(now=NOW, book=book, checks=("rollup",))[0].drift == 0
    month_row = UsageDailyRollup.objects.get(grain=8)
    UsageDailyRollup.objects.filter(pk=month_row.pk).update(event_count=7)
    [difference] = ledger_verify(now=NOW, book=book, checks=("rollup",), repair=True)[0].findings["rollup"]
    assert ledger_verify(now=NOW, book=book, checks=("rollup",))[0].drift == 0
    assert sum(row.event_count for row in UsageDailyRollup.objects.filter(grain=8)) == 3


def test_a_missing_rollup_row_and_a_backlog_row_without_its_event_are_found_and_repaired(api, book, llm):
    body = record(api, llm)
    analytics_rollup_catch_up(book_id=book.pk)
    UsageDailyRollup.objects.filter(grain=0).delete()  # what a lost catch-up looked like
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO customers_rollupbacklog (event_id, book_id, usage_date) VALUES "
                       "(gen_random_uuid(), %s, now())", [book.pk])
    [report] = ledger_verify(now=NOW, book=book)
    assert len(report.findings["rollup"]) == 3  # one finest row per day
    assert len(report.findings["rollup_backlog"]) == 1
    ledger_verify(now=NOW, book=book, repair=True)
    assert ledger_verify(now=NOW, book=book)[0].drift == 0
    assert UsageDailyRollup.objects.filter(grain=0).count() == 3
    assert len(body["results"]["success"]) == 3


def test_idempotency_keys_missing_or_pointing_nowhere_are_found_and_repaired(api, book, llm):
    record(api, llm)
    analytics_rollup_catch_up(book_id=book.pk)
    UsageEventKey.objects.filter(idempotency_key="k-0").delete()  # a replay would have doubled the event
    UsageEventKey.objects.create(book=book, idempotency_key="ghost", event_id="00000000-0000-0000-0000-000000000001",
                                 usage_date=NOW)  # a replay would have answered 503 for ever
    [report] = ledger_verify(now=NOW, book=book)
    subjects = [finding.subject for finding in report.findings["idempotency_keys"]]
    assert subjects == ["idempotency key 'ghost'", f"idempotency key 'k-0' of event "
                        f"{UsageEvent.objects.get(idempotency_key='k-0').pk}"]
    ledger_verify(now=NOW, book=book, repair=True)
    assert ledger_verify(now=NOW, book=book)[0].drift == 0
    replay = api.post("/v1/usage/record", {"records": [{
        "customerExternalId": "cust-v", "agentCode": "bot", "signalName": "calls", "model": llm.canonical_name,
        "modelProvider": llm.provider, "inputTokens": 1000, "idempotencyKey": "k-0",
        "usageDate": "2026-11-10T09:00:00Z"}]}).json()
    assert replay["results"]["success"][0].get("replayed") is True
    assert UsageEvent.objects.count() == 3


def test_a_draft_invoice_whose_lines_differ_from_its_claims_is_drift_and_repair_refreshes_it(api, book):
    chain = billing_chain(api, book, [{"chargeType": "usage", "pricingModel": "flat", "rate": "2"}],
                          start="2026-10-01T00:00:00Z")
    api.post("/v1/usage/record", {"records": [{
        "customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
        "signalName": chain.signal.name, "quantity": "409.45", "usageDate": "2026-10-05T10:00:00Z",
        "services": [{"model": "none-api", "modelProvider": "none", "quantity": 1}]}]})
    generated = api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                   "subscriptionId": chain.subscription["id"],
                                                   "billingPeriodStart": "2026-10-01T00:00:00Z",
                                                   "billingPeriodEnd": "2026-11-01T00:00:00Z"})
    assert generated.status_code == 201, generated.json()
    assert ledger_verify(now=NOW, book=book, checks=("draft_invoices",))[0].drift == 0
    InvoiceLine.objects.filter(charge_type="usage").update(quantity=0, amount=0)  # a draft that billed 0 units
    later = api.post("/v1/usage/record", {"records": [{  # November's usage says nothing of October's draft
        "customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
        "signalName": chain.signal.name, "quantity": "1", "usageDate": "2026-11-05T10:00:00Z",
        "services": [{"model": "none-api", "modelProvider": "none", "quantity": 1}]}]})
    assert [entry["stored"] for entry in later.json()["results"]["failed"]] == [True]  # no price needed: stored
    [report] = ledger_verify(now=NOW, book=book, checks=("draft_invoices",))
    [finding] = report.findings["draft_invoices"]
    assert "usage: 409.45 for 818.90" in finding.ledger and "usage: 0 for 0.00" in finding.derived
    ledger_verify(now=NOW, book=book, checks=("draft_invoices",), repair=True)
    assert InvoiceLine.objects.get(charge_type="usage").amount == D("818.90")


def test_a_final_invoice_whose_lines_missed_events_the_ledger_held_is_drift_and_later_usage_is_not(api, book):
    chain = billing_chain(api, book, [{"chargeType": "usage", "pricingModel": "flat", "rate": "2"}],
                          start="2026-10-01T00:00:00Z")

    def send(quantity, day):
        api.post("/v1/usage/record", {"records": [{
            "customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
            "signalName": chain.signal.name, "quantity": quantity, "usageDate": f"2026-10-{day:02d}T10:00:00Z",
            "services": [{"model": "none-api", "modelProvider": "none", "quantity": 1}]}]})

    send("409.45", 5)
    invoice = api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                 "subscriptionId": chain.subscription["id"],
                                                 "billingPeriodStart": "2026-10-01T00:00:00Z",
                                                 "billingPeriodEnd": "2026-11-01T00:00:00Z"}).json()
    assert api.post(f"/v1/invoices/{invoice['id']}/send", {}).status_code == 200
    send("3", 6)  # recorded for October after the invoice was issued: billed nowhere, but no drift
    assert ledger_verify(now=NOW, book=book, checks=("final_invoices",))[0].drift == 0
    # Say the invoice read the ledger READ_MARGIN (longer than a request runs) after the first event was stamped and
    # before the second: lines that counted fewer units than the first: the read lost events.
    first, second = UsageEvent.objects.order_by("created_at")
    assert second.created_at > first.created_at
    Invoice.objects.filter(pk=invoice["id"]).update(usage_read_at=first.created_at + READ_MARGIN)
    InvoiceLine.objects.filter(charge_type="usage").update(used_quantity=D("400"))
    [report] = ledger_verify(now=NOW, book=book, checks=("final_invoices",), repair=True)
    [finding] = report.findings["final_invoices"]
    assert finding.subject == f"invoice {invoice['invoiceNumber']} (issued, 2026-10-01 to 2026-11-01) line 0"
    assert (finding.ledger, finding.derived) == ("409.45 units recorded before its lines read the ledger, 412.45 by "
                                                 "now", "400 counted")
    assert InvoiceLine.objects.get(charge_type="usage").used_quantity == D("400")  # a document: never repaired
    # more than the ledger holds even now: events counted twice
    InvoiceLine.objects.filter(charge_type="usage").update(used_quantity=D("412.46"))
    [finding] = ledger_verify(now=NOW, book=book, checks=("final_invoices",))[0].findings["final_invoices"]
    assert finding.derived == "412.46 counted"
    for counted in ("409.45", "412.45"):  # between the two: what the read saw, give or take batches in flight
        InvoiceLine.objects.filter(charge_type="usage").update(used_quantity=D(counted))
        assert ledger_verify(now=NOW, book=book, checks=("final_invoices",))[0].drift == 0


def june_pool(api, book, monkeypatch):
    """A pool subscription from June 2025 with 30 units used in June and June's grant, the clock on June 10."""
    from core import clock

    from tests.billing.pools import pool_strategy, pool_subscription, run_jobs, use
    from tests.factories import AgentFactory, CustomerFactory, SignalFactory
    from tests.billing.support import create_plan
    from types import SimpleNamespace

    agent = AgentFactory(book=book)
    chain = SimpleNamespace(agent=agent, signal=SignalFactory(book=book, agent=agent),
                            customer=CustomerFactory(book=book), plan=create_plan(api, agent.id))
    monkeypatch.setattr(clock, "now", lambda: datetime(2025, 6, 10, 12, tzinfo=UTC))
    pool_subscription(api, chain, start="2025-06-01T00:00:00Z", strategy=pool_strategy(chain))
    use(chain, 30, at=datetime(2025, 6, 5, tzinfo=UTC))
    run_jobs("2025-06-10T12:00:00Z")  # June's grant
    return chain


def settled_june_pool(api, book, monkeypatch) -> CreditGrant:
    """A pool subscription from June 2025 with 30 units used in June, its June period settled."""
    from tests.billing.pools import run_jobs

    chain = june_pool(api, book, monkeypatch)
    run_jobs("2025-07-01T00:00:00Z")  # June ends and is settled
    grant = CreditGrant.objects.get(kind="period", period_start=datetime(2025, 6, 1, tzinfo=UTC))
    assert grant.consumed_units == 30
    grant.chain = chain
    return grant


def test_a_settled_credit_pool_period_that_differs_from_the_ledger_is_drift_and_repaired(api, book, monkeypatch):
    grant = settled_june_pool(api, book, monkeypatch)
    assert ledger_verify(now=NOW, book=book, checks=("credit_pools",))[0].drift == 0
    CreditGrant.objects.filter(pk=grant.pk).update(consumed_units=12)
    [finding] = ledger_verify(now=NOW, book=book, checks=("credit_pools",))[0].findings["credit_pools"]
    assert finding.ledger == "30 units used" and finding.derived == "12 settled"
    ledger_verify(now=NOW, book=book, checks=("credit_pools",), repair=True)
    assert CreditGrant.objects.get(pk=grant.pk).consumed_units == 30


def test_usage_recorded_for_a_settled_period_after_its_settlement_is_no_drift_and_no_repair_counts_it(
        api, book, monkeypatch):
    """A settlement is final (docs/decisions/credit-pools.md): a batch dated June 30 that arrives two minutes
    after June was settled moves neither the settlement nor, through a repair, the top-up balance."""
    from core import clock
    from tests.billing.pools import use

    grant = settled_june_pool(api, book, monkeypatch)
    monkeypatch.setattr(clock, "now", lambda: datetime(2025, 7, 1, 0, 2, tzinfo=UTC))
    use(grant.chain, 25, at=datetime(2025, 6, 30, 23, 59, tzinfo=UTC))
    assert ledger_verify(now=NOW, book=book, checks=("credit_pools",))[0].drift == 0
    CreditGrant.objects.filter(pk=grant.pk).update(consumed_units=12)  # real drift beside the late batch
    [finding] = ledger_verify(now=NOW, book=book, checks=("credit_pools",))[0].findings["credit_pools"]
    assert finding.ledger == "30 units used" and finding.derived == "12 settled"
    ledger_verify(now=NOW, book=book, checks=("credit_pools",), repair=True)
    assert CreditGrant.objects.get(pk=grant.pk).consumed_units == 30  # as settled: the late 25 do not count
    assert ledger_verify(now=NOW, book=book, checks=("credit_pools",))[0].drift == 0  # and the repair holds


def test_a_batch_stamped_before_a_settlement_and_committed_after_it_is_no_drift(api, book, monkeypatch):
    """A batch's events are stamped with its request's start: one that started 200 ms before June's settlement and
    committed after it was not there to count. It was drift, and the repair settled June again with it, moving the
    carried top-up balance the settlement had fixed."""
    from core import clock
    from tests.billing.pools import use

    grant = settled_june_pool(api, book, monkeypatch)
    monkeypatch.setattr(clock, "now", lambda: grant.settled_at - timedelta(milliseconds=200))
    use(grant.chain, 25, at=datetime(2025, 6, 30, 23, 59, tzinfo=UTC))  # in flight during the settlement
    assert ledger_verify(now=NOW, book=book, checks=("credit_pools",))[0].drift == 0
    ledger_verify(now=NOW, book=book, checks=("credit_pools",), repair=True)
    assert CreditGrant.objects.get(pk=grant.pk).consumed_units == 30
    CreditGrant.objects.filter(pk=grant.pk).update(consumed_units=56)  # more than was ever recorded: drift
    [finding] = ledger_verify(now=NOW, book=book, checks=("credit_pools",))[0].findings["credit_pools"]
    assert finding.ledger == "30 to 55 units used" and finding.derived == "56 settled"


def test_a_settlement_counts_the_usage_recorded_by_the_instant_it_is_stamped_with(api, book, monkeypatch):
    """The settle job's clock reads July 1 00:00:00; a batch dated June 30 is recorded five seconds later and
    committed before the job reads the ledger. The settlement is stamped 00:00:00 and counts what was recorded by
    then, as the verifier does: not the late batch (it counted it, and every verification reported drift)."""
    from core import clock

    from tests.billing.pools import run_jobs, use

    chain = june_pool(api, book, monkeypatch)
    monkeypatch.setattr(clock, "now", lambda: datetime(2025, 7, 1, 0, 0, 5, tzinfo=UTC))
    use(chain, 25, at=datetime(2025, 6, 30, 23, 59, tzinfo=UTC))
    run_jobs("2025-07-01T00:00:00Z")  # June ends and is settled
    grant = CreditGrant.objects.get(kind="period", period_start=datetime(2025, 6, 1, tzinfo=UTC))
    assert (grant.consumed_units, grant.settled_at) == (30, datetime(2025, 7, 1, tzinfo=UTC))
    assert ledger_verify(now=NOW, book=book, checks=("credit_pools",))[0].drift == 0


def test_a_draft_whose_discount_changed_after_its_period_got_usage_is_stale_not_drift(api, book):
    """A PATCH of a draft's discount re-totals its lines as they are: it reads no usage, so usage recorded before
    it still makes the draft stale (refreshed before it is issued), not drifted."""
    chain = billing_chain(api, book, [{"chargeType": "usage", "pricingModel": "flat", "rate": "2"}],
                          start="2026-10-01T00:00:00Z")
    generated = api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                   "subscriptionId": chain.subscription["id"],
                                                   "billingPeriodStart": "2026-10-01T00:00:00Z",
                                                   "billingPeriodEnd": "2026-11-01T00:00:00Z"}).json()
    api.post("/v1/usage/record", {"records": [{
        "customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
        "signalName": chain.signal.name, "quantity": "5", "usageDate": "2026-10-05T10:00:00Z",
        "services": [{"model": "none-api", "modelProvider": "none", "quantity": 1}]}]})
    assert api.patch(f"/v1/invoices/{generated['id']}", {"discountPercent": 10}).status_code == 200
    assert ledger_verify(now=NOW, book=book, checks=("draft_invoices",))[0].drift == 0


def test_a_repair_of_a_draft_whose_customer_was_deleted_since_reports_it_and_goes_on(api, book, monkeypatch):
    from billing.models import Invoice
    from tests.billing.invoice_support import billing_chain, draft, event, recurring, usage

    chain = billing_chain(api, book, [recurring("10"), usage("1")], start="2025-01-01T00:00:00Z",
                          endDate="2025-02-01T00:00:00Z")
    event(chain, 4, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    InvoiceLine.objects.filter(invoice_id=invoice["id"], charge_type="usage").update(quantity=D("1"))
    chain.customer.deleted_at = NOW
    chain.customer.save(update_fields=["deleted_at"])
    report = ledger_verify(now=NOW, book=book, checks=("draft_invoices", "rollup"), repair=True)[0]
    assert len(report.findings["draft_invoices"]) == 1 and "rollup" in report.findings
    assert Invoice.objects.get(pk=invoice["id"]).status == "draft"


def test_a_credit_pool_period_of_an_archived_month_is_neither_drift_nor_settled_again(api, book, monkeypatch):
    from customers.partitions import ledger_partition_detach, ledger_partitions_ensure

    grant = settled_june_pool(api, book, monkeypatch)
    june = datetime(2025, 6, 1, tzinfo=UTC)
    ledger_partitions_ensure(months=[june])
    assert ledger_partition_detach(june, now=NOW).rows == 1
    with connection.cursor() as cursor:  # the operator dumps and drops the archive: the events are gone for good
        cursor.execute("DROP TABLE customers_usageevent_archived_2025_06")
    report = ledger_verify(now=NOW, book=book, checks=("credit_pools", "matter_attributions"), repair=True)[0]
    assert report.drift == 0
    assert CreditGrant.objects.get(pk=grant.pk).consumed_units == 30  # not settled again as if nothing was used


def test_the_scheduled_job_logs_drift_as_an_error_shows_it_on_the_dashboard_and_forgets_it_once_repaired(
        api, book, llm, caplog, client, django_user_model):
    record(api, llm)
    analytics_rollup_catch_up(book_id=book.pk)
    UsageDailyRollup.objects.filter(grain=8).update(quantity=D("1"))
    with caplog.at_level(logging.ERROR, logger="billing.verification"):
        assert ledger_verify_all(now=NOW) == 1
    assert any("ledger drift in book" in record.message for record in caplog.records)
    drift = LedgerDrift.objects.get()
    assert (drift.check_name, drift.first_found_at) == ("rollup", NOW)
    superuser = django_user_model.objects.create_superuser(email="ops@acme.example", password="pw-console")
    client.force_login(superuser)
    page = client.get("/admin/", {"organization": str(book.organization_id), "environment": "test"})
    assert b"The ledger verifier found figures that differ from the" in page.content
    ledger_verify(now=NOW, book=book, repair=True)
    assert ledger_verify_all(now=NOW) == 0
    assert not LedgerDrift.objects.exists()


def test_a_book_whose_ledger_lost_every_event_is_still_verified_and_its_drift_kept(api, book, llm):
    record(api, llm, count=2)
    analytics_rollup_catch_up(book_id=book.pk)
    assert ledger_verify_all(now=NOW) == 0
    with connection.cursor() as cursor:  # every event gone from the ledger, behind the service's back
        cursor.execute("DELETE FROM customers_usageevent WHERE book_id = %s", [book.pk])
    assert not UsageEvent.objects.exists()
    found = ledger_verify_all(now=NOW)
    assert found > 0
    checks = set(LedgerDrift.objects.filter(book=book).values_list("check_name", flat=True))
    assert {"rollup", "idempotency_keys"} <= checks
    assert ledger_verify_all(now=NOW) == found  # kept until the figures agree again, not dropped with the events



def _issued(api, chain, start, end):
    invoice = api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                 "subscriptionId": chain.subscription["id"],
                                                 "billingPeriodStart": start, "billingPeriodEnd": end}).json()
    assert api.post(f"/v1/invoices/{invoice['id']}/send", {}).status_code == 200
    return Invoice.objects.get(pk=invoice["id"])


def test_two_final_invoices_counting_the_same_events_are_drift_though_each_agrees_with_the_ledger(api, book):
    chain = billing_chain(api, book, [{"chargeType": "usage", "pricingModel": "flat", "rate": "2"}],
                          start="2026-09-01T00:00:00Z")
    september = _issued(api, chain, "2026-09-01T00:00:00Z", "2026-10-01T00:00:00Z")
    october = _issued(api, chain, "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")
    assert ledger_verify(now=NOW, book=book, checks=("events_billed_once",))[0].drift == 0
    # Say October's claim reached back to September 20: the events of the last ten days of September are on both.
    claims = [{**claim, "start": "2026-09-20T00:00:00+00:00"} for claim in october.billed_claims]
    Invoice.objects.filter(pk=october.pk).update(billed_claims=claims)
    [finding] = ledger_verify(now=NOW, book=book, checks=("events_billed_once",))[0].findings["events_billed_once"]
    assert finding.subject == (f"invoices {september.invoice_number} and {october.invoice_number} "
                               f"(signal {chain.signal.id})")
    assert finding.derived == "both bill the events from 2026-09-20 00:00 to 2026-10-01 00:00"
    Invoice.objects.filter(pk=october.pk).update(status="void")  # voiding one of them puts it right
    assert ledger_verify(now=NOW, book=book, checks=("events_billed_once",))[0].drift == 0


def test_an_invoice_whose_totals_its_lines_do_not_give_is_drift(api, book):
    chain = billing_chain(api, book, [{"chargeType": "recurring", "rate": "100", "billingFrequency": "monthly"}],
                          start="2026-10-01T00:00:00Z")
    invoice = _issued(api, chain, "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")
    Invoice.objects.filter(pk=invoice.pk).update(discount_percent=D("10"), tax_percent=D("8.25"))
    [finding] = ledger_verify(now=NOW, book=book, checks=("invoice_totals",))[0].findings["invoice_totals"]
    assert finding.subject == f"invoice {invoice.invoice_number} (issued, 2026-10-01 to 2026-11-01) totals"
    # 100.00 less 10% is 90.00; 8.25% tax on it is 7.425, 7.43 half-up
    assert finding.ledger == "its lines give subtotal 100.00, discount 10.00, tax 7.43, total 97.43"
    assert finding.derived == "subtotal 100.00, discount 0.00, tax 0.00, total 100.00"
    Invoice.objects.filter(pk=invoice.pk).update(discount=D("10"), tax=D("7.43"), total=D("97.43"))
    assert ledger_verify(now=NOW, book=book, checks=("invoice_totals",))[0].drift == 0


def test_an_invoice_whose_amount_paid_its_payments_do_not_give_is_drift(api, book, client, settings):
    from tests.billing.invoice_support import WEBHOOK_SECRET, pay
    settings.STRIPE_WEBHOOK_SECRET, settings.STRIPE_SECRET_KEY = WEBHOOK_SECRET, ""
    chain = billing_chain(api, book, [{"chargeType": "recurring", "rate": "100", "billingFrequency": "monthly"}],
                          start="2026-10-01T00:00:00Z")
    invoice = _issued(api, chain, "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z")
    assert pay(client, {"id": str(invoice.pk), "total": 100}).status_code == 200
    assert ledger_verify(now=NOW, book=book, checks=("invoice_totals",))[0].drift == 0
    Invoice.objects.filter(pk=invoice.pk).update(amount_paid=D("90"))
    [finding] = ledger_verify(now=NOW, book=book, checks=("invoice_totals",))[0].findings["invoice_totals"]
    assert finding.subject == f"invoice {invoice.invoice_number} (paid) amount paid"
    assert (finding.ledger, finding.derived) == ("its payments net of refunds add up to 100.00", "amount paid 90.00")
    # A payment saying 5.00 refunded with no refund behind it (and the invoice's figure following it)
    Invoice.objects.filter(pk=invoice.pk).update(amount_paid=D("95"))
    payment = Payment.objects.get(invoice_id=invoice.pk)
    Payment.objects.filter(pk=payment.pk).update(refunded_amount=D("5"))
    [finding] = ledger_verify(now=NOW, book=book, checks=("invoice_totals",))[0].findings["invoice_totals"]
    assert finding.subject == f"payment {payment.provider_payment_id} of invoice {invoice.invoice_number}"
