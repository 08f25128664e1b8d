"""Helpers of the analytics tests: a small catalog with round rates, and recording through the API (so the
daily rollup is maintained exactly as in production), and the rollup checked against a scan of the ledger."""
from collections import defaultdict
from datetime import timezone
from decimal import ROUND_HALF_UP, Decimal
from types import SimpleNamespace

import pytest

from catalog.models import ServiceEntry
from customers.models import RollupGrain, UsageDailyRollup, UsageEvent
from customers.rollup import analytics_rollup_catch_up
from tests.factories import AgentFactory, CustomerFactory, ServiceEntryFactory, SignalFactory

D = Decimal


@pytest.fixture
def models(db):
    """alpha-llm: (1000 in, 500 out) tokens cost 0.002; beta-llm: the same tokens cost 0.02;
    search-api (non-LLM): 0.005 per request."""
    return {
        "alpha": ServiceEntryFactory(canonical_name="alpha-llm", provider="testai", input_cost=D("0.000001"),
                                     output_cost=D("0.000002")),
        "beta": ServiceEntryFactory(canonical_name="beta-llm", provider="testai", input_cost=D("0.00001"),
                                    output_cost=D("0.00002")),
        "search": ServiceEntryFactory(canonical_name="search-api", provider="testapi", is_api=True,
                                      cost_unit="request", input_cost=D("0.005")),
    }


def rec(customer: str, agent: str, signal: str, when: str, *, model="alpha-llm", provider="testai",
        quantity=None, tokens=(1000, 500), **extra) -> dict:
    """A single-service record (an LLM by default, priced by `models`)."""
    record = {"customerExternalId": customer, "agentCode": agent, "signalName": signal, "usageDate": when,
              "model": model, "modelProvider": provider, **extra}
    if tokens is not None:
        record["inputTokens"], record["outputTokens"] = tokens
    if quantity is not None:
        record["quantity"] = quantity
    return record


def multi(customer: str, agent: str, signal: str, when: str, services: list[dict], **extra) -> dict:
    return {"customerExternalId": customer, "agentCode": agent, "signalName": signal, "usageDate": when,
            "services": services, **extra}


ALPHA_PART = {"model": "alpha-llm", "modelProvider": "testai", "inputTokens": 1000, "outputTokens": 500}


def search_part(quantity) -> dict:
    return {"model": "search-api", "modelProvider": "testapi", "quantity": quantity}


def record(api, *records) -> dict:
    resp = api.post("/v1/usage/record", {"records": list(records)})
    assert resp.status_code == 200, resp.content[:600]
    body = resp.json()
    assert body["processed"] == len(records)
    assert all(failure["stored"] for failure in body["results"]["failed"]), body["results"]["failed"]
    return body


def get(api, path, status=200, **params):
    resp = api.get(path, params)
    assert resp.status_code == status, (resp.status_code, resp.content[:800])
    return resp.json()


def money(value) -> Decimal:
    """A JSON number as the exact decimal it spells (floats print their shortest repr)."""
    assert isinstance(value, (int, float)) and not isinstance(value, bool), f"not a JSON number: {value!r}"
    return D(repr(value)) if isinstance(value, float) else D(value)


