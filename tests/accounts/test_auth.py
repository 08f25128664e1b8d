"""The one authentication and permission layer (spec §5, §7) through HTTP, on probe views of each policy shape."""
import re

import pytest

from accounts.api import client_ip
from accounts.models import ApiKey
from core import clock
from accounts.services import api_key_revoke

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.accounts.policy_urls")]


# --------------------------------------------------------------------------- 401s


def test_missing_key_is_401_json(anonymous):
    resp = anonymous.get("/v1/probe")
    assert resp.status_code == 401
    assert "x-api-key" in resp.json()["message"]


def test_bearer_authorization_is_not_accepted(api, anonymous):
    resp = anonymous.get("/v1/probe", HTTP_AUTHORIZATION=f"Bearer {api.raw_key}")
    assert resp.status_code == 401
    assert "Authorization header is not used" in resp.json()["message"]


@pytest.mark.parametrize("raw", ["not-a-key", "svc_sk_prod_abcdefghijklmnopqrstuvwxyz", "svc_xx_test_" + "a" * 40])
def test_malformed_key_is_401(anonymous, raw):
    resp = anonymous.get("/v1/probe", HTTP_X_API_KEY=raw)
    assert resp.status_code == 401
    assert resp.json()["message"].startswith("Malformed API key")


def test_unknown_well_formed_key_is_401(anonymous, api):
    forged = api.raw_key[:-4] + ("AAAA" if not api.raw_key.endswith("AAAA") else "BBBB")
    resp = anonymous.get("/v1/probe", HTTP_X_API_KEY=forged)
    assert resp.status_code == 401
    assert resp.json() == {"message": "Invalid API key."}


def test_revoked_key_is_401_with_code_and_revocation_time(api):
    assert api.get("/v1/probe").status_code == 200
    revoked = api_key_revoke(key=api.key, now=clock.now())
    resp = api.get("/v1/probe")
    assert resp.status_code == 401
    body = resp.json()
    assert body["code"] == "key_revoked"
    assert revoked.revoked_at.isoformat().replace("+00:00", "Z") in body["message"]


def test_key_of_an_environment_the_deployment_does_not_accept_is_401(client_for, settings):
    settings.API_KEY_ENVIRONMENTS = ["test"]
    live = client_for(environment="live")
    assert live.get("/v1/probe").status_code == 401
    assert client_for(environment="test").get("/v1/probe").status_code == 200


# --------------------------------------------------------------------------- key types and scopes


def test_test_and_live_keys_of_one_organization_use_separate_books(client_for, org):
    test_body = client_for(environment="test").get("/v1/probe").json()
    live_body = client_for(environment="live").get("/v1/probe").json()
    assert (test_body["environment"], live_body["environment"]) == ("test", "live")
    assert test_body["book"] != live_body["book"]


def test_publishable_key_reaches_verify_and_me_key_only(client_for):
    publishable = client_for(key_type="publishable")
    assert publishable.get("/v1/verify").status_code == 200
    assert publishable.get("/v1/me/key").status_code == 200
    for path in ("/v1/probe", "/v1/probe/caps", "/v1/probe/matters"):
        resp = publishable.get(path)
        assert resp.status_code == 403, path
        assert "Publishable keys can only call" in resp.json()["message"]


def test_publishable_key_writes_are_403(client_for):
    publishable = client_for(key_type="publishable")
    for path in ("/v1/probe", "/v1/probe/record", "/v1/verify"):
        assert publishable.post(path, {}).status_code == 403, path


def test_publishable_key_gets_401_where_the_route_says_so(client_for):
    assert client_for(key_type="publishable").get("/v1/probe/portal").status_code == 401


def test_ingest_key_reaches_recording_verify_and_spend_reads(client_for):
    ingest = client_for(scope="ingest")
    assert ingest.post("/v1/probe/record", {}).status_code == 201
    assert ingest.get("/v1/verify").status_code == 200
    assert ingest.get("/v1/probe/caps").status_code == 200


