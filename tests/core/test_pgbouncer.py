"""Connection pooling (docs/operations.md, Connection pooling): the service under gunicorn with DATABASE_URL on
PgBouncer in transaction mode, with DB_TRANSACTION_POOLING=1 and nothing else, in front of a server of the
module's own (tests/live_servers.py; scripts/pgbouncer.sh brings PgBouncer without a system package).

More client connections than the pool's two server connections, so consecutive transactions of one client run
on different server connections: the hot path (concurrent usage batches with their replays and follow-up),
invoice generation and an analytics read all answer as they do on a direct connection, and PgBouncer's own
counters show the multiplexing.
"""
import json
import subprocess
import sys
import threading
from decimal import Decimal
from types import SimpleNamespace

import pytest

from tests.live_servers import (ROOT, Cluster, PgBouncer, Service, environment, flat_plan_invoice_body, remove,
                                scratch_directory, seed)

POOL_SIZE = 2
CLIENTS, BATCHES, RECORDS = 4, 6, 50


@pytest.fixture(scope="module")
def pooled():
    scratch = scratch_directory("billing-pgbouncer-test-")
    cluster, bouncer, service = Cluster(scratch, replica=False), None, None
    try:
        cluster.start()
        key = seed(cluster.primary_url, ["owner@acme.example"])["owner@acme.example"]
        bouncer = PgBouncer(scratch, cluster.primary, pool_size=POOL_SIZE)
        service = Service(scratch, workers=3, DATABASE_URL=bouncer.url, DB_TRANSACTION_POOLING="1",
                          CELERY_TASK_ALWAYS_EAGER="1")
        yield SimpleNamespace(cluster=cluster, bouncer=bouncer, service=service, key=key)
    finally:
        if service is not None:
            service.stop()
        if bouncer is not None:
            bouncer.stop()
        cluster.stop()
        remove(scratch)


def batch(client: int, number: int) -> dict:
    return {"records": [{
        "customerExternalId": f"cust-{index % 5}", "agentCode": "support-bot", "signalName": "pages",
        "model": "acme-llm-1", "modelProvider": "acmeai", "inputTokens": 1000, "outputTokens": 200,
        "usageDate": "2025-01-10T12:00:00Z", "idempotencyKey": f"c{client}-b{number}-r{index}",
    } for index in range(RECORDS)]}


def test_the_hot_path_an_invoice_and_analytics_work_through_pgbouncer_in_transaction_mode(pooled):
    service, key = pooled.service, pooled.key
    answers: dict[tuple[int, int], dict] = {}
    failures: list[BaseException] = []

    def client(number: int) -> None:
        try:
            for index in range(BATCHES):
                answers[number, index] = service.post("/usage/record", key, batch(number, index))
        except BaseException as failure:  # reported below, with the service's log
            failures.append(failure)

    threads = [threading.Thread(target=client, args=(number,)) for number in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not failures, failures[0]
    assert all((body["successful"], body["failed"]) == (RECORDS, 0) for body in answers.values())
    event_ids = {entry["eventId"] for body in answers.values() for entry in body["results"]["success"]}
    assert len(event_ids) == CLIENTS * BATCHES * RECORDS
    assert {entry["totalCostUsd"] for body in answers.values() for entry in body["results"]["success"]} == {
        "0.006"}  # 1,000 x 0.000003 + 200 x 0.000015: the catalog read of the batch

    replay = service.post("/usage/record", key, batch(0, 0))  # the same batch again: every record a replay
    assert [entry["eventId"] for entry in replay["results"]["success"]] == [
        entry["eventId"] for entry in answers[0, 0]["results"]["success"]]

    total = CLIENTS * BATCHES * RECORDS
    usage = service.get("/analytics/usage", key, startDate="2025-01-01", endDate="2025-01-31")
    assert usage["summary"]["totalEvents"] == total
    assert usage["summary"]["totalCost"] == Decimal("0.006") * total

    body = flat_plan_invoice_body(service, key, customer="cust-0", agent_code=None, rate="0.25")
    invoice = service.post("/invoices/generate", key, body, status=201)
    [line] = [line for line in invoice["lines"] if line["chargeType"] == "usage"]
    # cust-0 has every fifth record of every batch: 10 of 50, in 24 batches.
    assert (line["usedQuantity"], line["amount"]) == (240, Decimal("60.00"))  # 240 x 0.25

    # PgBouncer served every transaction on at most two server connections, for more clients than that.
    [pool] = [row for row in pooled.bouncer.show("POOLS") if row["database"] == "billing"]
    assert pool["pool_mode"] == "transaction"
    servers = [row for row in pooled.bouncer.show("SERVERS") if row["database"] == "billing"]
    clients = [row for row in pooled.bouncer.show("CLIENTS") if row["database"] == "billing"]
    assert 1 <= len(servers) <= POOL_SIZE < len(clients)
    [stats] = [row for row in pooled.bouncer.show("STATS") if row["database"] == "billing"]
    assert stats["total_xact_count"] >= CLIENTS * BATCHES


SHOW_DATABASES = ("import json, config.settings as s; print(json.dumps({alias: [database['OPTIONS'], "
                  "database.get('DISABLE_SERVER_SIDE_CURSORS', False)] for alias, database in s.DATABASES.items()}))")


@pytest.mark.parametrize("env, options, no_server_side_cursors", [
    ({}, {"prepare_threshold": 5, "options": "-c plan_cache_mode=force_generic_plan"}, False),
    ({"DB_PREPARED_STATEMENTS": "0"}, {}, False),
    ({"DB_TRANSACTION_POOLING": "1"}, {}, True),
    ({"DB_TRANSACTION_POOLING": "1", "DB_PREPARED_STATEMENTS": "1"}, {"prepare_threshold": 5}, True),
])
def test_transaction_pooling_turns_off_what_cannot_cross_server_connections(env, options, no_server_side_cursors):
    """Prepared statements unless said otherwise, server-side cursors and startup options; for the replica too."""
    shown = subprocess.run([sys.executable, "-c", SHOW_DATABASES], cwd=ROOT, capture_output=True, text=True,
                           timeout=60, env=environment(DATABASE_URL="postgres://billing@db:6432/billing",
                                                       DATABASE_REPLICA_URL="postgres://billing@replica:6432/billing",
                                                       REDIS_URL="redis://127.0.0.1:6379/0", **env))
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == {alias: [options, no_server_side_cursors] for alias in ("default", "replica")}
