"""/v1/webhook-endpoints over HTTP: create (secret once), list, read, update, delete, rotate, test send, roles."""
import pytest

from tests.billing.support import error, ok
from tests.webhooks.support import create_endpoint, deliveries


def test_create_answers_the_secret_once_and_reads_never_show_it(api, receiver):
    created = create_endpoint(api, receiver.url, eventTypes=["invoice.paid", "invoice.issued"],
                              description="ERP sync")
    assert created["secret"].startswith("whsec_")
    assert created["eventTypes"] == ["invoice.paid", "invoice.issued"]
    assert (created["enabled"], created["health"], created["description"]) == (True, "healthy", "ERP sync")
    read = ok(api.get(f"/v1/webhook-endpoints/{created['id']}"))
    assert "secret" not in read and read["url"] == receiver.url
    listed = ok(api.get("/v1/webhook-endpoints"))
    assert [row["id"] for row in listed] == [created["id"]] and "secret" not in listed[0]


def test_event_types_default_to_every_type_and_unknown_ones_are_refused(api, receiver):
    assert create_endpoint(api, receiver.url)["eventTypes"] == []
    message = error(api.post("/v1/webhook-endpoints", {"url": receiver.url, "eventTypes": ["invoice.eaten"]}), 400)
    assert "eventTypes" in message
    # A misspelled field is a 400, not an endpoint silently subscribed to every type.
    message = error(api.post("/v1/webhook-endpoints", {"url": receiver.url, "events": ["invoice.paid"]}), 400)
    assert message.startswith("events: Not a field of this request") and "eventTypes" in message
    assert len(ok(api.get("/v1/webhook-endpoints"))) == 1


@pytest.mark.parametrize("url, problem", [
    ("ftp://example.com/x", "http or https"),
    ("https://user:pw@example.com/x", "user name or password"),
    ("not a url", "http or https"),
])
def test_bad_urls_are_a_400_naming_url(api, url, problem):
    message = error(api.post("/v1/webhook-endpoints", {"url": url}), 400)
    assert message.startswith("url: ") and problem in message


def test_a_live_book_needs_https(client_for):
    live = client_for(environment="live")
    assert "https" in error(live.post("/v1/webhook-endpoints", {"url": "http://hooks.example.com/x"}), 400)
    assert ok(live.post("/v1/webhook-endpoints", {"url": "https://hooks.example.com/x"}), 201)["url"]


def test_enabled_takes_only_json_booleans(api, receiver):
    assert "enabled" in error(api.post("/v1/webhook-endpoints", {"url": receiver.url, "enabled": "yes"}), 400)


def test_update_changes_the_listed_fields_and_refuses_others(api, receiver):
    endpoint = create_endpoint(api, receiver.url)
    updated = ok(api.patch(f"/v1/webhook-endpoints/{endpoint['id']}",
                           {"eventTypes": ["payment.succeeded"], "description": "payments", "enabled": False}))
    assert (updated["eventTypes"], updated["description"], updated["enabled"], updated["health"]) == (
        ["payment.succeeded"], "payments", False, "disabled")
    assert updated["disabledAt"] is not None  # when the operator disabled it, as when deliveries did
    assert "secret" in error(api.patch(f"/v1/webhook-endpoints/{endpoint['id']}", {"secret": "whsec_x"}), 400)


def test_delete_removes_the_endpoint(api, receiver):
    endpoint = create_endpoint(api, receiver.url)
    assert ok(api.delete(f"/v1/webhook-endpoints/{endpoint['id']}")) == {"deleted": True, "id": endpoint["id"]}
    assert api.get(f"/v1/webhook-endpoints/{endpoint['id']}").status_code == 404


def test_an_endpoint_of_another_organization_reads_as_404(api, other_api, receiver):
    foreign = create_endpoint(other_api, receiver.url)
    for method, suffix in [("get", ""), ("patch", ""), ("delete", ""), ("post", "/test"), ("post", "/rotate-secret"),
                           ("get", "/deliveries"), ("post", "/replay")]:
        resp = getattr(api, method)(f"/v1/webhook-endpoints/{foreign['id']}{suffix}",
                                    *([{"since": "2025-01-01"}] if suffix == "/replay" else []))
        assert resp.status_code == 404, (method, suffix, resp.json())


def test_a_test_key_does_not_see_the_live_books_endpoints(client_for, receiver):
    live = client_for(environment="live")
    ok(live.post("/v1/webhook-endpoints", {"url": "https://hooks.example.com/x"}), 201)
    assert ok(client_for().get("/v1/webhook-endpoints")) == []


