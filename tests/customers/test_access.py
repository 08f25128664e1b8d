"""Who reaches /v1/customers, /v1/agents and /v1/signals (spec §5; contract: test and live books)."""
import pytest

from customers.models import Agent, Customer, Signal
from tests.factories import AgentFactory, CustomerFactory, SignalFactory, book_of

pytestmark = pytest.mark.django_db

ROUTES = [
    ("get", "/v1/customers", None), ("post", "/v1/customers", {"name": "x"}),
    ("get", "/v1/customers/{customer}", None), ("patch", "/v1/customers/{customer}", {"name": "x"}),
    ("delete", "/v1/customers/{customer}", None),
    ("get", "/v1/agents", None), ("post", "/v1/agents", {"name": "x", "agentCode": "x"}),
    ("get", "/v1/agents/{agent}", None), ("patch", "/v1/agents/{agent}", {"name": "x"}),
    ("delete", "/v1/agents/{agent}", None),
    ("get", "/v1/signals", None), ("post", "/v1/signals", {"name": "x", "agentId": "{agent}"}),
    ("post", "/v1/signals/bulk", {"agentId": "{agent}", "signals": [{"name": "x"}]}),
    ("get", "/v1/signals/{signal}", None), ("patch", "/v1/signals/{signal}", {"name": "x"}),
    ("delete", "/v1/signals/{signal}", None),
]


@pytest.fixture
def records(book):
    signal = SignalFactory(book=book)
    return {"customer": CustomerFactory(book=book).id, "agent": signal.agent_id, "signal": signal.id}


def fill(template, records):
    if isinstance(template, dict):
        return {key: fill(value, records) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, records) for value in template]
    return template.format(**records) if isinstance(template, str) else template


def unchanged(records):
    return (Customer.objects.filter(pk=records["customer"], name__startswith="Customer", deleted_at__isnull=True)
            .exists() and Agent.objects.count() == 1 and Signal.objects.count() == 1)


@pytest.mark.parametrize("method, path, body", ROUTES)
@pytest.mark.parametrize("environment", ["test", "live"])
def test_publishable_key_is_403_on_every_route(client_for, records, method, path, body, environment):
    client = client_for(key_type="publishable", environment=environment)
    args = [fill(body, records)] if body is not None else []
    resp = getattr(client, method)(fill(path, records), *args)
    assert resp.status_code == 403, resp.json()
    assert "Publishable keys" in resp.json()["message"]
    assert unchanged(records)


@pytest.mark.parametrize("method, path, body", ROUTES)
@pytest.mark.parametrize("scope", ["ingest", "legal"])
def test_ingest_and_legal_keys_are_403_on_every_route(client_for, records, method, path, body, scope):
    client = client_for(scope=scope)
    args = [fill(body, records)] if body is not None else []
    resp = getattr(client, method)(fill(path, records), *args)
    assert resp.status_code == 403, resp.json()
    assert unchanged(records)


@pytest.mark.parametrize("method, path, body", [route for route in ROUTES if "{" in route[1]])
def test_records_of_another_organization_are_404(other_api, records, method, path, body):
    args = [fill(body, records)] if body is not None else []
    resp = getattr(other_api, method)(fill(path, records), *args)
    assert resp.status_code == 404, resp.json()
    assert unchanged(records)


def test_lists_show_only_the_callers_organization(api, other_api, records):
    for path in ("/v1/customers", "/v1/agents", "/v1/signals"):
        resp = other_api.get(path)
        assert (resp.json(), resp["X-Total-Count"]) == ([], "0")
        assert api.get(path)["X-Total-Count"] == "1"


def test_signal_on_an_agent_of_another_organization_is_404(other_api, records):
    resp = other_api.post("/v1/signals", {"name": "stolen", "agentId": str(records["agent"])})
    assert resp.status_code == 404
    assert resp.json()["message"] == "Agent not found"
    bulk = other_api.post("/v1/signals/bulk", {"agentId": str(records["agent"]), "signals": [{"name": "s"}]})
    assert bulk.status_code == 404
    assert Signal.objects.count() == 1


def test_test_key_records_are_invisible_to_the_live_key(api, client_for, org):
    live = client_for(environment="live")
    customer = api.post("/v1/customers", {"name": "Test book", "externalId": "shared-ext"}).json()
    agent = api.post("/v1/agents", {"name": "Test agent", "agentCode": "shared-code"}).json()
    assert live.get(f"/v1/customers/{customer['id']}").status_code == 404
    assert customer["id"] not in {row["id"] for row in live.get("/v1/customers").json()}
    assert live.get(f"/v1/agents/{agent['id']}").status_code == 404
    assert live.post("/v1/signals", {"name": "s", "agentId": agent["id"]}).status_code == 404
    # Uniqueness holds per book: the live book may reuse the test book's externalId and agentCode.
    assert live.post("/v1/customers", {"name": "Live", "externalId": "shared-ext"}).status_code == 201
    assert live.post("/v1/agents", {"name": "Live", "agentCode": "shared-code"}).status_code == 201
    assert Customer.objects.get(external_id="shared-ext", book=book_of(org, "live")).name == "Live"


def test_any_member_role_may_manage_customers(client_for):
    member = client_for(role="member", email="member@acme.example.com")
    created = member.post("/v1/customers", {"name": "By a member"})
    assert created.status_code == 201
    assert member.delete(f"/v1/customers/{created.json()['id']}").status_code == 204


def test_missing_key_is_401(anonymous):
    assert anonymous.get("/v1/customers").status_code == 401
    assert anonymous.post("/v1/agents", {"name": "x", "agentCode": "x"}).status_code == 401
