"""Helpers of the analytics tests: a small catalog with round rates, and recording through the API (so the
daily rollup is maintained exactly as in production)."""
from decimal import Decimal
from types import SimpleNamespace

import pytest

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
