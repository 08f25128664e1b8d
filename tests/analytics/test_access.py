"""Who may read analytics (spec §5: secret full-scope keys only), and organization isolation."""
import pytest

from tests.analytics.support import get, ledger, models, rec, record  # noqa: F401 (fixtures)
from tests.factories import CustomerFactory, SubscriptionFactory

ROUTES = ["/v1/analytics/usage", "/v1/analytics/cost?startDate=2025-04-01&endDate=2025-04-30",
          "/v1/analytics/mrr?variant=runRate", "/v1/analytics/revenue"]


@pytest.fixture
def routes(book):
    subscription = SubscriptionFactory(book=book)
    return [*ROUTES, f"/v1/customers/{subscription.customer_id}/revenue",
            f"/v1/subscriptions/{subscription.id}/revenue"]


@pytest.mark.parametrize("key", [{"key_type": "publishable"}, {"scope": "ingest"}, {"role": "legal", "scope": "legal"}])
def test_publishable_ingest_and_legal_keys_are_403(client_for, routes, key):
    client = client_for(**key)
    for route in routes:
        assert client.get(route).status_code == 403, route


@pytest.mark.parametrize("role", ["owner", "admin", "finance", "member"])
def test_every_member_role_with_a_full_secret_key_reads_analytics(client_for, routes, role):
    client = client_for(role=role)
    for route in routes:
        assert client.get(route).status_code == 200, route


def test_missing_key_is_401(anonymous):
    for route in ROUTES:
        assert anonymous.get(route).status_code == 401


def test_another_organizations_data_and_ids_stay_invisible(api, other_api, ledger, other_book):
    april = {"startDate": "2025-04-01", "endDate": "2025-04-30"}
    assert get(other_api, "/v1/analytics/usage", **april)["summary"]["totalEvents"] == 0
    assert get(other_api, "/v1/analytics/cost", **april)["eventCount"] == 0
    for name, value in (("customerId", ledger.acme.id), ("agentId", ledger.writer.id), ("signalId", ledger.pages.id)):
        get(other_api, "/v1/analytics/usage", status=404, **{name: str(value)}, **april)
        get(other_api, "/v1/analytics/cost", status=404, **{name: str(value)}, **april)
    foreign = SubscriptionFactory(book=other_book, customer=CustomerFactory(book=other_book))
    get(api, "/v1/analytics/cost", status=404, subscriptionId=str(foreign.id), **april)
    get(api, "/v1/analytics/mrr", status=404, variant="runRate", subscriptionId=str(foreign.id))
    get(api, "/v1/analytics/mrr", status=404, variant="committed", customerId=str(foreign.customer_id))


def test_test_and_live_books_of_one_organization_are_separate(client_for, models):
    test_key, live_key = client_for(environment="test"), client_for(environment="live")
    record(test_key, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"))
    april = {"startDate": "2025-04-01", "endDate": "2025-04-30"}
    assert get(live_key, "/v1/analytics/usage", **april)["summary"]["totalEvents"] == 0
    assert get(test_key, "/v1/analytics/usage", **april)["summary"]["totalEvents"] == 1
