#!/usr/bin/env python3
"""What one `POST /v1/usage/record` batch costs the web process, in process: no HTTP server, no load generator.

The WSGI application (as gunicorn loads it) is called with the ingestion benchmark's batches (bench/ingest.py:
100 records over 500 customers, 3 models, 5 signals), against a migrated database with the catalog loaded and
a secret key (`bench/ingest_pair.sh` shows how to make both). Two measures:

  # the thread's CPU a batch, best of --rounds rounds of --batches batches, and its PostgreSQL backend's (read
  # from /proc: the server on this host; clock ticks, so use rounds of a few hundred batches)
  bench/recording_cost.py --database-url postgres://... --key svc_sk_test_...

  # the instructions a batch, counted by callgrind (valgrind): the same at any machine load, so two builds
  # compare within a fraction of a percent where timings drift by tens (docs/performance.md)
  bench/recording_cost.py --database-url postgres://... --key svc_sk_test_... --instructions

Instructions are counted over two runs of the whole process, one with --small and one with --large batches
(the bodies of both are built alike, so what differs is the batches alone), and divided by the difference:
start-up and warm-up cancel out. `--records 1` gives the fixed cost of a request. REDIS_URL is used when set
(the production shape's rate count and follow-up), else the zero-setup default's in-process follow-up.
"""
import argparse
import io
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def measure(args) -> list[float]:
    """CPU ms a batch of each round (the thread's own time: no other process is counted)."""
    sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
    os.environ.update(DATABASE_URL=args.database_url, DJANGO_SETTINGS_MODULE="config.settings")
    for name, value in (("DEBUG", "0"), ("SECRET_KEY", "recording-cost-secret-key-not-for-production"),
                        ("SECURE_SSL_REDIRECT", "0")):
        os.environ.setdefault(name, value)
    import logging

    import orjson
    from config.wsgi import application
    from ingest import make_records

    logging.disable(logging.INFO)  # the access log's line a request: not what is measured
    # The follow-up is armed for 5 seconds of wall time (billing/followup.py): under callgrind, fifty times
    # slower, that is a few batches, and how many batches paid its Redis round trip depended on how fast the run
    # went (counts 2 million apart). An hour: every run arms it once and the batches after find it armed.
    import billing.followup

    billing.followup.DELAY_SECONDS = billing.followup.ARMED_SECONDS = 3600
    numbered = iter(range(10**9))
    backend_ms: list[float] = []

    def batches(count: int) -> list[bytes]:
        built = max(count, args.build)  # bodies built whatever `count` is: a fixed cost under callgrind
        return [orjson.dumps({"records": make_records(0, next(numbered), args.customers)[:args.records]})
                for _ in range(built)][:count]

    def backend_cpu() -> float:
        """CPU seconds of this process's PostgreSQL backend so far (same host; 0 when it cannot be read)."""
        from django.db import connection

        connection.ensure_connection()
        try:
            fields = Path(f"/proc/{connection.connection.info.backend_pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def run(bodies: list[bytes]) -> float:
        statuses = []
        backend_started = backend_cpu()
        started = time.thread_time()
        for body in bodies:
            environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/v1/usage/record", "SERVER_NAME": "127.0.0.1",
                       "SERVER_PORT": "8765", "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
                       "wsgi.url_scheme": "http", "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr,
                       "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": "application/json",
                       "HTTP_X_API_KEY": args.key, "wsgi.version": (1, 0), "wsgi.multithread": False,
                       "wsgi.multiprocess": True, "wsgi.run_once": False}
            response = application(environ, lambda status, headers, exc_info=None: statuses.append(status))
            b"".join(response)
            response.close()
        elapsed = time.thread_time() - started
        if not all(status.startswith("200") for status in statuses):
            sys.exit(f"a batch was not recorded: {statuses[:3]}")
        backend_ms.append((backend_cpu() - backend_started) * 1000 / max(len(bodies), 1))
        return elapsed * 1000 / max(len(bodies), 1)

    from customers.tasks import ledger_partitions_settle_task

    run(batches(20))
    # The batches are dated in one month: give it its partition now, as the worker does in a live run (until
    # then each batch asks for it, which a live run pays only in its first seconds).
    ledger_partitions_settle_task()
    run(batches(5))
    rounds = [run(batches(args.batches)) for _ in range(args.rounds)]
    return rounds, backend_ms[-args.rounds:]


def instructions(args) -> int:
    """Instructions a batch: callgrind's totals of a small and a large run, their difference per batch."""
    base = [sys.executable, __file__, "--database-url", args.database_url, "--key", args.key, "--records",
            str(args.records), "--customers", str(args.customers)]
    # Once without callgrind first: on a new database the first run creates the batches' customers, agents and
    # signals, work the small run would pay alone (a first count read 22.7 million instead of 33.5).
    subprocess.run([*base, "--batches", "5", "--rounds", "1"], capture_output=True, check=True)
    totals = {}
    for count in (args.small, args.large):
        command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *base, "--batches", str(count),
                   "--rounds", "1", "--build", str(args.large)]
        # One hash seed: string hashing is randomized per process, and dict and set layouts moved counts by percents.
        output = subprocess.run(command, capture_output=True, text=True, check=True,
                                env={**os.environ, "PYTHONHASHSEED": "0"}).stderr
        totals[count] = int(re.search(r"Collected : (\d+)", output).group(1))
    return (totals[args.large] - totals[args.small]) // (args.large - args.small)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--key", required=True, help="a secret API key of the database's book")
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--records", type=int, default=100, help="records a batch (1 to 100)")
    parser.add_argument("--customers", type=int, default=500)
    parser.add_argument("--build", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind")
    parser.add_argument("--small", type=int, default=10, help="batches of the small callgrind run")
    parser.add_argument("--large", type=int, default=60, help="batches of the large callgrind run")
    args = parser.parse_args()
    if args.instructions:
        print(f"instructions a batch: {instructions(args):,} ({args.records} records)")
        return
    rounds, backend = measure(args)
    print("CPU ms a batch:", " ".join(f"{value:.3f}" for value in rounds), f"(best {min(rounds):.3f})")
    print("PostgreSQL backend CPU ms a batch:", " ".join(f"{value:.2f}" for value in backend),
          f"(best {min(backend):.2f})")


if __name__ == "__main__":
    main()