def test_ingest_key_is_403_elsewhere_with_a_message_saying_what_it_reaches(client_for):
    ingest = client_for(scope="ingest")
    for method, path in [("get", "/v1/probe"), ("post", "/v1/probe/caps"), ("get", "/v1/probe/matters")]:
        resp = getattr(ingest, method)(path)
        assert resp.status_code == 403, path
        message = resp.json()["message"]
        assert "ingest-only key can only record usage" in message
        assert "owner" not in message  # no role list for scope refusals


def test_legal_key_reaches_matters_recording_and_spend_reads_only(client_for):
    legal = client_for(scope="legal")
    assert legal.get("/v1/probe/matters").status_code == 200
    assert legal.post("/v1/probe/matters", {}).status_code == 201
    assert legal.post("/v1/probe/record", {}).status_code == 201
    assert legal.get("/v1/probe/caps").status_code == 200
    assert legal.get("/v1/me/key").status_code == 200
    refused = legal.get("/v1/probe")
    assert refused.status_code == 403
    assert "legal key can only reach the matters endpoints" in refused.json()["message"]
    assert legal.post("/v1/probe/caps", {}).status_code == 403


def test_legal_key_of_a_member_still_reaches_matters(client_for):
    assert client_for(role="member", scope="legal").get("/v1/probe/matters").status_code == 200


# --------------------------------------------------------------------------- roles


@pytest.mark.parametrize("role, allowed", [("owner", True), ("finance", True), ("admin", False),
                                           ("legal", False), ("member", False)])
def test_cap_like_writes_need_owner_or_finance(client_for, role, allowed):
    resp = client_for(role=role).post("/v1/probe/caps", {})
    if allowed:
        assert resp.status_code == 201
    else:
        assert resp.status_code == 403
        article = "an" if role == "admin" else "a"
        assert resp.json()["message"] == (f"This request needs a key of an owner or finance user; "
                                          f"this key belongs to {article} {role}.")


def test_role_limited_reads_name_every_allowed_role(client_for):
    resp = client_for(role="member").get("/v1/probe/matters")
    assert resp.status_code == 403
    assert "owner, admin, finance or legal" in resp.json()["message"]


def test_reads_without_role_limits_accept_any_member(client_for):
    assert client_for(role="member").get("/v1/probe/caps").status_code == 200


# --------------------------------------------------------------------------- errors


def test_unknown_url_is_404_json(api):
    resp = api.get("/v1/no-such-route")
    assert resp.status_code == 404
    assert resp.json()["message"] == "Not found: /v1/no-such-route"


def test_unknown_url_outside_v1_is_404_json(anonymous):
    resp = anonymous.get("/nothing-here")
    assert resp.status_code == 404
    assert "message" in resp.json()


def test_api_error_renders_message_only(api):
    resp = api.get("/v1/probe/conflict")
    assert resp.status_code == 409
    assert resp.json() == {"message": "externalId already exists"}


def test_unexpected_error_is_json_500_without_internals(api):
    resp = api.get("/v1/probe/crash")
    assert resp.status_code == 500
    assert resp.json() == {"message": "Internal server error."}
    assert "hunter2" not in resp.content.decode()


