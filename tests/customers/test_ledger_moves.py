"""A month's rows moving out of the ledger's default partition, interleaved on purpose with the reads and the
derivations that run beside it (docs/decisions/ledger-partitions.md, "Moves and readers").

Each test stops the move at its worst moment, after its rows left the default partition and the month's
partition was attached but before the commit, starts a reader on another connection, and lets the move commit
only once the reader waits on a lock. Whatever the order, every read sees each stored event once: the rollup's
catch-up counts them all and drains nothing it did not count, an invoice bills them all, a matter lists them all.
"""
import threading
import time
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.db import connection, connections

from billing.services.invoices import invoice_generate
from core import clock
from customers import ledger, partitions
from customers.models import RollupBacklog, UsageDailyRollup, UsageEvent
from customers.partitions import DEFAULT, LEDGER, ledger_partitions, ledger_partitions_ensure, partition_name
from customers.rollup import analytics_rollup_catch_up
from matters.models import Matter
from tests.billing.invoice_support import billing_chain
from tests.factories import ServiceEntryFactory

D = Decimal
NOW = datetime(2031, 6, 15, 12, tzinfo=UTC)
MONTH = datetime(2030, 2, 1, tzinfo=UTC)  # inside the settle window of NOW, without a partition

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def frozen_now(monkeypatch, settings):
    monkeypatch.setattr(clock, "now", lambda: NOW)
    settings.LEDGER_PARTITIONS_PAST_MONTHS = 36


@pytest.fixture(autouse=True)
def unsettled(monkeypatch):
    """Rows of a back-filled month stay in the default partition until the test moves them itself, and the
    partitions the test created are dropped after it (a flush empties tables, it does not drop them)."""
    monkeypatch.setattr(ledger, "_settle_partitions", lambda: None)
    before = {partition.name for partition in ledger_partitions()}
    yield
    with connection.cursor() as cursor:
        for name in sorted({partition.name for partition in ledger_partitions()} - before):
            cursor.execute(f"DROP TABLE {name}")


@pytest.fixture
def llm(transactional_db):
    return ServiceEntryFactory(canonical_name="move-llm", provider="moveai", input_cost=D("0.000003"),
                               output_cost=D("0.000015"))


def in_default_partition() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {DEFAULT}")
        return cursor.fetchone()[0]


def lock_waits() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE NOT granted")
        return cursor.fetchone()[0]


class PausedMove:
    """The move of MONTH's rows into their partition, run on a thread of its own and held after the attach,
    before its commit, until `release()`."""

    def __init__(self, monkeypatch):
        self.attached, self.go_on, self.error = threading.Event(), threading.Event(), None
        real_attach = partitions._attach_month

        def attach_then_wait(cursor, month, table):
            name = real_attach(cursor, month, table)
            self.attached.set()
            assert self.go_on.wait(30)
            return name

        monkeypatch.setattr(partitions, "_attach_month", attach_then_wait)
        self.thread = threading.Thread(target=self._move)

    def _move(self):
        try:
            ledger_partitions_ensure(months=[MONTH])
        except BaseException as error:  # noqa: BLE001 - reported by release()
            self.error = error
        finally:
            connections.close_all()

    def start(self):
        self.thread.start()
        assert self.attached.wait(30), "the move did not reach its attach"

    def release(self):
        self.go_on.set()
        self.thread.join(30)
        assert self.error is None, self.error
        assert partition_name(MONTH) in {partition.name for partition in ledger_partitions()}


def read_beside(move: PausedMove, read):
    """Run `read` on another connection while the move is held; let the move commit once the read waits on a
    lock (or has finished); return what the read answered."""
    answer, failure = [], []

    def run():
        try:
            answer.append(read())
        except BaseException as error:  # noqa: BLE001 - re-raised below
            failure.append(error)
        finally:
            connections.close_all()

    reader = threading.Thread(target=run)
    reader.start()
    deadline = time.monotonic() + 10
    while reader.is_alive() and lock_waits() == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert reader.is_alive(), "the read ran through while the move was held: it read the ledger mid-move"
    move.release()
    reader.join(30)
    if failure:
        raise failure[0]
    return answer[0]


