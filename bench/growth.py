#!/usr/bin/env python3
"""Cost growth with the ledger's size: ingestion, invoice generation and analytics reads at 0, 1M and 10M events.

On a database of its own (never one anything else uses), migrated and with the catalog loaded:

  export DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/bench_growth
  bench/growth.py prepare                      # two organizations, 201 customers, the ledger's months
  DEBUG=0 SECRET_KEY=... SECURE_SSL_REDIRECT=0 .venv/bin/gunicorn config.wsgi:application \\
      --bind 127.0.0.1:8790 --workers 3 &     # the service as `make run` serves it
  bench/growth.py measure --url http://127.0.0.1:8790 --label 0
  bench/growth.py seed --to 1000000            # the large customer's one million events in one period
  bench/growth.py measure --url http://127.0.0.1:8790 --label 1M
  bench/growth.py seed --to 10000000           # nine million more over twelve months
  bench/growth.py measure --url http://127.0.0.1:8790 --label 10M --reads
  bench/growth.py report                       # the figures of every measure, as a Markdown table

The ratio between sizes is steadier when the sizes are measured side by side: three databases prepared the
same way (one empty, one seeded to 1M, one to 10M), each served by its own gunicorn, and the ingestion runs
alternated (`measure ... --ingest-runs 1 --invoice-runs 0` on each in turn, several times);
docs/performance.md has the commands and the figures.

The data (`prepare` and `seed`), in one book (the "growth book"):
- 200 customers on 8 agents with 3 signals each, each customer using 2 agents with one active
  subscription per agent (the shape of bench/analytics.py), and one large customer with one subscription
  billed on the 1st of each month;
- `seed` writes the large customer's one million events first, all in the last complete calendar month
  (one billing period), then spreads the rest over the 200 customers and the last 365 days, in time
  order, as recording writes them. Events are LLM calls on two catalog models, 10% multi-service (LLM
  plus an API service), 1% unpriced; every event carries an idempotency key as the Python client sends
  them (`ab-` and 128 random bits), written to the table of keys beside it.

Seeding writes the events and their keys with COPY into the partitioned ledger (each month's partition is
created by `prepare`, through customers/partitions.py, so nothing lands in the default partition), then
`VACUUM ANALYZE`, then rebuilds the book's analytics rollup (`customers.rollup.analytics_rollup_rebuild`).

`measure` first waits for the machine's 1-minute load average to fall below `--max-load` (it shares its
cores with other work), records it, and then:
- ingestion: bench/ingest.py against the service for `--ingest-seconds` (after a 5-second warm-up, not
  counted), `--ingest-runs` times, into a second organization's book (the "ingestion book": its
  records are dated January 2026, a month the growth book also fills), whose events, keys and rollup
  are deleted again after each run, so that every run starts from the ledger the label names;
- invoice generation: POST /v1/invoices/generate for the large customer's period, `--invoice-runs` times
  (each draft voided before the next, so each run creates one);
- with `--reads`: every analytics read of bench/analytics.py on the growth book (`--read-runs` each).
Results are appended to var/bench-growth-results.jsonl; `report` prints them.
"""
import argparse
import http.client
import importlib.util
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import time
import urllib.parse
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# bench/analytics.py's reads, loaded by path: its name is also the analytics app's.
_spec = importlib.util.spec_from_file_location("bench_analytics", ROOT / "bench" / "analytics.py")
bench_analytics = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_analytics)
HttpReader, percentile, timed_reads = bench_analytics.HttpReader, bench_analytics.percentile, bench_analytics.timed_reads

