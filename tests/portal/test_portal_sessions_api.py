"""/v1/portal-sessions (spec §2 "Portal session", §3, §4, §5.7, §8)."""
import hashlib
from datetime import timedelta

import pytest

from portal.models import PortalSession
from tests.factories import CustomerFactory, book_of
from tests.portal.conftest import PUBLIC_BASE_URL, instant, link_path

pytestmark = pytest.mark.django_db

CREATE_FIELDS = {"id", "object", "url", "token", "customerId", "customerName", "customerEmail", "expiresAt",
                 "createdAt"}
ALL_FEATURES = ["invoices", "subscriptions", "usage", "profile"]
NO_SUCH_ID = "00000000-0000-4000-8000-000000000000"


def message(resp) -> str:
    body = resp.json()["message"]
    return " | ".join(body) if isinstance(body, list) else body


# --------------------------------------------------------------------------- create

def test_create_answers_the_session_with_its_one_time_url_and_token(api, customer):
    resp = api.post("/v1/portal-sessions", {"customerExternalId": "globex", "returnUrl": "https://app.example.com/",
                                            "features": ["invoices", "usage"]})
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert set(body) == CREATE_FIELDS
    assert body["object"] == "portal_session"
    assert body["url"] == f"{PUBLIC_BASE_URL}/portal/{body['token']}"
    assert len(body["token"]) >= 43  # 32 random bytes, URL-safe base64
    assert (body["customerId"], body["customerName"], body["customerEmail"]) == (
        str(customer.id), "Globex Corp", "billing@globex.example.com")
    assert instant(body["expiresAt"]) - instant(body["createdAt"]) == pytest.approx(timedelta(hours=1),
                                                                                    abs=timedelta(seconds=1))
    stored = PortalSession.objects.get(pk=body["id"])
    assert (stored.return_url, stored.features) == ("https://app.example.com/", ["invoices", "usage"])


def test_only_a_sha256_digest_of_the_token_is_stored(api, customer, create_session):
    body = create_session(customer)
    stored = PortalSession.objects.get(pk=body["id"])
    assert stored.token_digest == hashlib.sha256(body["token"].encode()).hexdigest()
    assert body["token"] not in str(list(PortalSession.objects.filter(pk=body["id"]).values().get().values()))


def test_every_session_gets_a_different_token(customer, create_session):
    assert create_session(customer)["token"] != create_session(customer)["token"]


def test_create_by_customer_id(api, customer):
    resp = api.post("/v1/portal-sessions", {"customerId": str(customer.id)})
    assert resp.status_code == 201 and resp.json()["customerId"] == str(customer.id)


def test_a_customer_without_email_reads_as_null_email(api, book):
    quiet = CustomerFactory(book=book, email="")
    assert api.post("/v1/portal-sessions", {"customerId": str(quiet.id)}).json()["customerEmail"] is None


def test_features_default_to_all_four_and_are_stored_once_each(api, customer):
    default = api.post("/v1/portal-sessions", {"customerId": str(customer.id)}).json()
    assert PortalSession.objects.get(pk=default["id"]).features == ALL_FEATURES
    repeated = api.post("/v1/portal-sessions", {"customerId": str(customer.id),
                                                "features": ["usage", "usage", "profile"]}).json()
    assert PortalSession.objects.get(pk=repeated["id"]).features == ["usage", "profile"]


