#!/usr/bin/env python3
"""Ingestion benchmark: batches of 100 records from several concurrent clients.

It starts nothing itself. Two modes:

  # the service, as `make run` serves it (gunicorn + PostgreSQL)
  bench/ingest.py --url http://127.0.0.1:8000 --key svc_sk_test_... [--clients 4] [--seconds 20]

  # the baseline: the same rows into an equivalent table with plain psycopg batched INSERTs
  bench/ingest.py --baseline executemany --database-url postgres://postgres:postgres@127.0.0.1:5432/billing
  bench/ingest.py --baseline multirow --database-url ...
  bench/ingest.py --baseline minimal --database-url ...

  # CPU per batch split by process: name the gunicorn master and the PostgreSQL postmaster (their children,
  # live and exited, are counted with them), and the worker's main process if there is one
  bench/ingest.py ... --web-pid "$(cat gunicorn.pid)" --postgres-pid "$(head -1 $PGDATA/postmaster.pid)"

Baselines, each one transaction per batch of 100 rows:
- `executemany`: psycopg's batched INSERT, `cursor.executemany(INSERT ... VALUES (%s, ...), rows)` (psycopg 3
  sends the batch in pipeline mode, one round trip);
- `multirow`: one `INSERT ... VALUES (...), (...), ...` statement of 100 rows, a stronger bound;
- `minimal`: `executemany` into a minimal table: the same columns and types, a primary key and a unique index
  on the idempotency key, nothing else (no other index, check or default): what inserting these rows costs
  PostgreSQL at the least.

All print events per second and p50/p99 batch latency (one batch = 100 records = one request or one
transaction). Clients are processes (not threads) so the load generator is not limited by one interpreter.
The ledger-shaped baseline table is created with `CREATE TABLE ... (LIKE customers_usageevent INCLUDING ALL)`:
the same columns, defaults, checks and indexes as the ledger (foreign keys aside); the minimal one with
`LIKE customers_usageevent INCLUDING DEFAULTS` (columns, types and defaults) plus the two keys. Both are
dropped afterwards. Their rows carry time-ordered ids, as the service's events do.

CPU split: the utime and stime of each named process and of its children (those alive from /proc/<pid>/stat,
those exited and reaped from the parent's cutime and cstime) before and after the run, and the load generator's
own from getrusage(RUSAGE_CHILDREN); divided by the batches sent. Other processes on the machine are not in it.
"""
import argparse
import http.client
import json
import multiprocessing
import os
import resource
import statistics
import sys
import time
import urllib.parse
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from core.ids import time_ordered_uuid  # noqa: E402  (the service's event ids; no Django needed)

BATCH = 100
MODELS = [("gpt-4o", "openai"), ("gpt-4o-mini", "openai"), ("claude-3-5-sonnet-20241022", "anthropic")]


def make_records(client: int, batch_number: int, customers: int) -> list[dict]:
    base = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=batch_number)
    records = []
    for i in range(BATCH):
        model, provider = MODELS[i % len(MODELS)]
        records.append({
            # 100 distinct customers per batch, moving on with every batch so that all of them are named
            "customerExternalId": f"bench-customer-{(client * 7919 + batch_number * BATCH + i) % customers}",
            "agentCode": f"bench-agent-{i % 3}",
            "signalName": f"bench-signal-{i % 5}",
            "model": model, "modelProvider": provider,
            "inputTokens": 1000 + i, "outputTokens": 200 + i,
            "quantity": 1 + (i % 3),
            "usageDate": (base + timedelta(seconds=i)).isoformat().replace("+00:00", "Z"),
            "idempotencyKey": f"bench-{uuid.uuid4().hex}",
            "metadata": {"bench": True, "batch": batch_number},
        })
    return records


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


# --------------------------------------------------------------------------- the service

def http_client(args, client: int, deadline: float, queue):
    target = urllib.parse.urlsplit(args.url)
    connection = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=60)
    headers = {"x-api-key": args.key, "Content-Type": "application/json"}
    latencies, starts, accepted, errors, batch_number = [], [], 0, 0, 0
    while time.time() < deadline:
        # orjson: the load generator shares the two cores with the service, and stdlib json took 0.2 ms a batch
        # more of them (the baseline's clients encode no JSON: they hand psycopg tuples)
        body = orjson.dumps({"records": make_records(client, batch_number, args.customers)})
        starts.append(time.time())
        started = time.perf_counter()
        connection.request("POST", "/v1/usage/record", body=body, headers=headers)
        response = connection.getresponse()
        payload = response.read()
        latencies.append(time.perf_counter() - started)
        batch_number += 1
        if response.status == 200:
            accepted += orjson.loads(payload)["processed"]
        else:
            errors += 1
    queue.put((latencies, accepted, errors, starts))


