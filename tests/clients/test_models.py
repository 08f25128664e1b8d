"""The typed answers and the one definition both clients share, without a service: answers parsed into models
(money exact, unknown fields kept), `Client` and `AsyncClient` reaching the same calls with the same
signatures, and both retrying by the same policy (httpx's MockTransport stands in for the service)."""
import asyncio
import inspect
import json
from datetime import date, datetime, timezone
from decimal import Decimal

import httpx
import pytest

from agentbilling import AsyncClient, Client, RetryPolicy
from agentbilling._json import loads
from agentbilling._models import Model
from agentbilling.errors import ServiceUnavailableError
from agentbilling.models import CreditBalance, Invoice, UsageRecordResponse
from agentbilling.resources import Customers
from agentbilling.resources._base import Resource

D = Decimal
INVOICE = (b'{"id": "inv_1", "status": "issued", "total": 12.50, "totalAmount": 12.50, "amountDue": 0, '
           b'"periodStart": "2026-11-01T00:00:00Z", "dueDate": "2026-12-01", "surpriseField": {"rate": 0.1}, '
           b'"lines": [{"id": "l1", "quantity": 7.5, "amount": 8.25, "newLineField": "kept"}], "payments": []}')


def test_money_in_a_typed_answer_is_an_exact_decimal():
    invoice = Invoice.parse(loads(INVOICE))
    assert isinstance(invoice.total, Decimal) and str(invoice.total) == "12.50"  # the cents kept, never a float
    assert invoice.amount_due == D("0") and isinstance(invoice.amount_due, Decimal)  # a whole number too
    assert (invoice.lines[0].quantity, invoice.lines[0].amount) == (D("7.5"), D("8.25"))
    assert invoice.period_start == datetime(2026, 11, 1, tzinfo=timezone.utc)
    assert invoice.due_date == date(2026, 12, 1)
    assert invoice.voided_at is None  # declared, absent: None


def test_an_unknown_field_is_kept_not_an_error():
    invoice = Invoice.parse(loads(INVOICE))
    assert invoice["surpriseField"] == {"rate": D("0.1")}
    assert invoice.lines[0]["newLineField"] == "kept"
    assert invoice.raw == loads(INVOICE) and invoice == loads(INVOICE)  # still the answer, as a dict


def test_a_value_that_does_not_fit_its_type_is_kept_as_sent():
    balance = CreditBalance.parse({"remainingUnits": "lots", "periodStart": "soon"})
    assert (balance.remaining_units, balance.period_start) == ("lots", "soon")


def test_a_field_that_would_hide_a_dict_method_is_refused():
    with pytest.raises(TypeError, match="items"):
        type("Listing", (Model,), {"__annotations__": {"items": list}})


def test_the_merged_usage_answer_is_typed_to_its_entries():
    answer = UsageRecordResponse.parse({"processed": 1, "successful": 1, "failed": 0, "results": {
        "success": [{"index": 0, "totalCostUsd": "0.00045", "eventId": "e1"}], "failed": []}})
    assert answer.results.success[0].total_cost_usd == D("0.00045")
    assert answer["results"]["success"][0]["totalCostUsd"] == "0.00045"


def resource_tree(client) -> dict[str, Resource]:
    """Every resource a client reaches, by its dotted attribute (`plans.strategies` too)."""
    found = {}

    def visit(prefix, owner):
        for name, value in vars(owner).items():
            if isinstance(value, Resource) and not name.startswith("_"):
                found[prefix + name] = value
                visit(f"{prefix}{name}.", value)
    visit("", client)
    return found


def public_calls(kind: type) -> dict[str, inspect.Signature]:
    return {name: inspect.signature(member) for name, member in inspect.getmembers(kind, inspect.isfunction)
            if not name.startswith("_")}


LIFECYCLE = {"close", "aclose"}