# What `prepare` made (keys, ids, what is seeded), one file per database.
STATE = ROOT / "var" / f"bench-growth-{urllib.parse.urlsplit(os.environ.get('DATABASE_URL', '')).path.strip('/')}.json"
RESULTS = ROOT / "var" / "bench-growth-results.jsonl"
LARGE_EVENTS = 1_000_000
SPREAD_DAYS = 365
CHUNK = 250_000  # events per COPY transaction (progress and memory)
EVENT_COLUMNS = ("id", "created_at", "updated_at", "book_id", "raw_event_id", "customer_id", "agent_id", "signal_id",
                 "customer_external_id", "agent_code", "signal_name", "model", "model_provider", "service_id",
                 "input_tokens", "output_tokens", "services", "quantity", "usage_cost", "event_status", "usage_date",
                 "idempotency_key", "metadata")
KEY_COLUMNS = ("book_id", "idempotency_key", "event_id", "usage_date")


def django_setup():
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    django.setup()


def month_floor(instant: datetime) -> datetime:
    return datetime(instant.year, instant.month, 1, tzinfo=UTC)


def previous_month(month: datetime) -> datetime:
    return month_floor(month - timedelta(days=1))


def load_state() -> dict:
    if not STATE.exists():
        sys.exit(f"{STATE} is missing: run `bench/growth.py prepare` first")
    return json.loads(STATE.read_text())


def save_state(state: dict) -> None:
    STATE.parent.mkdir(exist_ok=True)
    STATE.write_text(json.dumps(state, indent=2))


# --------------------------------------------------------------------------- prepare

def prepare(args):
    django_setup()
    from django.db import transaction

    from billing.models import Subscription
    from accounts.models import Book
    from accounts.services import (
        api_key_mint,
        member_ensure,
        organization_ensure,
    )
    from customers.models import Customer
    from customers.partitions import ledger_partitions_ensure, next_month

    if STATE.exists():
        sys.exit(f"{STATE} exists: this database is prepared (delete the file for a fresh database)")
    rng = random.Random(11)
    now = datetime.now(UTC)
    spread_start = (now - timedelta(days=SPREAD_DAYS)).replace(hour=0, minute=0, second=0, microsecond=0)
    period_start = previous_month(month_floor(now))  # the last complete month: the large customer's period
    keys = {}
    for role in ("growth", "ingestion"):
        organization = organization_ensure(name=f"Growth bench {role}")
        membership = member_ensure(organization=organization, email=f"growth-{role}@example.com", role="owner")
        keys[role] = (Book.objects.get(organization=organization, environment="test"),
                      api_key_mint(membership=membership, key_type="secret", environment="test")[1])
    book = keys["growth"][0]
    with transaction.atomic():
        seeded = bench_analytics.seed_book(
            book, rng, start_date=lambda rng: spread_start - timedelta(days=rng.randrange(1, 60)))
        agents, customers, plans, uses = seeded.agents, seeded.customers, seeded.plans, seeded.uses
        large = Customer.objects.create(book=book, name="Large customer", external_id="large")
        large_subscription = Subscription.objects.create(
            book=book, name="Large customer / Agent 0", plan=plans[agents[0].pk], agent=agents[0], customer=large,
            start_date=spread_start - timedelta(days=30), status="active", billing_day=1, seats_count=25)
    # Every month the seeding and the ingestion benchmark write (January 2026), and the scheduled job's months.
    months, month = [], month_floor(min(spread_start, datetime(2026, 1, 1, tzinfo=UTC)))
    while month <= next_month(next_month(next_month(month_floor(now)))):
        months.append(month)
        month = next_month(month)
    created = ledger_partitions_ensure(months=months)
    save_state({
        "growth_book": str(book.pk), "growth_key": keys["growth"][1],
        "ingestion_book": str(keys["ingestion"][0].pk), "ingestion_key": keys["ingestion"][1],
        "uses": {str(customer.pk): [str(agent.pk) for agent in uses[customer.pk]] for customer in customers},
        "read_subscription": str(Subscription.objects.filter(book=book).exclude(customer=large)
                                 .order_by("customer__external_id", "agent__agent_code").first().pk),
        "large_customer": str(large.pk), "large_subscription": str(large_subscription.pk),
        "large_agent": str(agents[0].pk), "period_start": period_start.isoformat(),
        "period_end": next_month(period_start).isoformat(), "spread_start": spread_start.isoformat(),
        "spread_end": now.isoformat(), "large_seeded": 0, "spread_seeded": 0,
    })
    print(f"prepared: 2 organizations, 201 customers, {len(created)} ledger partitions created; state in {STATE}")