# --------------------------------------------------------------------------- the baseline

COLUMNS = ("id", "raw_event_id", "book_id", "customer_id", "agent_id", "signal_id", "customer_external_id",
           "agent_code", "signal_name", "model", "model_provider", "input_tokens", "output_tokens", "quantity",
           "usage_cost", "event_status", "usage_date", "idempotency_key", "metadata", "created_at", "updated_at")


def baseline_client(args, client: int, deadline: float, queue):
    import psycopg

    # The same rows as the service writes: one id per customer, agent and signal name (the same name gets
    # the same id in every client), so the indexes over them see the same spread of keys.
    book = uuid.uuid5(uuid.NAMESPACE_URL, "bench-book")
    ids: dict[str, uuid.UUID] = {}

    def id_of(kind: str, name: str) -> uuid.UUID:
        key = f"{kind}:{name}"
        if key not in ids:
            ids[key] = uuid.uuid5(uuid.NAMESPACE_URL, key)
        return ids[key]

    placeholders = "(" + ", ".join(["%s"] * len(COLUMNS)) + ")"
    insert = f"INSERT INTO bench_usage_events_baseline ({', '.join(COLUMNS)}) VALUES "
    multirow_sql = insert + ", ".join([placeholders] * BATCH) + " ON CONFLICT DO NOTHING"
    single_sql = insert + placeholders + " ON CONFLICT DO NOTHING"
    latencies, starts, accepted, batch_number = [], [], 0, 0
    with psycopg.connect(args.database_url) as connection:
        while time.time() < deadline:
            now = datetime.now(timezone.utc)
            rows = [(time_ordered_uuid(), uuid.uuid4(), book, id_of("customer", record["customerExternalId"]),
                     id_of("agent", record["agentCode"]),
                     id_of("signal", record["agentCode"] + "/" + record["signalName"]),
                     record["customerExternalId"], record["agentCode"], record["signalName"],
                     record["model"], record["modelProvider"], record["inputTokens"],
                     record["outputTokens"], record["quantity"], "0.0042", "PROCESSED",
                     record["usageDate"], record["idempotencyKey"], json.dumps(record["metadata"]), now, now)
                    for record in make_records(client, batch_number, args.customers)]
            starts.append(time.time())
            started = time.perf_counter()
            with connection.transaction():
                if args.baseline == "multirow":
                    connection.execute(multirow_sql, [value for row in rows for value in row])
                else:
                    with connection.cursor() as cursor:
                        cursor.executemany(single_sql, rows)
            latencies.append(time.perf_counter() - started)
            batch_number += 1
            accepted += BATCH
    queue.put((latencies, accepted, 0, starts))


def prepare_baseline(database_url: str, minimal: bool):
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS bench_usage_events_baseline")
        if minimal:
            connection.execute(
                "CREATE TABLE bench_usage_events_baseline (LIKE customers_usageevent INCLUDING DEFAULTS)")
            connection.execute("ALTER TABLE bench_usage_events_baseline ADD PRIMARY KEY (id)")
            connection.execute("CREATE UNIQUE INDEX ON bench_usage_events_baseline (idempotency_key)")
        else:
            connection.execute("CREATE TABLE bench_usage_events_baseline (LIKE customers_usageevent INCLUDING ALL)")


