"""Reads on a streaming replica (core/replica.py; docs/decisions/infra.md): the service under gunicorn with
DATABASE_URL on a primary and DATABASE_REPLICA_URL on a hot standby that `pg_basebackup -R` made of it, both
started for this module (tests/live_servers.py; about 15 seconds, most of it migrating).

The replica's replay is paused, so a read that shows what the primary has and the replica lacks came from the
primary, and one that lacks it came from the replica. Then: a second caller's analytics and console reads come
from the replica while its lag is within DATABASE_REPLICA_MAX_LAG_SECONDS, and from the primary once it is past
it; the usage-record answer, invoice generation, the writer's own reads (read-your-writes) and paths not listed
in DATABASE_REPLICA_PATHS read the primary all along; a replica that stops leaves every read on the primary.
"""
import re
import subprocess
import sys
import time
from decimal import Decimal
from types import SimpleNamespace

import httpx
import pytest
from django.conf import settings

from core.replica import LAG_CHECK_SECONDS, ReplicaRouter, path_pattern, replica_reads
from tests.live_servers import (Cluster, Service, environment, flat_plan_invoice_body, remove, scratch_directory,
                                 seed)

BOUND = 10  # the service's DATABASE_REPLICA_MAX_LAG_SECONDS: the replica serves while lag + 1 s is within it
JANUARY = {"startDate": "2025-01-01", "endDate": "2025-01-31"}
OPERATOR = ("ops@acme.example", "a console password of the test's own")


@pytest.fixture(scope="module")
def replicated():
    scratch = scratch_directory("billing-replica-test-")
    cluster, service = Cluster(scratch, replica=True), None
    try:
        cluster.start()
        keys = seed(cluster.primary_url, ["writer@acme.example", "reader@acme.example"], operator=OPERATOR)
        writer, reader = keys["writer@acme.example"], keys["reader@acme.example"]
        service = Service(scratch, DATABASE_URL=cluster.primary_url, DATABASE_REPLICA_URL=cluster.replica_url,
                          DATABASE_REPLICA_MAX_LAG_SECONDS=str(BOUND), CELERY_TASK_ALWAYS_EAGER="1")
        yield SimpleNamespace(cluster=cluster, service=service, writer=writer, reader=reader)
    finally:
        if service is not None:
            service.stop()
        cluster.stop()
        remove(scratch)


def record(service, key, quantity: int, idempotency_key: str) -> dict:
    body = service.post("/usage/record", key, {"records": [{
        "customerExternalId": "cust-1", "agentCode": "support-bot", "signalName": "pages", "quantity": quantity,
        "model": "acme-llm-1", "modelProvider": "acmeai", "inputTokens": 1000, "outputTokens": 200,
        "usageDate": "2025-01-10T12:00:00Z", "idempotencyKey": idempotency_key}]})
    assert (body["processed"], body["successful"], body["failed"]) == (1, 1, 0), body
    return body["results"]["success"][0]


def january_events(service, key) -> int:
    return service.get("/analytics/usage", key, **JANUARY)["summary"]["totalEvents"]


def billing_chain(service, key) -> dict:
    """A flat 2.00 per page plan on cust-1's subscription from January 1st: the invoice generation's body."""
    return flat_plan_invoice_body(service, key, customer="cust-1", agent_code="support-bot", rate="2.00")


class Console:
    """A signed-in operator's browser: the console's usage events list, by its count."""

    def __init__(self, service):
        self.base, self.http = service.base, httpx.Client(base_url=service.base, timeout=60)
        page = self.http.get("/admin/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        signed_in = self.http.post("/admin/login/?next=/admin/", data={
            "username": OPERATOR[0], "password": OPERATOR[1], "csrfmiddlewaretoken": token, "next": "/admin/"})
        assert signed_in.status_code == 302, signed_in.text[:2000]
        self.signed_in_at = time.monotonic()

    def events(self) -> int:
        page = self.http.get("/admin/customers/usageevent/")
        assert page.status_code == 200, page.text[:2000]
        return int(re.search(r"(\d+) usage events?\b", page.text).group(1))


