#!/usr/bin/env python3
"""The recording statement on the partitioned ledger against the statement it replaced on the single table.

    .venv/bin/python bench/ledger_statement.py --server postgres://postgres:postgres@127.0.0.1:5432 \
        [--rounds 6] [--batches 600]

It (re)creates two databases: `bench_ledger_single`, migrated to the single-table ledger (customers 0008, with
its unique (book, idempotency_key) index), and `bench_ledger_partitioned`, migrated to the end (the monthly
partitions and the keys' table). Then, in alternating rounds, it sends `--batches` batches of 100 keyed events
of the current month to each, one transaction per batch over one connection, each with its statement as a
prepared statement: the one of the release before the partitioning (one `INSERT ... ON CONFLICT DO NOTHING`
into the ledger and the rollup's backlog) and the one of `customers/ledger.py` now (the keys first, then the
events whose key was taken, then the backlog). The rows are built as recording builds them (the same JSON
document). It prints each round's median and mean time per batch; the first 100 batches of each round warm up
and are not counted. Only the database's side is measured: no HTTP, no validation, no pricing.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
SINGLE, PARTITIONED = "bench_ledger_single", "bench_ledger_partitioned"
WARM_UP = 100


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", default="postgres://postgres:postgres@127.0.0.1:5432")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--batches", type=int, default=600)
    options = parser.parse_args()
    with psycopg.connect(f"{options.server}/postgres", autocommit=True) as admin:
        for database in (SINGLE, PARTITIONED):
            admin.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {database}")
    for database, target in ((SINGLE, ["customers", "0008"]), (PARTITIONED, [])):
        subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", *target, "-v", "0"], check=True,
                       cwd=ROOT, env={**os.environ, "DATABASE_URL": f"{options.server}/{database}"})

    sys.path.insert(0, str(ROOT))
    os.environ["DATABASE_URL"] = f"{options.server}/{PARTITIONED}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    django.setup()
    from core.ids import time_ordered_uuids
    from customers import ledger
    from customers.partitions import settle_window

    values = ", ".join(ledger._sent_value(column, position) for position, column in enumerate(ledger.SENT_COLUMNS))
    single_sql = (
        f"WITH stored AS (INSERT INTO customers_usageevent ({', '.join(ledger.STAMPED_COLUMNS + ledger.SENT_COLUMNS)}) "
        f"SELECT %s, %s, %s, {values} FROM jsonb_array_elements(%s::jsonb) AS r ON CONFLICT DO NOTHING "
        f"RETURNING id, book_id), "
        f"pending AS (INSERT INTO customers_rollupbacklog (event_id, book_id) SELECT id, book_id FROM stored) "
        f"SELECT CASE WHEN count(*) = %s THEN NULL ELSE coalesce(array_agg(id), '{{}}') END FROM stored")
    partitioned_sql = ledger._insert_sql()
    book = uuid.uuid4()

    def document() -> tuple[str, datetime]:
        now = datetime.now(UTC)
        rows = [{"id": event_id, "raw_event_id": uuid.uuid4(), "customer_id": uuid.UUID(int=n),
                 "agent_id": uuid.UUID(int=1000 + n % 3), "signal_id": uuid.UUID(int=2000 + n % 5),
                 "customer_external_id": f"customer-{n}", "agent_code": "agent", "signal_name": "signal",
                 "model": "gpt-4o", "model_provider": "openai", "service_id": None, "input_tokens": 1000,
                 "output_tokens": 200, "cache_read_tokens": None, "cache_write_tokens": None, "services": None,
                 "quantity": Decimal(1), "usage_cost": Decimal("0.0045"), "event_status": "PROCESSED",
                 "usage_date": now, "environment": None, "idempotency_key": uuid.uuid4().hex,
                 "metadata": {"n": n}} for n, event_id in enumerate(time_ordered_uuids(100))]
        return ledger._document(rows), now

    def run(database: str, sql: str, parameters) -> list[float]:
        times = []
        with psycopg.connect(f"{options.server}/{database}", autocommit=True) as connection:
            connection.execute("SET TimeZone = 'UTC'")
            for _ in range(options.batches):
                text, now = document()
                started = time.perf_counter()
                with connection.transaction():
                    connection.execute(sql, parameters(text, now), prepare=True).fetchone()
                times.append(time.perf_counter() - started)
        return times[WARM_UP:]

    def shown(times: list[float]) -> str:
        return f"median {statistics.median(times) * 1000:.2f} ms, mean {statistics.mean(times) * 1000:.2f} ms"

    for number in range(1, options.rounds + 1):
        single = run(SINGLE, single_sql, lambda text, now: [book, now, now, text, 100])
        partitioned = run(PARTITIONED, partitioned_sql,
                          lambda text, now: [text, book, book, now, now, 100, *settle_window(now)])
        print(f"round {number}: single table {shown(single)} | partitioned with the keys' table {shown(partitioned)}")


if __name__ == "__main__":
    main()