@pytest.mark.parametrize("body, field", [
    ({}, "customerId or customerExternalId"),
    ({"returnUrl": "https://example.com"}, "customerId or customerExternalId"),
    ({"customerId": None, "customerExternalId": None}, "customerId or customerExternalId"),
    ({"customerId": 42}, "customerId"),
    ({"customerExternalId": ["globex"]}, "customerExternalId"),
    ({"customerExternalId": "globex", "returnUrl": "not a url"}, "returnUrl"),
    ({"customerExternalId": "globex", "returnUrl": "ftp://files.example.com/"}, "returnUrl"),
    ({"customerExternalId": "globex", "returnUrl": "javascript:alert(1)"}, "returnUrl"),
    ({"customerExternalId": "globex", "returnUrl": "https://example.com/" + "a" * 2048}, "returnUrl"),
    ({"customerExternalId": "globex", "features": ["billing"]}, "features"),
    ({"customerExternalId": "globex", "features": []}, "features"),
    ({"customerExternalId": "globex", "features": "invoices"}, "features"),
])
def test_a_bad_create_body_is_a_400_naming_the_field(api, customer, body, field):
    resp = api.post("/v1/portal-sessions", body)
    assert resp.status_code == 400, resp.content
    assert field in message(resp)
    assert not PortalSession.objects.exists()


def test_both_customer_ids_at_once_is_a_400(api, customer):
    resp = api.post("/v1/portal-sessions", {"customerId": str(customer.id), "customerExternalId": "globex"})
    assert resp.status_code == 400 and "not both" in message(resp)


def test_return_url_may_be_null_or_omitted(api, customer):
    resp = api.post("/v1/portal-sessions", {"customerExternalId": "globex", "returnUrl": None})
    assert resp.status_code == 201
    assert PortalSession.objects.get(pk=resp.json()["id"]).return_url == ""


@pytest.mark.parametrize("body", [
    {"customerExternalId": "nobody"},
    {"customerId": NO_SUCH_ID},
    {"customerId": "not-a-uuid"},
])
def test_an_unknown_customer_is_a_404(api, customer, body):
    resp = api.post("/v1/portal-sessions", body)
    assert resp.status_code == 404 and message(resp).startswith("Customer not found")


def test_a_deleted_customer_is_a_404(api, customer):
    assert api.delete(f"/v1/customers/{customer.id}").status_code == 204
    assert api.post("/v1/portal-sessions", {"customerId": str(customer.id)}).status_code == 404
    assert api.post("/v1/portal-sessions", {"customerExternalId": "globex"}).status_code == 404


def test_a_customer_of_another_organization_is_a_404(api, other_book):
    foreign = CustomerFactory(book=other_book, external_id="foreign")
    assert api.post("/v1/portal-sessions", {"customerId": str(foreign.id)}).status_code == 404
    assert api.post("/v1/portal-sessions", {"customerExternalId": "foreign"}).status_code == 404


def test_a_live_key_does_not_reach_test_customers(client_for, customer):
    live = client_for(environment="live")
    assert live.post("/v1/portal-sessions", {"customerId": str(customer.id)}).status_code == 404


# --------------------------------------------------------------------------- access

ROUTES = [("post", "/v1/portal-sessions"), ("get", "/v1/portal-sessions"),
          ("get", "/v1/portal-sessions/{id}"), ("delete", "/v1/portal-sessions/{id}")]


@pytest.mark.parametrize("method, path", ROUTES)
def test_a_publishable_key_gets_401_on_every_route(client_for, customer, create_session, method, path):
    session = create_session(customer)
    publishable = client_for(key_type="publishable")
    resp = getattr(publishable, method)(path.format(id=session["id"]), *(
        [{"customerExternalId": "globex"}] if method == "post" else []))
    assert resp.status_code == 401 and "Publishable keys" in message(resp)


@pytest.mark.parametrize("scope", ["ingest", "legal"])
@pytest.mark.parametrize("method, path", ROUTES)
def test_ingest_and_legal_keys_get_403(client_for, customer, create_session, scope, method, path):
    session = create_session(customer)
    key = client_for(scope=scope)
    resp = getattr(key, method)(path.format(id=session["id"]), *(
        [{"customerExternalId": "globex"}] if method == "post" else []))
    assert resp.status_code == 403
    assert PortalSession.objects.get(pk=session["id"]).revoked_at is None


def test_a_missing_key_is_a_401(anonymous):
    assert anonymous.get("/v1/portal-sessions").status_code == 401


