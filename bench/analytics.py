#!/usr/bin/env python3
"""Analytics benchmark: one million usage events in a fresh organization, then every analytics read timed.

  # seed (DATABASE_URL as the service uses it; the catalog must be loaded: `manage.py load_catalog`)
  DATABASE_URL=postgres://... bench/analytics.py seed [--events 1000000] [--days 180]
  # prints the organization's owner key (secret, test book) on its last line

  # time every read through HTTP (the service as `make run` serves it) ...
  bench/analytics.py time --url http://127.0.0.1:8000 --key svc_sk_test_...
  # ... or in-process through Django's test client (DATABASE_URL as above)
  DATABASE_URL=postgres://... bench/analytics.py time --key svc_sk_test_... [--runs 20]

Seeding writes the events with COPY (psycopg), then builds the daily rollup with the same single
INSERT ... SELECT that repairs a book (`customers.rollup.analytics_rollup_rebuild`). The data: 200
customers on 8 agents with 3 signals each (each customer uses 2 agents, one subscription per agent),
two LLMs and one API service from the catalog, 10% multi-service events (LLM + API), 1% unpriced
(an unknown model), spread evenly over the last `--days` days and written in time order, as ingestion
writes them.
"""
import argparse
import http.client
import json
import os
import random
import statistics
import sys
import time
import urllib.parse
import uuid
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parent.parent
UTC = timezone.utc


def django_setup():
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django
    django.setup()


# --------------------------------------------------------------------------- seeding

EVENT_COLUMNS = ("id", "created_at", "updated_at", "book_id", "raw_event_id", "customer_id", "agent_id", "signal_id",
                 "customer_external_id", "agent_code", "signal_name", "model", "model_provider", "service_id",
                 "input_tokens", "output_tokens", "services", "quantity", "usage_cost", "event_status", "usage_date",
                 "metadata")


def seed_book(book, rng, *, start_date) -> SimpleNamespace:
    """The benchmark book's shape: 8 agents with 3 signals each, 200 customers, one plan an agent (a flat 0.05 a
    unit of each signal with a 100-unit minimum, a 49.00 platform fee, seats at 10.00 with 3 at least), and each
    customer subscribed to 2 of the agents from `start_date(rng)`. Answers agents, signals and plans by agent id,
    customers, and the agents each customer uses by its id."""
    from billing.models import PlanAgent, PricingPlan, PricingStrategy, Subscription
    from customers.models import Agent, Customer, Signal

    agents = Agent.objects.bulk_create([Agent(book=book, name=f"Agent {i}", agent_code=f"agent-{i}")
                                        for i in range(8)])
    signals = {agent.pk: Signal.objects.bulk_create([Signal(book=book, agent=agent, name=f"signal-{j}",
                                                            short_name=f"signal-{j}") for j in range(3)])
               for agent in agents}
    customers = Customer.objects.bulk_create([Customer(book=book, name=f"Customer {i}", external_id=f"cust-{i}")
                                              for i in range(200)])
    plans = {}
    for agent in agents:
        plan = PricingPlan.objects.create(book=book, name=f"Plan {agent.agent_code}")
        PlanAgent.objects.create(book=book, plan=plan, agent=agent)
        PricingStrategy.objects.bulk_create(
            [PricingStrategy(book=book, plan=plan, agent=agent, name=f"per {s.short_name}", charge_type="usage",
                             signal=s, pricing_model="flat", rate=Decimal("0.05"),
                             minimum_commitment=Decimal(100)) for s in signals[agent.pk]]
            + [PricingStrategy(book=book, plan=plan, agent=agent, name="platform", charge_type="recurring",
                               rate=Decimal(49)),
               PricingStrategy(book=book, plan=plan, agent=agent, name="seats", charge_type="seat_based",
                               pricing_model="flat", rate=Decimal(10), minimum_commitment=Decimal(3))])
        plans[agent.pk] = plan
    uses = {customer.pk: rng.sample(agents, 2) for customer in customers}
    Subscription.objects.bulk_create([
        Subscription(book=book, name=f"{customer.name} / {agent.name}", plan=plans[agent.pk], agent=agent,
                     customer=customer, start_date=start_date(rng), status="active", billing_day=1,
                     seats_count=rng.randrange(1, 10))
        for customer in customers for agent in uses[customer.pk]])
    return SimpleNamespace(agents=agents, signals=signals, customers=customers, plans=plans, uses=uses)


