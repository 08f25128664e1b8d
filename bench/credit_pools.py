#!/usr/bin/env python3
"""Credit-balance read benchmark: how long one balance and the list take over a large ledger.

    DATABASE_URL=postgres://postgres:postgres@127.0.0.1:5432/bench_pools .venv/bin/python bench/credit_pools.py

It migrates that database (create it first; it is filled, not emptied), writes a book with 50 credit-pool
subscriptions and `--events` ledger rows (half on the first subscription's pool signal over 24 monthly periods,
a quarter on another signal of the same customer and agent, a quarter on other customers), then times the
uncached reads and prints the query plan of the current period's draw.
"""
import argparse
import os
import statistics
import sys
import time
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

START = datetime(2024, 1, 1, tzinfo=timezone.utc)
NOW = datetime(2025, 12, 20, tzinfo=timezone.utc)  # in the 24th monthly period


def build(events: int, in_current_period: bool):
    from billing.models import PlanAgent, PricingPlan, PricingStrategy, Subscription
    from accounts.services import book_for, organization_ensure
    from customers.models import Agent, Customer, Signal, UsageEvent

    organization = organization_ensure(name=f"bench-pools-{time.time_ns()}")
    book = book_for(organization=organization, environment="test")
    agent = Agent.objects.create(book=book, name="bench", agent_code="bench")
    pool_signal = Signal.objects.create(book=book, agent=agent, name="pages", short_name="pages")
    other_signal = Signal.objects.create(book=book, agent=agent, name="calls", short_name="calls")
    plan = PricingPlan.objects.create(book=book, name="Pool")
    PlanAgent.objects.create(book=book, plan=plan, agent=agent)
    PricingStrategy.objects.create(book=book, plan=plan, agent=agent, name="pool", charge_type="usage",
                                   signal=pool_signal, pricing_model="credit_pool",
                                   tiers=[{"lower": "0", "upper": "1000", "rate": "50"},
                                          {"lower": "1000", "upper": None, "rate": "0.1"}])
    customers = [Customer.objects.create(book=book, name=f"c{i}", external_id=f"c{i}") for i in range(50)]
    subscriptions = [Subscription.objects.create(
        book=book, name=f"s{i}", plan=plan, agent=agent, customer=customer, start_date=START, status="active",
        current_period_start=datetime(2025, 12, 1, tzinfo=timezone.utc),
        current_period_end=datetime(2026, 1, 1, tzinfo=timezone.utc)) for i, customer in enumerate(customers)]
    main = customers[0]
    span = timedelta(days=19) if in_current_period else NOW - START
    origin = NOW - span
    rows = []
    for n in range(events):
        share = n % 4
        customer = main if share < 3 else customers[1 + n % 49]
        signal = other_signal if share == 2 else pool_signal
        rows.append(UsageEvent(book=book, customer=customer, agent=agent, signal=signal,
                               customer_external_id=customer.external_id, agent_code="bench",
                               signal_name=signal.short_name, quantity=Decimal(1),
                               usage_date=origin + span * n / events))
        if len(rows) == 5000:
            UsageEvent.objects.bulk_create(rows)
            rows = []
    UsageEvent.objects.bulk_create(rows)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE customers_usageevent")
    return book, subscriptions[0]


def timed(function, repeat=20) -> str:
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        function()
        samples.append((time.perf_counter() - began) * 1000)
    return f"median {statistics.median(samples):.1f} ms, max {max(samples):.1f} ms"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--in-current-period", action="store_true",
                        help="put every event in the current period (the worst case for one read)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    from billing.selectors.credit_pools import credit_balance_get, credit_balance_list
    from core.scoping import owned
    from customers.models import UsageEvent

    book, subscription = build(args.events, args.in_current_period)
    balance = credit_balance_get(book=book, subscription_id=subscription.pk, now=NOW)
    print(f"{args.events} events; the pool subscription's period consumed {balance.consumed_units}")
    print("one balance :", timed(lambda: credit_balance_get(book=book, subscription_id=subscription.pk, now=NOW)))
    print("list of 50  :", timed(lambda: credit_balance_list(book=book, now=NOW)))
    events = owned(UsageEvent, book).filter(customer_id=subscription.customer_id, agent_id=subscription.agent_id,
                                            signal_id=balance.pool.signal_id, usage_date__gte=balance.period_start,
                                            usage_date__lt=balance.period_end)
    from django.db.models import Sum
    print(events.values("customer_id").annotate(total=Sum("quantity")).explain(analyze=True))


if __name__ == "__main__":
    main()
