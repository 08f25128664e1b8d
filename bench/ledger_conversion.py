#!/usr/bin/env python3
"""The partitioning of a populated ledger: how long its locks hold recording back, measured under load.

    .venv/bin/python bench/ledger_conversion.py --server postgres://postgres:postgres@127.0.0.1:5432 \
        [--rows 1000000] [--writers 2] [--database bench_ledger_conversion]

It (re)creates the database, migrates it to the single-table ledger (customers 0008), fills the ledger with
`--rows` events at SQL speed (`INSERT ... SELECT generate_series`: one book, 1,000 customers, the rows spread
over the 13 months up to now, every other one keyed, JSON metadata: the width of real events), and analyzes it.
Then `--writers` processes record batches of 100 keyed events the way the release before the partitioning
does (its statement, one transaction per batch, into `customers_usageevent` by name; dates over the same 13
months) and one process sums one day of the book (100 days ago), each timing every call; meanwhile the migrations of the partitioning run (matters 0002
drops the attribution's foreign key, customers 0009 adds the keys' table, then the conversion of
customers/partition_conversion.py runs in this process so that its report can be printed, and `migrate`
records it). It prints each step, how long each lock that holds writes or reads back was held (from its
grant to its transaction's last statement, by the server's clock), the wait for it, the slowest write that
overlapped it, and the writers' and the reader's latencies before and during the
conversion, with the longest.
"""
import argparse
import multiprocessing
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from core.ids import time_ordered_uuids  # noqa: E402  (the service's event ids; no Django needed)

BOOK = "00000000-0000-0000-0000-0000000000be"
BATCH = 100

SEED = f"""
INSERT INTO customers_usageevent (id, created_at, updated_at, book_id, raw_event_id, customer_id, agent_id, signal_id,
  customer_external_id, agent_code, signal_name, model, model_provider, service_id, input_tokens, output_tokens,
  cache_read_tokens, cache_write_tokens, services, quantity, usage_cost, event_status, usage_date, environment,
  idempotency_key, metadata)
SELECT gen_random_uuid(), now(), now(), '{BOOK}', gen_random_uuid(),
  ('00000000-0000-0000-0000-' || lpad((g %% 1000)::text, 12, '0'))::uuid, NULL, NULL,
  'customer-' || (g %% 1000), 'agent-' || (g %% 3), 'signal-' || (g %% 5), 'gpt-4o', 'openai', NULL,
  1000 + g %% 100, 200 + g %% 50, NULL, NULL, NULL, 1 + g %% 3, 0.0045 + (g %% 7) * 0.001, 'PROCESSED',
  now() - (g %% 395) * interval '1 day' - (g %% 86400) * interval '1 second', 'production',
  CASE WHEN g %% 2 = 0 THEN 'seed-' || g END, jsonb_build_object('batch', g %% 100, 'bench', true)
FROM generate_series(%s::int, %s::int) g
"""

# The statement of the release before the partitioning (customers/ledger.py then), for batches of 100 rows.
OLD_INSERT = """
WITH stored AS (
INSERT INTO customers_usageevent (book_id, created_at, updated_at, id, raw_event_id, customer_id,
  customer_external_id, agent_code, signal_name, model, model_provider, input_tokens, output_tokens, quantity,
  usage_cost, event_status, usage_date, environment, idempotency_key, metadata)
SELECT %s, now(), now(), (r ->> 0)::uuid, (r ->> 1)::uuid, (r ->> 2)::uuid, r ->> 3, 'agent-0', 'signal-0', 'gpt-4o',
  'openai', 1000, 200, 1, 0.0045, 'PROCESSED', now() - (r ->> 5)::int * interval '1 second', 'production', r ->> 4,
  '{}'::jsonb
FROM jsonb_array_elements(%s::jsonb) AS r ON CONFLICT DO NOTHING RETURNING id, book_id),
pending AS (INSERT INTO customers_rollupbacklog (event_id, book_id) SELECT id, book_id FROM stored)
SELECT count(*) FROM stored
"""


def manage(url: str, *args: str) -> None:
    subprocess.run([sys.executable, str(ROOT / "manage.py"), *args, "-v", "0"], check=True, cwd=ROOT,
                   env={**os.environ, "DATABASE_URL": url})


def writer(url: str, stop, results) -> None:
    import json
    timings = []
    with psycopg.connect(url, autocommit=True) as connection:
        while not stop.is_set():
            rows = [[str(event_id), str(uuid.uuid4()), f"00000000-0000-0000-0000-{n:012d}", f"customer-{n}",
                     f"bench-{uuid.uuid4().hex}", random.randrange(395 * 86400)]
                    for n, event_id in enumerate(time_ordered_uuids(BATCH))]
            started = time.time()
            with connection.transaction():
                connection.execute(OLD_INSERT, [BOOK, json.dumps(rows)]).fetchone()
            timings.append((started, time.time() - started))
    results.put(timings)