def seed(args):
    django_setup()
    from django.db import connection, transaction

    from catalog.models import ServiceEntry
    from accounts.models import Book
    from accounts.services import api_key_mint, member_ensure, organization_ensure
    from customers.models import UsageDailyRollup, UsageEvent
    from customers.rollup import analytics_rollup_rebuild

    rng = random.Random(7)
    llms = list(ServiceEntry.objects.filter(is_active=True, is_api=False, cost_unit="token", input_cost__gt=0,
                                            output_cost__gt=0).order_by("provider", "canonical_name")[:2])
    api_entry = (ServiceEntry.objects.filter(is_active=True, is_api=True, input_cost__gt=0)
                 .order_by("canonical_name").first())
    if len(llms) < 2 or api_entry is None:
        sys.exit("Load the catalog first: manage.py load_catalog")
    name = f"Analytics bench {datetime.now(UTC):%Y%m%d-%H%M%S}"
    organization = organization_ensure(name=name)
    book = Book.objects.get(organization=organization, environment="test")
    membership = member_ensure(organization=organization, email=f"bench-{uuid.uuid4().hex[:8]}@example.com",
                               role="owner")
    _, raw_key = api_key_mint(membership=membership, key_type="secret", environment="test")
    now = datetime.now(UTC)
    start = (now - timedelta(days=args.days)).replace(hour=0, minute=0, second=0, microsecond=0)

    with transaction.atomic():
        seeded = seed_book(book, rng, start_date=lambda rng: start + timedelta(days=rng.randrange(0, 60)))
    signals, customers, uses = seeded.signals, seeded.customers, seeded.uses

    def cost_of(entry, tokens_in, tokens_out):
        return Decimal(tokens_in) * entry.input_cost + Decimal(tokens_out) * entry.output_cost

    seconds = args.days * 86400
    started = time.perf_counter()
    connection.ensure_connection()
    with connection.connection.cursor() as cursor:
        with cursor.copy(f"COPY {UsageEvent._meta.db_table} ({', '.join(EVENT_COLUMNS)}) FROM STDIN") as copy:
            for number in range(args.events):
                customer = rng.choice(customers)
                agent = rng.choice(uses[customer.pk])
                signal = rng.choice(signals[agent.pk])
                when = start + timedelta(seconds=number * seconds / args.events)  # recorded in time order
                tokens_in, tokens_out = rng.randrange(200, 5000), rng.randrange(50, 1500)
                roll = rng.random()
                llm = llms[0] if rng.random() < 0.6 else llms[1]
                model, provider, service_id, services, quantity = llm.canonical_name, llm.provider, llm.pk, None, 1
                status = "PROCESSED"
                if roll < 0.01:
                    model, provider, service_id, cost, status = "bench-unknown-model", "bench", None, None, \
                        "NEEDS_COST_BACKFILL"
                elif roll < 0.11:
                    searches = rng.randrange(1, 5)
                    llm_cost, api_cost = cost_of(llm, tokens_in, tokens_out), api_entry.input_cost * searches
                    services = json.dumps([
                        {"model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": tokens_in,
                         "outputTokens": tokens_out, "serviceId": str(llm.pk), "costUsd": str(llm_cost)},
                        {"model": api_entry.canonical_name, "modelProvider": api_entry.provider,
                         "quantity": str(searches), "serviceId": str(api_entry.pk), "costUsd": str(api_cost)}])
                    model = provider = service_id = None
                    cost = (llm_cost + api_cost).quantize(Decimal("1e-12"))
                else:
                    cost = cost_of(llm, tokens_in, tokens_out).quantize(Decimal("1e-12"))
                copy.write_row((uuid.uuid4(), now, now, book.pk, uuid.uuid4(), customer.pk, agent.pk, signal.pk,
                                customer.external_id, agent.agent_code, signal.short_name, model, provider,
                                service_id, None if services else tokens_in, None if services else tokens_out,
                                services, quantity, cost, status, when, "{}"))
        cursor.execute(f"ANALYZE {UsageEvent._meta.db_table}")
        copied = time.perf_counter()
        rows = analytics_rollup_rebuild(book=book)
        cursor.execute(f"ANALYZE {UsageDailyRollup._meta.db_table}")
    built = time.perf_counter()
    print(f"organization {name!r}: {args.events} events over {args.days} days copied in {copied - started:.1f}s; "
          f"rollup of {rows} rows built in {built - copied:.1f}s")
    print(raw_key)


# --------------------------------------------------------------------------- timing