def record(api, records):
    response = api.post("/v1/usage/record", {"records": records})
    assert response.status_code == 200, response.json()
    assert not response.json()["results"]["failed"]
    return response.json()


def test_a_catch_up_beside_a_move_counts_every_event_and_drains_only_what_it_counted(api, llm, monkeypatch):
    import billing.recording

    monkeypatch.setattr(billing.recording, "usage_followup_schedule", lambda **_: None)  # the backlog waits
    records = [{"customerExternalId": "cust-move", "agentCode": "bot", "signalName": "calls", "quantity": 2,
                "model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 1000,
                "usageDate": f"2030-02-{day:02d}T10:00:00Z"} for day in range(1, 26)]
    record(api, records)
    assert in_default_partition() == 25
    book_id = UsageEvent.objects.values_list("book_id", flat=True).first()
    move = PausedMove(monkeypatch)
    move.start()
    read_beside(move, lambda: analytics_rollup_catch_up(book_id=book_id))
    analytics_rollup_catch_up(book_id=book_id)  # whatever the first one left
    month_row = UsageDailyRollup.objects.get(grain=8, day=MONTH.date())
    assert (month_row.event_count, month_row.quantity) == (25, D(50))
    assert not RollupBacklog.objects.exists()
    response = api.get("/v1/analytics/usage", {"startDate": "2030-02-01", "endDate": "2030-02-28",
                                               "groupBy": "monthly"})
    assert response.status_code == 200, response.json()
    assert response.json()["summary"]["totalEvents"] == 25


def test_an_invoice_generated_beside_a_move_bills_every_event(api, book, llm, monkeypatch):
    chain = billing_chain(api, book, [{"chargeType": "usage", "pricingModel": "flat", "rate": "1.50"}],
                          start="2030-01-01T00:00:00Z")
    records = [{"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
                "signalName": chain.signal.name, "quantity": "3.25", "model": llm.canonical_name,
                "modelProvider": llm.provider, "inputTokens": 10, "usageDate": f"2030-02-{day:02d}T08:00:00Z"}
               for day in range(1, 21)]
    record(api, records)
    assert in_default_partition() == 20
    move = PausedMove(monkeypatch)
    move.start()
    invoice, _ = read_beside(move, lambda: invoice_generate(
        book=book, now=NOW, customer_id=chain.customer.id, subscription_id=chain.subscription["id"],
        billing_period_start=datetime(2030, 2, 1, tzinfo=UTC), billing_period_end=datetime(2030, 3, 1, tzinfo=UTC)))
    usage_line = invoice.lines.get(charge_type="usage")
    assert usage_line.quantity == D("65")  # 20 x 3.25
    assert usage_line.amount == D("97.50")


def test_a_matter_read_beside_a_move_lists_every_event(api, book, llm, monkeypatch):
    matter = api.post("/v1/matters", {"name": "Doe v. Roe", "matterNumber": "M-101", "clientName": "Doe"})
    assert matter.status_code == 201, matter.json()
    matter_id = matter.json()["id"]
    records = [{"customerExternalId": "cust-law", "agentCode": "drafter", "signalName": "drafts",
                "model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 1000,
                "metadata": {"matterId": "M-101"}, "usageDate": f"2030-02-{day:02d}T09:00:00Z"} for day in range(1, 28)]
    record(api, records)
    assert in_default_partition() == 27
    move = PausedMove(monkeypatch)
    move.start()
    detail = read_beside(move, lambda: api.get(f"/v1/matters/{matter_id}").json())
    assert detail["eventCount"] == 27
    assert D(str(detail["actualCost"])) == D("0.081")  # 27 x 1000 tokens x $0.000003
    assert len(detail["events"]) == 27
    assert Matter.objects.get(pk=matter_id).matter_number == "M-101"