def primary_seconds_since(cluster, instant) -> float:
    (now,) = cluster.on_primary("SELECT clock_timestamp()")
    return (now - instant).total_seconds()


def test_reads_leave_the_primary_only_for_callers_that_did_not_write_and_only_within_the_bound(replicated):
    cluster, service, writer, reader = (replicated.cluster, replicated.service, replicated.writer,
                                        replicated.reader)
    console = Console(service)
    record(service, writer, 2, "first")
    generate = billing_chain(service, writer)
    cluster.replayed()  # a loaded machine may replay later than the reader asks: the replica serves within the bound
    assert january_events(service, reader) == 1
    # The operator's sign-in is a write: its reads stay on the primary for the bound after it.
    time.sleep(max(0.0, console.signed_in_at + BOUND - time.monotonic()))
    assert console.events() == 1

    # The replica replays one last commit and stops: its lag counts from that commit.
    cluster.on_primary("CREATE TABLE IF NOT EXISTS tick (at timestamptz)", database="postgres")
    (committed,) = cluster.on_primary("INSERT INTO tick VALUES (now()) RETURNING at", database="postgres")
    cluster.replayed()
    cluster.on_replica("SELECT pg_wal_replay_pause()")
    deadline = time.monotonic() + 30
    while cluster.on_replica("SELECT pg_get_wal_replay_pause_state()")[0] != "paused":
        # An idle replay pauses when the next record arrives: send one (replayed or not, the lag only grows).
        assert time.monotonic() < deadline, "the replica's replay did not pause"
        cluster.on_primary("INSERT INTO tick VALUES (now())", database="postgres")
        time.sleep(0.1)
    (paused_at,) = cluster.on_replica("SELECT pg_last_wal_replay_lsn()")

    second = record(service, writer, 3, "second")  # the answer is the primary's: the event is stored
    assert second["eventId"] and second["customerExternalId"] == "cust-1"
    assert january_events(service, reader) == 1  # another caller: the replica, paused before the second event
    assert console.events() == 1  # the console too
    assert primary_seconds_since(cluster, committed) < BOUND - LAG_CHECK_SECONDS, (
        "the stale reads came after the bound: this machine was too slow for the test's premise")
    assert january_events(service, writer) == 2  # read-your-writes: the writer reads the primary
    assert len(service.get("/events", reader)) == 2  # a path not listed reads the primary
    invoice = service.post("/invoices/generate", writer, generate, status=201)  # reads the primary, always
    [line] = [line for line in invoice["lines"] if line["chargeType"] == "usage"]
    assert (line["usedQuantity"], line["amount"]) == (5, Decimal("10.00"))  # (2 + 3) x 2.00

    # Once the lag passes the bound, every read goes to the primary, though the replica is still paused.
    deadline = time.monotonic() + 4 * BOUND
    while january_events(service, reader) == 1:
        assert time.monotonic() < deadline, "reads stayed on a replica past the bound"
        time.sleep(0.2)
    assert primary_seconds_since(cluster, committed) >= BOUND - LAG_CHECK_SECONDS  # not before
    # Each web process measures the lag on its own, once a second: the console's may learn it a moment later.
    while console.events() == 1:
        assert time.monotonic() < deadline, "the console's reads stayed on a replica past the bound"
        time.sleep(0.2)
    assert cluster.on_replica("SELECT pg_last_wal_replay_lsn() = %s::pg_lsn", [paused_at])[0]  # still paused

    # Replay resumes: the replica serves again, with everything.
    cluster.on_replica("SELECT pg_wal_replay_resume()")
    cluster.replayed()
    assert january_events(service, reader) == 2 and console.events() == 2


def test_a_replica_that_stops_leaves_every_read_on_the_primary(replicated):
    cluster, service, reader = replicated.cluster, replicated.service, replicated.reader
    before = january_events(service, reader)
    cluster.replica.stop()
    try:
        time.sleep(LAG_CHECK_SECONDS + 0.2)  # each process measures again, and finds no replica
        for _ in range(4):  # both processes
            assert january_events(service, reader) == before
        assert "the replica's lag could not be measured" in service.log()
    finally:
        cluster.replica.start()