# --------------------------------------------------------------------------- seed

class EventWriter:
    """Rows of the ledger and of the table of keys in COPY's text format, built as strings (the fastest way
    Python has to write ten million rows)."""

    def __init__(self, book_id: str, rng: random.Random):
        from catalog.models import ServiceEntry
        from customers.models import Agent, Customer, Signal

        self.book_id, self.rng = book_id, rng
        self.llms = list(ServiceEntry.objects.filter(is_active=True, is_api=False, cost_unit="token",
                                                     input_cost__gt=0, output_cost__gt=0)
                         .order_by("provider", "canonical_name")[:2])
        self.api = (ServiceEntry.objects.filter(is_active=True, is_api=True, input_cost__gt=0)
                    .order_by("canonical_name").first())
        if len(self.llms) < 2 or self.api is None:
            sys.exit("Load the catalog first: manage.py load_catalog")
        self.customers = {str(c.pk): c.external_id for c in Customer.objects.filter(book_id=book_id)}
        self.agents = {str(a.pk): a.agent_code for a in Agent.objects.filter(book_id=book_id)}
        self.signals = {}
        for signal in Signal.objects.filter(book_id=book_id).order_by("name"):
            self.signals.setdefault(str(signal.agent_id), []).append((str(signal.pk), signal.short_name))
        self.quantum = Decimal("1e-12")

    def rows(self, count: int, start: datetime, end: datetime, pick) -> tuple[list[str], list[str]]:
        """`count` events dated evenly over [start, end) in time order, each for the (customer, agent) that
        `pick()` gives; returns the ledger's lines and the keys' lines."""
        rng, events, keys = self.rng, [], []
        first, span = start.timestamp(), (end - start).total_seconds()
        randomness = os.urandom(42 * count)
        llm_a, llm_b, api = self.llms[0], self.llms[1], self.api
        for number in range(count):
            customer_id, agent_id = pick()
            signal_id, signal_name = rng.choice(self.signals[agent_id])
            seconds = first + number * span / count
            unix_ms = int(seconds * 1000)
            chunk = randomness[42 * number:42 * number + 42]
            event_id = uuid.UUID(int=(unix_ms << 80) | (int.from_bytes(chunk[:10], "big") & ~(0xF << 76) & ~(0x3 << 62))
                                 | (0x7 << 76) | (0x2 << 62)).hex
            raw_id = chunk[10:26].hex()
            key = "ab-" + chunk[26:42].hex()
            when = datetime.fromtimestamp(seconds, UTC).isoformat(sep=" ")
            tokens_in, tokens_out = rng.randrange(200, 5000), rng.randrange(50, 1500)
            llm = llm_a if rng.random() < 0.6 else llm_b
            roll = rng.random()
            services = r"\N"
            if roll < 0.01:
                model, provider, service_id, cost, status = "bench-unknown-model", "bench", r"\N", r"\N", \
                    "NEEDS_COST_BACKFILL"
                tin, tout = str(tokens_in), str(tokens_out)
            elif roll < 0.11:
                searches = rng.randrange(1, 5)
                llm_cost = tokens_in * llm.input_cost + tokens_out * llm.output_cost
                api_cost = api.input_cost * searches
                services = json.dumps([
                    {"model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": tokens_in,
                     "outputTokens": tokens_out, "serviceId": str(llm.pk), "costUsd": str(llm_cost)},
                    {"model": api.canonical_name, "modelProvider": api.provider, "quantity": str(searches),
                     "serviceId": str(api.pk), "costUsd": str(api_cost)}])
                model = provider = service_id = tin = tout = r"\N"
                cost, status = str((llm_cost + api_cost).quantize(self.quantum)), "PROCESSED"
            else:
                model, provider, service_id = llm.canonical_name, llm.provider, str(llm.pk)
                tin, tout = str(tokens_in), str(tokens_out)
                cost = str((tokens_in * llm.input_cost + tokens_out * llm.output_cost).quantize(self.quantum))
                status = "PROCESSED"
            events.append("\t".join((
                event_id, when, when, self.book_id, raw_id, customer_id, agent_id, signal_id,
                self.customers[customer_id], self.agents[agent_id], signal_name, model, provider, service_id,
                tin, tout, services, "1", cost, status, when, key, "{}")))
            keys.append(f"{self.book_id}\t{key}\t{event_id}\t{when}")
        keys.sort(key=lambda line: line.split("\t", 2)[1])  # in key order: the keys' index is filled leaf by leaf
        return events, keys


