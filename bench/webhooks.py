#!/usr/bin/env python3
"""Webhook benchmark: delivery throughput, and recording speed with endpoints configured against without.

    DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/bench_webhooks .venv/bin/python bench/webhooks.py

It migrates that database (create it first; it is filled, not emptied) and runs, in this process:

1. **Delivery**: `--events` events emitted in one book with one endpoint (a threaded `http.server` receiver on
   127.0.0.1 answering 204 at once), then every delivery attempted by `--workers` threads calling the attempt
   service as Celery workers would (claim, sign, POST, write the outcome). Prints deliveries per second and the
   p50/p99 of one attempt.
2. **Recording**: `--batches` batches of 100 usage records through the recording service (`usage_record`, as
   `POST /v1/usage/record` calls it, without HTTP), alternating between a book with no endpoint and a book with
   five endpoints of every type, `--rounds` times. Prints events per second of each. Usage events are not
   webhooks: both should match.
"""
import argparse
import os
import statistics
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
os.environ["WEBHOOKS_ALLOW_PRIVATE_URLS"] = "1"  # the receiver is on loopback
os.environ.pop("REDIS_URL", None)  # nothing is published: this process attempts every delivery itself

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402


class Receiver:
    def __init__(self):
        self.count = 0
        lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with lock:
                    receiver.count += 1
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"


def new_book(name: str):
    from accounts.services import book_for, organization_ensure
    return book_for(organization=organization_ensure(name=f"{name}-{time.time_ns()}"), environment="test")


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def delivery(args):
    from webhooks.delivery import delivery_attempt
    from webhooks.events import emit
    from webhooks.models import WebhookDelivery
    from webhooks.services import webhook_endpoint_create

    import webhooks.events as events
    events.dispatch_on_commit = lambda delivery_ids, now: None  # the worker threads below attempt every delivery
    receiver = Receiver()
    book = new_book("bench-webhooks")
    webhook_endpoint_create(book=book, url=receiver.url, event_types=[])
    data = {"id": str(uuid.uuid4()), "status": "paid", "total": "24.00", "lines": [{"amount": "20.00"}] * 5}
    began = time.perf_counter()
    with transaction.atomic():
        for _ in range(args.events):
            emit(book, "invoice.paid", data)
    emitted = time.perf_counter() - began
    ids = list(WebhookDelivery.objects.filter(endpoint__book=book, status="pending").values_list("pk", flat=True))
    now = datetime.now(timezone.utc) + timedelta(seconds=1)
    latencies = []

    def attempt(delivery_id):
        started = time.perf_counter()
        delivery_attempt(delivery_id, now=now)  # each worker thread keeps its own database connection
        latencies.append(time.perf_counter() - started)

    began = time.perf_counter()
    with ThreadPoolExecutor(args.workers) as pool:
        list(pool.map(attempt, ids))
    elapsed = time.perf_counter() - began
    delivered = WebhookDelivery.objects.filter(endpoint__book=book, status="delivered").count()
    print(f"emit: {args.events} events in {emitted:.2f} s ({args.events / emitted:,.0f}/s, one transaction)")
    print(f"delivery: {delivered} of {len(ids)} delivered ({receiver.count} received) in {elapsed:.2f} s with "
          f"{args.workers} workers: {delivered / elapsed:,.0f}/s; one attempt p50 "
          f"{statistics.median(latencies) * 1000:.1f} ms, p99 {percentile(latencies, 0.99) * 1000:.1f} ms")


def records(batch: int) -> list[dict]:
    return [{"customerExternalId": f"c{(batch * 100 + i) % 200}", "agentCode": "bench", "signalName": "calls",
             "model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 1000, "outputTokens": 200,
             "quantity": 1, "usageDate": "2026-01-10T12:00:00Z", "idempotencyKey": uuid.uuid4().hex}
            for i in range(100)]


def recording(args):
    from billing.recording import usage_record
    from webhooks.events import SUBSCRIBABLE_TYPES
    from webhooks.services import webhook_endpoint_create

    plain, hooked = new_book("bench-record-plain"), new_book("bench-record-hooked")
    for n in range(5):
        webhook_endpoint_create(book=hooked, url=f"https://hooks{n}.example.com/x",
                                event_types=list(SUBSCRIBABLE_TYPES))
    now = datetime(2026, 1, 20, tzinfo=timezone.utc)
    for book in (plain, hooked):  # warm-up: identities provisioned, caches filled
        usage_record(book=book, body={"records": records(0)}, now=now)
    rates = {"without endpoints": [], "with 5 endpoints": []}
    for _ in range(args.rounds):
        for label, book in (("without endpoints", plain), ("with 5 endpoints", hooked)):
            began = time.perf_counter()
            for batch in range(args.batches):
                usage_record(book=book, body={"records": records(batch)}, now=now)
            rates[label].append(args.batches * 100 / (time.perf_counter() - began))
    for label, values in rates.items():
        print(f"recording {label}: median {statistics.median(values):,.0f} events/s "
              f"({', '.join(f'{value:,.0f}' for value in values)})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--batches", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    delivery(args)
    recording(args)


if __name__ == "__main__":
    main()