# --------------------------------------------------------------------------- the rules themselves

@pytest.mark.parametrize("path, replica", [
    ("/v1/analytics/usage", True), ("/v1/analytics/cost", True), ("/v1/customers/c1/revenue", True),
    ("/v1/subscriptions/s1/revenue", True), ("/portal/s/", True),
    ("/portal/s/invoices/0b6f5d3e-8c0e-4c7e-9b8a-6f1d2e3c4b5a/pdf", True), ("/admin/", True),
    ("/admin/customers/usageevent/", True),
    ("/v1/usage/record", False), ("/v1/invoices/generate", False), ("/v1/invoices", False), ("/v1/events", False),
    ("/v1/customers/c1", False), ("/v1/credit-balances", False), ("/portal/a-link-token", False),
    ("/portal/s/profile", False), ("/portal/s/invoices/0b6f5d3e-8c0e-4c7e-9b8a-6f1d2e3c4b5a/pay", False),
    ("/pay/a-pay-token", False), ("/v1/analytics", False),
])
def test_the_default_paths_that_may_read_a_replica(path, replica):
    """Analytics, revenue, the portal's pages and the console; never a link that is consumed or paid through."""
    assert bool(path_pattern(settings.DATABASE_REPLICA_PATHS).match(path)) is replica


def test_who_the_caller_is_and_reads_after_a_write_stay_on_the_primary():
    from django.contrib.sessions.models import Session

    from accounts.models import ApiKey, Book, Membership, Organization, User
    from customers.models import UsageEvent
    from portal.models import PortalSession

    router = ReplicaRouter()
    assert router.db_for_read(UsageEvent) == "default"  # no request marked
    with replica_reads():
        assert router.db_for_read(UsageEvent) == "replica"
        for model in (Session, User, Organization, Book, Membership, ApiKey, PortalSession):
            assert router.db_for_read(model) == "default", model
        assert router.db_for_write(UsageEvent) == "default"
        assert router.db_for_read(UsageEvent) == "default"  # the request wrote: it reads what it wrote
    assert router.allow_migrate("replica", "customers") is False


@pytest.mark.django_db
def test_reads_inside_a_transaction_stay_on_the_primary():
    from customers.models import UsageEvent

    with replica_reads():  # a django_db test runs inside a transaction
        assert ReplicaRouter().db_for_read(UsageEvent) == "default"


def test_a_replica_needs_redis_to_share_who_wrote():
    """Without the shared cache each process would know only its own callers' writes."""
    loaded = subprocess.run([sys.executable, "-c", "import config.settings"], cwd=settings.BASE_DIR,
                            capture_output=True, text=True, timeout=60,
                            env=environment(DATABASE_REPLICA_URL="postgres://billing@replica:5432/billing",
                                            REDIS_URL=""))
    assert loaded.returncode != 0
    assert "DATABASE_REPLICA_URL needs REDIS_URL" in loaded.stderr


def test_a_caller_whose_writes_cannot_be_looked_up_reads_the_primary(monkeypatch):
    """Redis down: the shared cache's reads miss (core/cache.py), which must not read as "this caller wrote
    nothing" and send a caller who just recorded usage to a replica that lacks it."""
    from django.test import RequestFactory

    import core.replica
    from core.cache import ResilientRedisCache
    from tests.live_servers import free_port

    unreachable = ResilientRedisCache(f"redis://127.0.0.1:{free_port()}/0", {"OPTIONS": {"socket_connect_timeout": 1}})
    monkeypatch.setattr(core.replica, "cache", unreachable)
    request = RequestFactory().get("/v1/analytics/usage", HTTP_X_API_KEY="svc_sk_test_a_writer")
    assert unreachable.get_many(["anything"]) == {}  # a miss, as every other reader of the cache wants it
    assert core.replica._wrote_recently(request) is True