def mismatches(sync_client, async_client) -> list[str]:
    """What one client has that the other lacks, or has with another signature."""
    problems = []
    sync_tree, async_tree = resource_tree(sync_client), resource_tree(async_client)
    problems += [f"{name}: only on one client" for name in sync_tree.keys() ^ async_tree.keys()]
    for name in sync_tree.keys() & async_tree.keys():
        sync_calls, async_calls = public_calls(type(sync_tree[name])), public_calls(type(async_tree[name]))
        problems += [f"{name}.{call}: differs" for call in sync_calls.keys() | async_calls.keys()
                     if sync_calls.get(call) != async_calls.get(call)]
    sync_own = {k: v for k, v in public_calls(type(sync_client)).items() if k not in LIFECYCLE}
    async_own = {k: v for k, v in public_calls(type(async_client)).items() if k not in LIFECYCLE}
    problems += [f"{call}: differs" for call in sync_own.keys() | async_own.keys()
                 if sync_own.get(call) != async_own.get(call)]
    return sorted(problems)


@pytest.fixture
def both_clients():
    sync_client, async_client = Client("svc_sk_test_x"), AsyncClient("svc_sk_test_x")
    yield sync_client, async_client
    sync_client.close()
    asyncio.run(async_client.aclose())


def test_every_sync_call_has_its_async_counterpart_from_the_same_definition(both_clients):
    sync_client, async_client = both_clients
    assert len(resource_tree(sync_client)) == 19  # 18 resources and plans.strategies
    assert mismatches(sync_client, async_client) == []
    for name, resource in resource_tree(sync_client).items():
        assert type(resource) is type(resource_tree(async_client)[name]), name  # one class: no twin to keep


def test_a_call_added_to_one_client_only_is_caught(both_clients):
    class CustomersWithExtra(Customers):
        def merge(self, id, other_id):
            return self._call("POST", f"{self._member(id)}/merge", body={"otherId": other_id})

    sync_client, async_client = both_clients
    sync_client.customers = CustomersWithExtra(sync_client._transport)
    assert mismatches(sync_client, async_client) == ["customers.merge: differs"]


def answering(*responses):
    """A MockTransport answering `responses` in turn, and the list of requests it received."""
    received = []

    def handler(request):
        received.append(request)
        status, body = responses[min(len(received), len(responses)) - 1]
        return httpx.Response(status, content=body, headers={"Content-Type": "application/json"})
    return httpx.MockTransport(handler), received


def call(kind, responses, use):
    """`use(client)` on a client of `kind` whose service answers `responses`; (its result, the requests)."""
    transport, received = answering(*responses)
    policy = RetryPolicy(max_retries=2, backoff_base=0, backoff_max=0)
    if kind == "sync":
        with Client("svc_sk_test_x", retry_policy=policy, http_client=httpx.Client(transport=transport)) as client:
            return use(client), received

    async def run():
        async with AsyncClient("svc_sk_test_x", retry_policy=policy,
                               http_client=httpx.AsyncClient(transport=transport)) as client:
            return await use(client)
    return asyncio.run(run()), received


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_both_clients_parse_the_same_answer_into_the_same_model(kind):
    invoice, received = call(kind, [(200, INVOICE)], lambda client: client.invoices.get("inv_1"))
    assert isinstance(invoice, Invoice) and str(invoice.total) == "12.50" and invoice["surpriseField"]
    assert [(r.method, r.url.path) for r in received] == [("GET", "/v1/invoices/inv_1")]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_both_clients_retry_a_read_by_the_same_policy_and_never_a_write(kind):
    down = (503, json.dumps({"message": "down"}).encode())
    customer, reads = call(kind, [down, (200, b'{"id": "c1", "name": "Acme"}')],
                           lambda client: client.customers.get("c1"))
    assert (customer.name, len(reads)) == ("Acme", 2)
    with pytest.raises(ServiceUnavailableError):
        call(kind, [down, (201, b"{}")], lambda client: client.customers.create(name="Acme"))
    _, writes = call(kind, [(503, json.dumps({"message": "wait", "code": "auth_unavailable"}).encode()),
                            (201, b'{"id": "c2"}')], lambda client: client.customers.create(name="Acme"))
    assert len(writes) == 2  # nothing ran: the write is sent again
