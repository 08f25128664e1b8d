"""The client's webhook side against the live service: an endpoint created through the typed client, a test
event delivered by the service to a receiver on loopback, verified and parsed by `agentbilling.webhooks.verify`;
and what verify refuses (a wrong secret, a changed body, an old timestamp, missing headers)."""
import time
from datetime import datetime

import pytest

from agentbilling import Client, webhooks
from tests.webhooks.receiver import Receiver

pytestmark = pytest.mark.usefixtures("database")


@pytest.fixture
def receiver(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True  # the receiver is on loopback
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.fixture
def delivered(service, receiver):
    """A `webhook.test` delivery the service sent to the receiver, and the endpoint's secret."""
    with Client(service.key, base_url=service.url) as client:
        endpoint = client.webhook_endpoints.create(url=receiver.url, description="client test")
        sent = client.webhook_endpoints.test(endpoint["id"])
        for _ in range(100):  # the live server attempts it after its response, on commit
            if receiver.requests:
                break
            time.sleep(0.05)
        log = client.webhook_endpoints.deliveries(endpoint["id"])
    [request] = receiver.requests
    return request, endpoint["secret"], sent, log


def test_verify_returns_the_typed_event_the_service_sent(delivered):
    request, secret, sent, log = delivered
    event = webhooks.verify(request.body, request.headers, secret)
    assert isinstance(event, webhooks.WebhookEvent) and isinstance(event.created_at, datetime)
    assert (event.id, event.type) == (sent["eventId"], "webhook.test")
    assert event.data["message"] and event.type in webhooks.EVENT_TYPES
    assert log["data"][0]["eventId"] == event.id


@pytest.mark.parametrize("tamper, reason", [
    (lambda body, headers, secret: (body, headers, "whsec_" + "A" * 32), "no signature matches"),
    (lambda body, headers, secret: (body.replace(b"webhook.test", b"invoice.paid"), headers, secret),
     "no signature matches"),
    (lambda body, headers, secret: (body, {**headers, "webhook-timestamp": str(int(time.time()) - 600)}, secret),
     "more than 300 s"),
    (lambda body, headers, secret: (body, {k: v for k, v in headers.items() if k != "webhook-signature"}, secret),
     "missing"),
])
def test_verify_refuses_what_the_service_did_not_send(delivered, tamper, reason):
    request, secret, _, _ = delivered
    body, headers, key = tamper(request.body, request.headers, secret)
    with pytest.raises(webhooks.WebhookVerificationError, match=reason):
        webhooks.verify(body, headers, key)


def test_a_signature_made_by_sign_verifies_with_any_header_case():
    secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    body = b'{"id":"evt_1","type":"invoice.paid","createdAt":"2026-01-01T00:00:00Z","data":{"total":24.50}}'
    now = int(time.time())
    headers = {"Webhook-Id": "evt_1", "Webhook-Timestamp": str(now),
               "Webhook-Signature": "v1,bm90IHRoaXMgb25l " + webhooks.sign(body, message_id="evt_1", timestamp=now,
                                                                          secret=secret)}
    event = webhooks.verify(body, headers, secret)
    assert str(event.data["total"]) == "24.50"  # exact, as a Decimal