@pytest.fixture
def ledger(api, book, models):
    """Six events. Costs: alpha tokens 0.002, beta tokens 0.02, 4 search requests 0.02.

    e6 2025-03-31 12:00 acme  writer/pages     alpha          qty 1  0.002   (before April)
    e1 2025-04-06 10:00 acme  writer/pages     alpha          qty 2  0.002   (a Sunday)
    e2 2025-04-07 09:00 acme  writer/pages     alpha          qty 3  0.002   (the Monday after)
    e3 2025-04-07 15:00 beta  writer/reports   beta           qty 1  0.02
    e4 2025-04-30 23:00 beta  research/search  alpha + 4 search qty 1  0.022
    e5 2025-05-01 01:00 acme  writer/pages     unknown model  qty 5  null
    """
    acme = CustomerFactory(book=book, name="Acme Corp", external_id="acme")
    beta = CustomerFactory(book=book, name="Beta LLC", external_id="beta")
    writer = AgentFactory(book=book, name="Writer", agent_code="writer")
    research = AgentFactory(book=book, name="Researcher", agent_code="research")
    pages = SignalFactory(book=book, agent=writer, name="pages")
    reports = SignalFactory(book=book, agent=writer, name="reports")
    search = SignalFactory(book=book, agent=research, name="search")
    record(api,
           rec("acme", "writer", "pages", "2025-03-31T12:00:00Z"),
           rec("acme", "writer", "pages", "2025-04-06T10:00:00Z", quantity=2),
           rec("acme", "writer", "pages", "2025-04-07T09:00:00Z", quantity=3),
           rec("beta", "writer", "reports", "2025-04-07T15:00:00Z", model="beta-llm"),
           multi("beta", "research", "search", "2025-04-30T23:00:00Z", [ALPHA_PART, search_part(4)]),
           rec("acme", "writer", "pages", "2025-05-01T01:00:00Z", model="mystery-model", provider="inhouse",
               quantity=5))
    return SimpleNamespace(acme=acme, beta=beta, writer=writer, research=research, pages=pages, reports=reports,
                           search=search)


# --------------------------------------------------------------------------- the rollup, checked

TWELVE_PLACES = Decimal("1e-12")


def scanned(book) -> dict:
    """The rollup computed from scratch in Python, from the events as stored: {key: measures}, every grain
    derived from the full daily one by summing away its dimensions (and days, for month rows)."""
    full = _scanned_full(book)
    rows = defaultdict(lambda: [0, 0, Decimal(0), Decimal(0), 0, Decimal(0)])
    for (day, customer, agent, signal, model), values in full.items():
        for grain in RollupGrain:
            kept = {"customer": not grain & 4, "signal": not grain & 2, "model": not grain & 1}
            key = (grain.value, day.replace(day=1) if grain & 8 else day, customer if kept["customer"] else None,
                   agent, signal if kept["signal"] else None, model if kept["model"] else None)
            rows[key] = [total + value for total, value in zip(rows[key], values)]
    return {key: tuple(values) for key, values in rows.items()}


def _scanned_full(book) -> dict:
    services = {str(entry.pk): entry for entry in ServiceEntry.objects.all()}

    def model_of(service):
        return None if service is None or service.is_api else service.canonical_name

    rows = defaultdict(lambda: [0, 0, Decimal(0), Decimal(0), 0, Decimal(0)])
    for event in UsageEvent.objects.filter(book=book).select_related("service"):
        day = event.usage_date.astimezone(timezone.utc).date()
        if event.services is None:
            parts = [(model_of(event.service), event.usage_cost)]
        else:
            parts = [(model_of(services.get(part["serviceId"] or "")),
                      None if part["costUsd"] is None else Decimal(part["costUsd"]).quantize(TWELVE_PLACES,
                                                                                            ROUND_HALF_UP))
                     for part in event.services]
        for position, (model, _) in enumerate(parts):
            if model in [m for m, _ in parts[:position]]:
                continue  # one row per model an event names
            row = rows[(day, event.customer_id, event.agent_id, event.signal_id, model)]
            if position == 0:
                row[0] += 1
                row[1] += event.usage_cost is None
                row[2] += event.quantity
                row[3] += event.usage_cost or 0
            row[4] += 1
            if event.usage_cost is not None:
                row[5] += sum((cost or 0 for m, cost in parts if m == model), Decimal(0))
    return {key: tuple(values) for key, values in rows.items()}


def stored(book) -> dict:
    """The rollup rows as every read sees them: after the book's backlog is caught up."""
    analytics_rollup_catch_up(book_id=book.pk)
    return {(row.grain, row.day, row.customer_id, row.agent_id, row.signal_id, row.model):
            (row.event_count, row.unpriced_count, row.quantity, row.cost, row.model_event_count, row.model_cost)
            for row in UsageDailyRollup.objects.filter(book=book)}