def reader(url: str, stop, results) -> None:
    day = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=100)
    timings = []
    with psycopg.connect(url, autocommit=True) as connection:
        while not stop.is_set():
            started = time.time()
            connection.execute("SELECT count(*), sum(usage_cost) FROM customers_usageevent WHERE book_id = %s "
                               "AND usage_date >= %s AND usage_date < %s", [BOOK, day, day + timedelta(days=1)]).fetchone()
            timings.append((started, time.time() - started))
            time.sleep(0.05)
    results.put(timings)


def summary(label: str, timings: list[tuple[float, float]], start: float, end: float) -> str:
    def line(name, durations):
        if not durations:
            return f"    {name}: none"
        durations = sorted(durations)
        p99 = durations[min(len(durations) - 1, int(len(durations) * 0.99))]
        return (f"    {name}: {len(durations)} calls, p50 {statistics.median(durations) * 1000:.1f} ms, "
                f"p99 {p99 * 1000:.1f} ms, max {durations[-1] * 1000:.1f} ms")
    before = [d for t, d in timings if t < start]
    during = [d for t, d in timings if start <= t <= end]
    return "\n".join([f"  {label}", line("before the conversion", before), line("during the conversion", during)])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="postgres://postgres:postgres@127.0.0.1:5432")
    parser.add_argument("--database", default="bench_ledger_conversion")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--writers", type=int, default=2)
    options = parser.parse_args()
    url = f"{options.server}/{options.database}"
    with psycopg.connect(f"{options.server}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {options.database} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {options.database}")
    manage(url, "migrate", "customers", "0008")
    started = time.time()
    with psycopg.connect(url, autocommit=True) as connection:
        for first in range(1, options.rows + 1, 200_000):
            connection.execute(SEED, [first, min(options.rows, first + 199_999)])
        connection.execute("VACUUM ANALYZE customers_usageevent")
        size = connection.execute("SELECT pg_size_pretty(pg_total_relation_size('customers_usageevent'))").fetchone()[0]
    print(f"seeded {options.rows} events in {time.time() - started:.0f} s; the table and its indexes: {size}")

    stop, results = multiprocessing.Event(), multiprocessing.Queue()
    workers = [multiprocessing.Process(target=writer, args=(url, stop, results)) for _ in range(options.writers)]
    workers.append(multiprocessing.Process(target=reader, args=(url, stop, results)))
    for worker in workers:
        worker.start()
    time.sleep(5)  # the baseline

    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    django.setup()
    from django.core.management import call_command
    from django.utils import timezone

    from customers.partition_conversion import convert_ledger

    from django.db import connection

    statements = []

    def timed(execute, sql, params, many, context):  # each statement of the foreign key's migration
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            statements.append((time.perf_counter() - started, sql))

    conversion_start = time.time()
    with connection.execute_wrapper(timed):
        call_command("migrate", "matters", "0002", verbosity=0)
    foreign_key_dropped = sum(seconds for seconds, sql in statements if sql.startswith("ALTER TABLE"))
    call_command("migrate", "customers", "0009", verbosity=0)
    statements.clear()
    with connection.execute_wrapper(timed):
        report = convert_ledger(now=timezone.now())
    call_command("migrate", verbosity=0)  # records 0010 (nothing left to do) and applies the rest
    conversion_end = time.time()
    time.sleep(5)  # after
    stop.set()
    timings = [results.get() for _ in workers]
    for worker in workers:
        worker.join()

    print(f"conversion of {options.rows} rows, bound {report.bound:%Y-%m-%d}: "
          f"{conversion_end - conversion_start:.1f} s in all")
    print(f"  matters 0002, its ALTER TABLE statements (the attribution's foreign key dropped): "
          f"{foreign_key_dropped * 1000:.1f} ms")
    for step, seconds in report.steps.items():
        print(f"  {step}: {seconds:.2f} s")
    print("  locks (held: from its grant to its transaction's last statement, by the server's clock; the wait for it;"
          " the slowest batch of the writers that overlapped it, from asking to releasing, as the writers saw it):")
    writes = [timing for batch in timings[:-1] for timing in batch]
    for label, seconds in report.locked.items():
        asked, released = report.spans[label]
        overlapping = [duration for started, duration in writes if started < released and started + duration > asked]
        print(f"    {label}: held {seconds * 1000:.1f} ms, waited {report.waited.get(label, 0) * 1000:.1f} ms; "
              f"the slowest write overlapping it took {max(overlapping, default=0) * 1000:.1f} ms")
    print("  the conversion's statements of 10 ms or more:")
    for seconds, sql in statements:
        if seconds >= 0.01:
            print(f"    {seconds * 1000:8.1f} ms  {' '.join(sql.split())[:110]}")
    print(summary(f"{options.writers} writers, batches of {BATCH} keyed events (the previous release's statement)",
                  writes, conversion_start, conversion_end))
    print(summary("1 reader, one day of the book 100 days ago", timings[-1], conversion_start, conversion_end))
    with psycopg.connect(url, autocommit=True) as connection:
        events, keys = connection.execute(
            "SELECT (SELECT count(*) FROM customers_usageevent), (SELECT count(*) FROM customers_usageeventkey)"
        ).fetchone()
    print(f"after: {events} events, {keys} keys ({options.rows // 2} seeded keys + every written one)")


if __name__ == "__main__":
    main()