def copy_lines(cursor, table: str, columns, lines: list[str]) -> None:
    with cursor.copy(f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
        for start in range(0, len(lines), 10_000):
            copy.write("\n".join(lines[start:start + 10_000]) + "\n")


def seed(args):
    django_setup()
    from django.db import connection, transaction

    from accounts.models import Book
    from customers.models import UsageDailyRollup, UsageEvent, UsageEventKey
    from customers.rollup import analytics_rollup_rebuild

    state = load_state()
    seeded = state["large_seeded"] + state["spread_seeded"]
    if args.to <= seeded:
        sys.exit(f"the growth book already holds {seeded:,} seeded events")
    rng = random.Random(seeded + 1)
    writer = EventWriter(state["growth_book"], rng)
    large_add = max(0, min(args.to, LARGE_EVENTS) - state["large_seeded"])
    spread_add = args.to - seeded - large_add
    uses = [(customer, agent) for customer, agents in state["uses"].items() for agent in agents]
    large = (state["large_customer"], state["large_agent"])
    plan = []  # (count, start, end, pick), in chunks
    period = (datetime.fromisoformat(state["period_start"]), datetime.fromisoformat(state["period_end"]))
    spread = (datetime.fromisoformat(state["spread_start"]), datetime.fromisoformat(state["spread_end"]))
    for total, (start, end), pick in ((large_add, period, lambda: large),
                                      (spread_add, spread, lambda: rng.choice(uses))):
        chunks = -(-total // CHUNK)
        for n in range(chunks):  # each chunk a slice of the window, so the whole is in time order
            count = total // chunks + (1 if n < total % chunks else 0)
            plan.append((count, start + (end - start) * n / chunks, start + (end - start) * (n + 1) / chunks, pick))
    started = time.perf_counter()
    connection.ensure_connection()
    written = 0
    for count, start, end, pick in plan:
        events, keys = writer.rows(count, start, end, pick)
        with transaction.atomic(), connection.connection.cursor() as cursor:
            copy_lines(cursor, UsageEvent._meta.db_table, EVENT_COLUMNS, events)
            copy_lines(cursor, UsageEventKey._meta.db_table, KEY_COLUMNS, keys)
        written += count
        print(f"  {written:,} events ({time.perf_counter() - started:.0f}s)", flush=True)
    state["large_seeded"] += large_add
    state["spread_seeded"] += spread_add
    save_state(state)
    copied = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {UsageEvent._meta.db_table}")
        cursor.execute(f"VACUUM ANALYZE {UsageEventKey._meta.db_table}")
    vacuumed = time.perf_counter()
    rows = analytics_rollup_rebuild(book=Book.objects.get(pk=state["growth_book"]))
    with connection.cursor() as cursor:
        cursor.execute(f"VACUUM ANALYZE {UsageDailyRollup._meta.db_table}")
    built = time.perf_counter()
    print(f"{written:,} events copied in {copied - started:.0f}s, VACUUM ANALYZE {vacuumed - copied:.0f}s, "
          f"rollup of {rows:,} rows rebuilt in {built - vacuumed:.0f}s; the growth book holds "
          f"{state['large_seeded'] + state['spread_seeded']:,} events")


# --------------------------------------------------------------------------- measure

def load_average() -> float:
    return os.getloadavg()[0]


def wait_for_quiet(max_load: float, max_wait: float) -> float:
    """Wait until the 1-minute load average is below `max_load` (at most `max_wait` seconds); returns it."""
    deadline = time.time() + max_wait
    while load_average() >= max_load and time.time() < deadline:
        time.sleep(10)
    return load_average()


def ledger_counts(cursor) -> dict:
    cursor.execute("SELECT count(*) FROM customers_usageevent")
    events = cursor.fetchone()[0]
    cursor.execute("SELECT count(*) FROM customers_usageeventkey")
    keys = cursor.fetchone()[0]
    cursor.execute("SELECT pg_total_relation_size('customers_usageeventkey'), "
                   "(SELECT sum(pg_total_relation_size(inhrelid)) FROM pg_inherits "
                   " WHERE inhparent = 'customers_usageevent'::regclass)")
    keys_bytes, ledger_bytes = cursor.fetchone()
    return {"events": events, "keys": keys, "ledger_bytes": int(ledger_bytes or 0), "keys_bytes": keys_bytes}


def reset_ingestion_book(state: dict) -> None:
    """Delete what ingestion wrote into the ingestion book (its customers stay): the next run starts from the
    ledger the label names."""
    import psycopg

    book = state["ingestion_book"]
    with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
        for table in ("customers_rollupbacklog", "customers_usagedailyrollup", "customers_usageeventkey",
                      "customers_usageevent"):
            connection.execute(f"DELETE FROM {table} WHERE book_id = %s", [book])
        connection.execute("VACUUM ANALYZE customers_usageevent_p2026_01")
        for table in ("customers_rollupbacklog", "customers_usagedailyrollup", "customers_usageeventkey"):
            connection.execute(f"VACUUM ANALYZE {table}")


def service_cpu_seconds(url: str, database: str) -> float:
    """CPU time used so far by the service's gunicorn processes (those bound to `url`'s port) and by the
    PostgreSQL backends connected to `database`: what a batch costs the machine, whatever else runs on it."""
    bind, backend, ticks = f"127.0.0.1:{urllib.parse.urlsplit(url).port}", f" {database} ", 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline_file:
                cmdline = cmdline_file.read().replace(b"\0", b" ").decode(errors="replace")
            if not (("gunicorn" in cmdline and bind in cmdline)
                    or (cmdline.startswith("postgres: ") and backend in cmdline)):
                continue
            with open(f"/proc/{pid}/stat") as stat_file:
                fields = stat_file.read().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time the whole machine has spent busy (every core, every process) since boot."""
    with open("/proc/stat") as stat_file:
        fields = [int(value) for value in stat_file.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")  # less idle and iowait


def run_ingest(url: str, key: str, seconds: float, clients: int, database: str = "") -> dict:
    cpu_before, busy_before = service_cpu_seconds(url, database), machine_busy_seconds()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    generator_before, started = children.ru_utime + children.ru_stime, time.time()
    output = subprocess.run([sys.executable, str(ROOT / "bench" / "ingest.py"), "--url", url, "--key", key,
                             "--clients", str(clients), "--seconds", str(seconds)],
                            check=True, capture_output=True, text=True).stdout
    figures = {}
    for line in output.splitlines():
        if line.startswith("events/s:"):
            figures["events_per_second"] = float(line.split(":")[1].replace(",", ""))
        elif line.startswith("batch latency ms:"):
            parts = dict(part.strip().split(" ") for part in line.split(":", 1)[1].split(","))
            figures.update(p50_ms=float(parts["p50"]), p99_ms=float(parts["p99"]))
        elif line.startswith("clients:"):
            figures["errors"] = int(line.rsplit("errors:", 1)[1])
            figures["batches"] = int(line.split("batches:", 1)[1].split(",")[0])
    elapsed, service = time.time() - started, service_cpu_seconds(url, database) - cpu_before
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    generator = children.ru_utime + children.ru_stime - generator_before
    figures["cpu_ms_per_batch"] = round(service * 1000 / max(1, figures["batches"]), 2)
    # Cores that anything else on the machine kept busy meanwhile (other work sharing the two cores).
    figures["other_cores"] = round(max(0.0, machine_busy_seconds() - busy_before - service - generator) / elapsed, 2)
    return figures


class Api:
    def __init__(self, url: str, key: str):
        target = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=300)
        self.headers = {"x-api-key": key, "Content-Type": "application/json"}

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        self.connection.request("POST", path, body=json.dumps(body), headers=self.headers)
        response = self.connection.getresponse()
        return response.status, json.loads(response.read() or b"{}")


def time_invoices(url: str, state: dict, runs: int) -> dict:
    api = Api(url, state["growth_key"])
    body = {"customerId": state["large_customer"], "subscriptionId": state["large_subscription"],
            "billingPeriodStart": state["period_start"], "billingPeriodEnd": state["period_end"]}
    durations, total, warmed = [], None, False
    while len(durations) < runs:
        started = time.perf_counter()
        status, invoice = api.post("/v1/invoices/generate", body)
        elapsed = (time.perf_counter() - started) * 1000
        if status == 200 and invoice.get("status") == "draft":  # a draft an earlier run left: void it, again
            api.post(f"/v1/invoices/{invoice['id']}/void", {})
            continue
        if status != 201:
            sys.exit(f"invoice generation: {status} {invoice}")
        if warmed:  # the first is a warm-up
            durations.append(elapsed)
        warmed = True
        total = invoice.get("total")
        status, voided = api.post(f"/v1/invoices/{invoice['id']}/void", {})
        if status != 200:
            sys.exit(f"void: {status} {voided}")
    return {"p50_ms": statistics.median(durations), "p95_ms": percentile(durations, 0.95), "max_ms": max(durations),
            "runs": runs, "total": total}


def time_reads(url: str, state: dict, runs: int) -> list[dict]:
    reader = HttpReader(url, state["growth_key"])
    results = []
    for label, path in timed_reads(reader, state["read_subscription"]):
        durations = []
        for run in range(runs + 2):
            started = time.perf_counter()
            status, body = reader.get(path)
            elapsed = (time.perf_counter() - started) * 1000
            if status != 200:
                sys.exit(f"{path}: {status} {body[:300]!r}")
            if run >= 2:  # two warm-up reads
                durations.append(elapsed)
        results.append({"read": label, "p50_ms": statistics.median(durations),
                        "p95_ms": percentile(durations, 0.95), "max_ms": max(durations)})
        print(f"  {label:<50} p50 {results[-1]['p50_ms']:7.1f}  p95 {results[-1]['p95_ms']:7.1f}", flush=True)
    return results


def measure(args):
    import psycopg

    state = load_state()
    database = urllib.parse.urlsplit(os.environ["DATABASE_URL"]).path.strip("/")
    result = {"label": args.label, "at": datetime.now(UTC).isoformat(timespec="seconds"),
              "seeded": state["large_seeded"] + state["spread_seeded"]}
    with psycopg.connect(os.environ["DATABASE_URL"]) as connection, connection.cursor() as cursor:
        result["ledger"] = ledger_counts(cursor)
    print(f"[{args.label}] ledger: {result['ledger']['events']:,} events, {result['ledger']['keys']:,} keys", flush=True)

    if args.ingest_runs:
        reset_ingestion_book(state)
        runs = []
        for _ in range(args.ingest_runs):
            load = wait_for_quiet(args.max_load, args.max_wait)
            run_ingest(args.url, state["ingestion_key"], 5, args.clients)  # warm-up: connections, plans, caches
            figures = run_ingest(args.url, state["ingestion_key"], args.ingest_seconds, args.clients, database)
            figures["load"] = round(load, 2)
            runs.append(figures)
            print(f"  ingestion: {figures['events_per_second']:,.0f} events/s, p50 {figures['p50_ms']} ms, "
                  f"p99 {figures['p99_ms']} ms, errors {figures['errors']}, service CPU {figures['cpu_ms_per_batch']} ms "
                  f"a batch, other work {figures['other_cores']} cores (load before {load:.2f})", flush=True)
            reset_ingestion_book(state)
        result["ingestion"] = runs

    if args.invoice_runs:
        load = wait_for_quiet(args.max_load, args.max_wait)
        result["invoice"] = time_invoices(args.url, state, args.invoice_runs) | {"load": round(load, 2)}
        print(f"  invoice: p50 {result['invoice']['p50_ms']:.0f} ms, p95 {result['invoice']['p95_ms']:.0f} ms "
              f"(total {result['invoice']['total']}, load before {load:.2f})", flush=True)

    if args.reads:
        load = wait_for_quiet(args.max_load, args.max_wait)
        print(f"  reads (load before {load:.2f}):", flush=True)
        result["reads"] = time_reads(args.url, state, args.read_runs)
        result["reads_load"] = round(load, 2)
        result["reads_load_after"] = round(load_average(), 2)

    RESULTS.parent.mkdir(exist_ok=True)
    with RESULTS.open("a") as results:
        results.write(json.dumps(result) + "\n")


# --------------------------------------------------------------------------- report

def report(args):
    results = [json.loads(line) for line in RESULTS.read_text().splitlines() if line.strip()]
    print("| run | ledger events | events/s | p50 batch ms | p99 batch ms | service CPU ms a batch | other work, cores "
          "| load before |")
    print("|---|---|---|---|---|---|---|---|")
    for result in results:
        for run in result.get("ingestion") or []:
            print(f"| {result['label']} | {result['ledger']['events']:,} | {run['events_per_second']:,.0f} | "
                  f"{run['p50_ms']:.0f} | {run['p99_ms']:.0f} | {run.get('cpu_ms_per_batch', '')} | "
                  f"{run.get('other_cores', '')} | {run['load']:.2f} |")
    print()
    print("| ledger | invoice p50 ms | p95 | max | load before |")
    print("|---|---|---|---|---|")
    for result in results:
        if "invoice" in result:
            invoice = result["invoice"]
            print(f"| {result['label']} | {invoice['p50_ms']:.0f} | {invoice['p95_ms']:.0f} | {invoice['max_ms']:.0f} "
                  f"| {invoice['load']:.2f} |")
    for result in results:
        if "reads" in result:
            print()
            print(f"reads at {result['label']} (load before {result['reads_load']:.2f}, after "
                  f"{result['reads_load_after']:.2f}):")
            print("| read | p50 ms | p95 | max |")
            print("|---|---|---|---|")
            for read in result["reads"]:
                print(f"| {read['read']} | {read['p50_ms']:.0f} | {read['p95_ms']:.0f} | {read['max_ms']:.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("prepare")
    seeding = commands.add_parser("seed")
    seeding.add_argument("--to", type=int, required=True, help="events in the growth book after seeding")
    measuring = commands.add_parser("measure")
    measuring.add_argument("--url", required=True)
    measuring.add_argument("--label", required=True)
    measuring.add_argument("--clients", type=int, default=4)
    measuring.add_argument("--ingest-seconds", type=float, default=20)
    measuring.add_argument("--ingest-runs", type=int, default=3)
    measuring.add_argument("--invoice-runs", type=int, default=10)
    measuring.add_argument("--reads", action="store_true")
    measuring.add_argument("--read-runs", type=int, default=20)
    measuring.add_argument("--max-load", type=float, default=1.5)
    measuring.add_argument("--max-wait", type=float, default=600)
    commands.add_parser("report")
    args = parser.parse_args()
    {"prepare": prepare, "seed": seed, "measure": measure, "report": report}[args.command](args)


if __name__ == "__main__":
    main()