@pytest.mark.parametrize("role", ["member", "finance", "admin"])
def test_any_member_role_may_create(client_for, customer, role):
    assert client_for(role=role).post("/v1/portal-sessions", {"customerExternalId": "globex"}).status_code == 201


# --------------------------------------------------------------------------- list

def test_the_list_is_a_flat_array_of_rows_without_url_or_token(api, customer, create_session):
    created = create_session(customer, features=["invoices"], returnUrl="https://app.example.com/billing")
    resp = api.get("/v1/portal-sessions")
    assert resp.status_code == 200
    [row] = resp.json()
    assert "url" not in row and "token" not in row
    assert row["id"] == created["id"] and row["object"] == "portal_session"
    assert (row["isExpired"], row["isUsed"], row["features"]) == (False, False, ["invoices"])
    assert (row["customerId"], row["customerName"], row["customerEmail"]) == (
        str(customer.id), "Globex Corp", "billing@globex.example.com")
    assert row["expiresAt"] == created["expiresAt"] and row["createdAt"] == created["createdAt"]
    assert row["returnUrl"] == "https://app.example.com/billing"
    assert resp["X-Total-Count"] == "1"


def test_the_list_is_newest_first_and_limited_to_10_by_default(api, customer, create_session):
    ids = [create_session(customer)["id"] for _ in range(12)]
    rows = api.get("/v1/portal-sessions").json()
    assert [row["id"] for row in rows] == ids[::-1][:10]
    assert len(api.get("/v1/portal-sessions", {"limit": 100}).json()) == 12
    assert [row["id"] for row in api.get("/v1/portal-sessions", {"limit": 5, "offset": 10}).json()] == ids[1::-1]


@pytest.mark.parametrize("params, field", [
    ({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"limit": "ten"}, "limit"), ({"offset": -1}, "offset"),
    ({"customerId": "not-a-uuid"}, "customerId"), ({"includeExpired": "maybe"}, "includeExpired"),
])
def test_bad_list_parameters_are_a_400(api, params, field):
    resp = api.get("/v1/portal-sessions", params)
    assert resp.status_code == 400 and field in message(resp)


def test_the_list_filters_by_customer(api, book, customer, create_session):
    other = CustomerFactory(book=book, external_id="initech")
    mine, theirs = create_session(customer), create_session(other)
    assert [row["id"] for row in api.get("/v1/portal-sessions", {"customerId": str(customer.id)}).json()] == [
        mine["id"]]
    assert [row["id"] for row in api.get("/v1/portal-sessions", {"customerId": str(other.id)}).json()] == [
        theirs["id"]]
    assert api.get("/v1/portal-sessions", {"customerId": NO_SUCH_ID}).json() == []


def test_used_expired_and_revoked_sessions_are_listed_only_with_include_expired(api, client, customer,
                                                                                create_session, clock_at):
    used, revoked, expiring, fresh = (create_session(customer) for _ in range(4))
    assert client.get(link_path(used)).status_code == 200
    assert api.delete(f"/v1/portal-sessions/{revoked['id']}").status_code == 204
    PortalSession.objects.filter(pk=expiring["id"]).update(expires_at=instant(expiring["createdAt"]))
    default = {row["id"] for row in api.get("/v1/portal-sessions").json()}
    assert default == {fresh["id"]}
    assert {row["id"] for row in api.get("/v1/portal-sessions", {"includeExpired": "false"}).json()} == default
    rows = {row["id"]: row for row in api.get("/v1/portal-sessions", {"includeExpired": "true"}).json()}
    assert set(rows) == {used["id"], revoked["id"], expiring["id"], fresh["id"]}
    assert (rows[used["id"]]["isUsed"], rows[used["id"]]["isExpired"]) == (True, False)
    assert (rows[revoked["id"]]["isUsed"], rows[revoked["id"]]["isExpired"]) == (False, True)
    assert rows[expiring["id"]]["isExpired"] is True