class HttpReader:
    def __init__(self, url: str, key: str):
        target = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(target.hostname, target.port or 80, timeout=120)
        self.headers = {"x-api-key": key}

    def get(self, path: str) -> tuple[int, bytes]:
        self.connection.request("GET", path, headers=self.headers)
        response = self.connection.getresponse()
        return response.status, response.read()


class InProcessReader:
    def __init__(self, key: str):
        django_setup()
        import logging

        from django.test import Client
        logging.getLogger("billing").setLevel(logging.WARNING)
        self.client = Client(HTTP_X_API_KEY=key)

    def get(self, path: str) -> tuple[int, bytes]:
        response = self.client.get(path)
        return response.status_code, response.content


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def timed_reads(reader, subscription_id: str | None = None) -> list[tuple[str, str]]:
    """The reads, each as (label, path); the per-customer and per-subscription ones name `subscription_id`
    and its customer (default: the first subscription the book lists)."""
    if subscription_id:
        status, body = reader.get(f"/v1/subscriptions/{subscription_id}")
        subscription = json.loads(body)
    else:
        status, body = reader.get("/v1/subscriptions?limit=1")
        subscription = json.loads(body)[0]
    status, body = reader.get(f"/v1/signals?agentId={subscription['agentId']}&limit=1")
    signal_id = json.loads(body)[0]["id"]
    today = datetime.now(UTC).date()
    full = {"startDate": (today - timedelta(days=179)).isoformat(), "endDate": today.isoformat()}
    month = {"startDate": (today - timedelta(days=29)).isoformat(), "endDate": today.isoformat()}
    edges = {"startDate": f"{today - timedelta(days=30)}T13:30:00Z", "endDate": f"{today}T09:15:00Z"}

    def path(route, **params):
        return f"{route}?{urllib.parse.urlencode(params)}" if params else route
    return [
        ("usage, default 30 days", path("/v1/analytics/usage")),
        ("usage, 30 days, timestamps (edge scans)", path("/v1/analytics/usage", **edges)),
        ("usage, 180 days, weekly, breakdown by customer", path("/v1/analytics/usage", groupBy="weekly",
                                                                breakdownBy="customer", **full)),
        ("usage, 180 days, one customer, by signal", path("/v1/analytics/usage", customerId=subscription["customerId"],
                                                          breakdownBy="signal", **full)),
        ("cost, 30 days + prior window", path("/v1/analytics/cost", includePriorWindow="true", **month)),
        ("cost, 180 days", path("/v1/analytics/cost", **full)),
        ("cost, 180 days, one subscription", path("/v1/analytics/cost", subscriptionId=subscription["id"], **full)),
        ("cost, 180 days, one agent", path("/v1/analytics/cost", agentId=subscription["agentId"], **full)),
        ("cost, 180 days, one signal", path("/v1/analytics/cost", signalId=signal_id, **full)),
        ("mrr runRate", path("/v1/analytics/mrr", variant="runRate")),
        ("mrr committed", path("/v1/analytics/mrr", variant="committed")),
        ("revenue, default 30 days", path("/v1/analytics/revenue")),
        ("revenue, 180 days", path("/v1/analytics/revenue", **full)),
        ("customer revenue, 30 days", path(f"/v1/customers/{subscription['customerId']}/revenue")),
        ("subscription revenue, 180 days", path(f"/v1/subscriptions/{subscription['id']}/revenue", **full)),
    ]


def time_reads(args):
    reader = HttpReader(args.url, args.key) if args.url else InProcessReader(args.key)
    print(f"{'read':<50} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for label, path in timed_reads(reader):
        durations = []
        for run in range(args.runs + 2):
            started = time.perf_counter()
            status, body = reader.get(path)
            elapsed = (time.perf_counter() - started) * 1000
            if status != 200:
                sys.exit(f"{path}: {status} {body[:300]!r}")
            if run >= 2:  # two warm-up reads
                durations.append(elapsed)
        print(f"{label:<50} {statistics.median(durations):8.1f} {percentile(durations, 0.95):8.1f} "
              f"{max(durations):8.1f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    seeding = commands.add_parser("seed")
    seeding.add_argument("--events", type=int, default=1_000_000)
    seeding.add_argument("--days", type=int, default=180)
    timing = commands.add_parser("time")
    timing.add_argument("--url", help="the service's base URL; without it, reads go through Django's test client")
    timing.add_argument("--key", required=True)
    timing.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    seed(args) if args.command == "seed" else time_reads(args)


if __name__ == "__main__":
    main()