def test_a_live_book_takes_http_only_where_private_targets_are_allowed(client_for, settings):
    live = client_for(environment="live")
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    message = ["url: Must be https for a live book (with WEBHOOKS_ALLOW_PRIVATE_URLS=1, http reaches private and "
               "loopback addresses)."]
    refused = live.post("/v1/webhook-endpoints", {"url": "http://hooks.example.com/x"})
    assert refused.status_code == 400 and refused.json()["message"] == message
    # Contract: private, loopback and link-local targets are refused unless WEBHOOKS_ALLOW_PRIVATE_URLS=1; with it,
    # a live book reaches a receiver on this machine or its network as a test book does, public ones by https only.
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    for url in ("http://127.0.0.1:9000/hooks", "http://localhost:9000/hooks", "http://10.0.0.5/hooks",
                "http://[::1]:9000/hooks"):
        ok(live.post("/v1/webhook-endpoints", {"url": url}), 201)
    refused = live.post("/v1/webhook-endpoints", {"url": "http://hooks.example.com/x"})
    assert refused.status_code == 400 and refused.json()["message"] == message


@pytest.mark.parametrize("role", ["owner", "admin", "finance"])
def test_owner_admin_and_finance_keys_manage_endpoints(client_for, receiver, role):
    client = client_for(role=role)
    endpoint = create_endpoint(client, receiver.url)
    assert ok(client.get(f"/v1/webhook-endpoints/{endpoint['id']}"))["id"] == endpoint["id"]


@pytest.mark.parametrize("role", ["member", "legal"])
def test_other_roles_get_403(client_for, receiver, role):
    client = client_for(role=role)
    assert client.get("/v1/webhook-endpoints").status_code == 403
    assert client.post("/v1/webhook-endpoints", {"url": receiver.url}).status_code == 403


def test_publishable_keys_get_403(client_for):
    assert client_for(key_type="publishable").get("/v1/webhook-endpoints").status_code == 403


def test_test_send_is_delivered_signed_with_the_secret(api, receiver, django_capture_on_commit_callbacks):
    endpoint = create_endpoint(api, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        answer = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    assert answer["eventType"] == "webhook.test"
    [request] = receiver.requests
    body = request.verified(endpoint["secret"])
    assert body["type"] == "webhook.test" and body["id"] == request.webhook_id == answer["eventId"]
    assert body["data"]["endpointId"] == endpoint["id"]
    [logged] = deliveries(api, endpoint["id"])
    assert (logged["status"], logged["attempts"], logged["nextAttemptAt"]) == ("delivered", 1, None)
    assert logged["attemptLog"][0]["responseStatus"] == 200
    assert len(logged["attemptLog"][0]["responseBody"]) == 1024  # the first bytes of a longer answer


def test_rotating_signs_with_both_secrets_for_24_hours(api, receiver, django_capture_on_commit_callbacks):
    endpoint = create_endpoint(api, receiver.url)
    rotated = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret"))
    assert rotated["secret"] != endpoint["secret"] and rotated["previousSecretExpiresAt"]
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    [request] = receiver.requests
    assert len(request.headers["webhook-signature"].split(" ")) == 2
    request.verified(endpoint["secret"])
    request.verified(rotated["secret"])


def test_a_second_rotation_within_the_window_keeps_the_first_secret_signing_until_its_own_expiry(
        api, receiver, django_capture_on_commit_callbacks, monkeypatch):
    """Rotated twice an hour apart (the new secret leaked, say): receivers still on the first secret were promised
    24 hours, so deliveries carry all three signatures until then, and the first one's lapses at its own expiry."""
    from datetime import timedelta
    from core import clock
    start = clock.now()
    monkeypatch.setattr(clock, "now", lambda: start)
    endpoint = create_endpoint(api, receiver.url)
    first = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret"))
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(hours=1))
    second = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret"))
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    [request] = receiver.requests
    assert len(request.headers["webhook-signature"].split(" ")) == 3
    for secret in (endpoint["secret"], first["secret"], second["secret"]):
        request.verified(secret)
    monkeypatch.setattr(clock, "now", lambda: start + timedelta(hours=24, minutes=30))  # the original's 24 h are up
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    assert len(receiver.requests[-1].headers["webhook-signature"].split(" ")) == 2


def test_rotations_in_a_row_keep_at_most_five_signatures(api, receiver, django_capture_on_commit_callbacks):
    """Each replaced secret is a signature in every delivery's header, which receivers bound: the current one, the
    previous one and the three newest before it."""
    endpoint = create_endpoint(api, receiver.url)
    rotated = [ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/rotate-secret")) for _ in range(6)]
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    [request] = receiver.requests
    assert len(request.headers["webhook-signature"].split(" ")) == 5
    for secret in [rotated[-1]["secret"], *[earlier["secret"] for earlier in rotated[1:5]]]:
        request.verified(secret)


def test_a_disabled_endpoint_refuses_a_test_send(api, receiver):
    endpoint = create_endpoint(api, receiver.url, enabled=False)
    assert error(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 409)