def test_malformed_json_body_is_400(api):
    resp = api.generic("POST", "/v1/probe", "{not json", content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["message"].startswith("Malformed JSON body")


# --------------------------------------------------------------------------- rate limits


def test_key_over_its_request_rate_gets_429_with_retry_after(api, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 3
    statuses = [api.get("/v1/probe").status_code for _ in range(3)]
    resp = api.get("/v1/probe")
    assert statuses == [200, 200, 200]
    assert resp.status_code == 429
    assert 1 <= int(resp["Retry-After"]) <= 60
    assert "Request rate exceeded" in resp.json()["message"]


def test_rate_is_counted_per_key(client_for, settings):
    settings.API_RATE_LIMIT_PER_MINUTE = 1
    first, second = client_for(), client_for(role="finance")
    assert first.get("/v1/probe").status_code == 200
    assert first.get("/v1/probe").status_code == 429
    assert second.get("/v1/probe").status_code == 200


def test_too_many_bad_keys_from_one_network_get_429_until_a_key_is_accepted(api, anonymous, settings):
    settings.AUTH_FAILURE_LIMIT = 3
    bad = "svc_sk_test_" + "Z" * 40
    assert [anonymous.get("/v1/probe", HTTP_X_API_KEY=bad).status_code for _ in range(3)] == [401] * 3
    blocked = anonymous.get("/v1/probe", HTTP_X_API_KEY=bad)
    assert blocked.status_code == 429
    assert blocked.json()["code"] == "too_many_auth_failures"
    assert int(blocked["Retry-After"]) > 0
    assert api.get("/v1/probe").status_code == 200  # an accepted key clears the block
    assert anonymous.get("/v1/probe", HTTP_X_API_KEY=bad).status_code == 401


def test_auth_failures_are_counted_per_network(anonymous, settings):
    settings.AUTH_FAILURE_LIMIT = 1
    bad = "svc_sk_test_" + "Y" * 40
    anonymous.get("/v1/probe", HTTP_X_API_KEY=bad, REMOTE_ADDR="10.0.0.1")
    assert anonymous.get("/v1/probe", HTTP_X_API_KEY=bad, REMOTE_ADDR="10.0.0.1").status_code == 429
    assert anonymous.get("/v1/probe", HTTP_X_API_KEY=bad, REMOTE_ADDR="10.0.0.2").status_code == 401


@pytest.mark.parametrize("proxies, forwarded_for, expected", [
    (0, "", "198.51.100.1"),
    (0, "203.0.113.5", "198.51.100.1"),  # no trusted proxy: the header is the client's own, never read
    (1, "", "198.51.100.1"),  # came straight in, not through the proxy
    (1, "203.0.113.5", "203.0.113.5"),
    (1, "192.0.2.7, 203.0.113.5", "203.0.113.5"),  # the left entry was sent by the client: ignored
    (2, "192.0.2.7, 203.0.113.5, 10.0.0.9", "203.0.113.5"),  # the outer proxy wrote the client, the inner one it
    (2, "203.0.113.5", "198.51.100.1"),  # fewer entries than proxies: not through them
    (1, "2001:db8::1", "2001:db8::1"),
    (1, "not-an-address", None),
])
def test_the_client_address_is_read_only_from_trusted_proxies(rf, settings, proxies, forwarded_for, expected):
    settings.TRUSTED_PROXY_COUNT = proxies
    request = rf.get("/v1/probe", REMOTE_ADDR="198.51.100.1", HTTP_X_FORWARDED_FOR=forwarded_for)
    assert client_ip(request) == expected


def test_behind_a_trusted_proxy_auth_failures_are_counted_per_forwarded_client(anonymous, settings):
    settings.TRUSTED_PROXY_COUNT, settings.AUTH_FAILURE_LIMIT = 1, 1
    bad = "svc_sk_test_" + "X" * 40
    behind_proxy = {"REMOTE_ADDR": "10.0.0.2", "HTTP_X_API_KEY": bad}
    anonymous.get("/v1/probe", HTTP_X_FORWARDED_FOR="203.0.113.1", **behind_proxy)
    assert anonymous.get("/v1/probe", HTTP_X_FORWARDED_FOR="203.0.113.1", **behind_proxy).status_code == 429
    assert anonymous.get("/v1/probe", HTTP_X_FORWARDED_FOR="203.0.113.2", **behind_proxy).status_code == 401


# --------------------------------------------------------------------------- key storage


def test_only_a_digest_of_the_key_is_stored(api):
    stored = ApiKey.objects.get(pk=api.key.pk)
    values = [str(getattr(stored, field.attname)) for field in ApiKey._meta.fields]
    assert api.raw_key not in values
    assert not any(api.raw_key[16:] in value for value in values)
    assert re.fullmatch(r"[0-9a-f]{64}", stored.digest)
    assert stored.prefix == api.raw_key[:16]


def test_unknown_url_is_404_json_for_writes_too():
    from tests.conftest import KeyClient

    resp = KeyClient(None, enforce_csrf_checks=True).post("/v1/nowhere", {"a": 1})
    assert resp.status_code == 404
    assert resp.json()["message"] == "Not found: /v1/nowhere"