def test_sessions_of_another_organization_are_never_listed(api, other_api, other_book, customer, create_session):
    create_session(customer)
    foreign = CustomerFactory(book=other_book, external_id="foreign")
    assert other_api.post("/v1/portal-sessions", {"customerExternalId": "foreign"}).status_code == 201
    assert [row["customerId"] for row in api.get("/v1/portal-sessions", {"includeExpired": "true"}).json()] == [
        str(customer.id)]
    assert api.get("/v1/portal-sessions", {"customerId": str(foreign.id)}).json() == []


# --------------------------------------------------------------------------- get

def test_get_answers_the_row_without_url_or_token_and_adds_used_at_once_used(api, client, customer, create_session):
    created = create_session(customer)
    before = api.get(f"/v1/portal-sessions/{created['id']}").json()
    assert "url" not in before and "token" not in before and "usedAt" not in before
    assert (before["isUsed"], before["isExpired"], before["features"]) == (False, False, ALL_FEATURES)
    assert client.get(link_path(created)).status_code == 200
    after = api.get(f"/v1/portal-sessions/{created['id']}").json()
    assert after["isUsed"] is True and after["usedAt"] is not None
    assert instant(created["createdAt"]) <= instant(after["usedAt"]) < instant(created["expiresAt"])


def test_a_session_reads_as_expired_one_hour_after_creation(api, customer, create_session, clock_at):
    created = create_session(customer)
    clock_at(instant(created["expiresAt"]) - timedelta(seconds=1))
    assert api.get(f"/v1/portal-sessions/{created['id']}").json()["isExpired"] is False
    clock_at(instant(created["expiresAt"]))
    assert api.get(f"/v1/portal-sessions/{created['id']}").json()["isExpired"] is True


@pytest.mark.parametrize("session_id", [NO_SUCH_ID, "not-a-uuid"])
def test_get_of_a_missing_session_is_a_404(api, session_id):
    assert api.get(f"/v1/portal-sessions/{session_id}").status_code == 404


def test_sessions_of_another_organization_read_as_404(api, other_api, customer, create_session):
    created = create_session(customer)
    assert other_api.get(f"/v1/portal-sessions/{created['id']}").status_code == 404
    assert other_api.delete(f"/v1/portal-sessions/{created['id']}").status_code == 404
    assert PortalSession.objects.get(pk=created["id"]).revoked_at is None


def test_the_live_book_does_not_see_test_sessions(client_for, org, customer, create_session):
    created = create_session(customer)
    live = client_for(environment="live")
    assert live.get(f"/v1/portal-sessions/{created['id']}").status_code == 404
    assert live.get("/v1/portal-sessions", {"includeExpired": "true"}).json() == []
    assert PortalSession.objects.get(pk=created["id"]).book == book_of(org, "test")


# --------------------------------------------------------------------------- delete

def test_delete_revokes_the_session_at_once(api, client, customer, create_session):
    created = create_session(customer)
    resp = api.delete(f"/v1/portal-sessions/{created['id']}")
    assert resp.status_code == 204 and resp.content == b""
    row = api.get(f"/v1/portal-sessions/{created['id']}").json()
    assert row["isExpired"] is True and row["revokedAt"] is not None and row["isUsed"] is False
    opened = client.get(link_path(created))
    assert opened.status_code == 410 and "revoked" in opened.content.decode()


def test_deleting_twice_keeps_the_first_revocation(api, customer, create_session):
    created = create_session(customer)
    api.delete(f"/v1/portal-sessions/{created['id']}")
    first = PortalSession.objects.get(pk=created["id"]).revoked_at
    assert api.delete(f"/v1/portal-sessions/{created['id']}").status_code == 204
    assert PortalSession.objects.get(pk=created["id"]).revoked_at == first


def test_delete_of_a_missing_session_is_a_404(api):
    assert api.delete(f"/v1/portal-sessions/{NO_SUCH_ID}").status_code == 404