def drop_baseline(database_url: str):
    import psycopg

    with psycopg.connect(database_url, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS bench_usage_events_baseline")


# --------------------------------------------------------------------------- CPU by process

TICKS = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            text = stat.read()
    except OSError:  # exited between the listing and the read
        return None
    return text[text.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields and int(fields[1]) == pid:
                found.append(int(entry))
    return found


def tree_cpu_seconds(pid: int) -> float:
    """CPU of pid and of its descendants so far: those alive read directly, those reaped through cutime/cstime."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    # after ")": state ppid ... utime(12) stime(13) cutime(14) cstime(15), counted from the state field
    total = sum(int(value) for value in fields[11:15]) / TICKS
    return total + sum(tree_cpu_seconds(child) for child in _children(pid))


def await_exited_reaped(pid: int | None, earlier: set[int]) -> None:
    """Wait (up to 5 s) until the children pid has now but did not have before a run have exited and been reaped:
    a baseline's backends exit when its clients close their connections, and an exited backend's CPU moves into
    the postmaster's cutime only once it is reaped; a snapshot taken before that counts none of it."""
    if not pid:
        return
    deadline = time.time() + 5
    while set(_children(pid)) - earlier and time.time() < deadline:
        time.sleep(0.05)


def cpu_snapshot(args) -> dict[str, float]:
    return {name: tree_cpu_seconds(pid) for name, pid in (("web", args.web_pid), ("postgres", args.postgres_pid),
                                                          ("worker", args.worker_pid)) if pid}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", help="base URL of the service")
    parser.add_argument("--key", help="a secret API key")
    parser.add_argument("--baseline", choices=["executemany", "multirow", "minimal"],
                        help="plain psycopg batched INSERTs instead of the service")
    parser.add_argument("--database-url", help="PostgreSQL URL for --baseline (the service's database)")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--customers", type=int, default=500, help="distinct customers the records name")
    parser.add_argument("--web-pid", type=int, help="the gunicorn master, for the CPU split")
    parser.add_argument("--postgres-pid", type=int, help="the PostgreSQL postmaster, for the CPU split")
    parser.add_argument("--worker-pid", type=int, help="the Celery worker's main process, for the CPU split")
    parser.add_argument("--by-second", action="store_true",
                        help="also print, for each second of the run, its batches, their mean and slowest latency and "
                             "how many were above the run's p90 (where the tail comes from)")
    args = parser.parse_args()
    if args.baseline and not args.database_url:
        parser.error("--baseline needs --database-url")
    if not args.baseline and not (args.url and args.key):
        parser.error("--url and --key are required (or --baseline)")

    target = baseline_client if args.baseline else http_client
    if args.baseline:
        prepare_baseline(args.database_url, minimal=args.baseline == "minimal")
    postgres_children_before = set(_children(args.postgres_pid)) if args.postgres_pid else set()
    cpu_before = cpu_snapshot(args)
    queue = multiprocessing.Queue()
    deadline = time.time() + args.seconds
    started = time.time()
    workers = [multiprocessing.Process(target=target, args=(args, n, deadline, queue)) for n in range(args.clients)]
    for worker in workers:
        worker.start()
    results = [queue.get() for _ in workers]
    for worker in workers:
        worker.join()
    elapsed = time.time() - started
    await_exited_reaped(args.postgres_pid, postgres_children_before)
    cpu = {name: tree_cpu_seconds_after - cpu_before[name]
           for name, tree_cpu_seconds_after in cpu_snapshot(args).items()}
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu["client"] = children.ru_utime + children.ru_stime
    if args.baseline:
        drop_baseline(args.database_url)

    latencies = [value for result in results for value in result[0]]
    accepted = sum(result[1] for result in results)
    errors = sum(result[2] for result in results)
    mode = f"baseline ({args.baseline})" if args.baseline else f"service {args.url}"
    print(f"mode: {mode}")
    print(f"clients: {args.clients}, seconds: {elapsed:.1f}, batches: {len(latencies)}, errors: {errors}")
    print(f"events/s: {accepted / elapsed:,.0f}")
    print(f"batch latency ms: p50 {percentile(latencies, 0.5) * 1000:.1f}, "
          f"p99 {percentile(latencies, 0.99) * 1000:.1f}, mean {statistics.mean(latencies) * 1000:.1f}")
    batches = max(1, len(latencies))
    print("CPU ms per batch: " + ", ".join(f"{name} {seconds * 1000 / batches:.2f}" for name, seconds in cpu.items())
          + f", in all {sum(cpu.values()) * 1000 / batches:.2f}")
    print(f"load average: {' '.join(f'{value:.2f}' for value in os.getloadavg())}")
    if args.by_second:
        print_by_second([(start, latency) for result in results for start, latency in zip(result[3], result[0])],
                        started)


def print_by_second(batches: list[tuple[float, float]], started: float) -> None:
    """Each second of the run (from its start): batches begun in it, their mean and slowest latency in ms, and how
    many took longer than the run's p90."""
    p90 = percentile([latency for _, latency in batches], 0.9)
    seconds: dict[int, list[float]] = {}
    for start, latency in batches:
        seconds.setdefault(int(start - started), []).append(latency)
    print(f"by second (p90 {p90 * 1000:.1f} ms): second, batches, mean ms, slowest ms, above p90")
    for second, latencies in sorted(seconds.items()):
        print(f"  {second:3d} {len(latencies):4d} {statistics.mean(latencies) * 1000:7.1f} "
              f"{max(latencies) * 1000:7.1f} {sum(1 for latency in latencies if latency > p90):4d}")


if __name__ == "__main__":
    main()
