"""The console's webhooks: endpoints with their health, the delivery log with each attempt, and actions that call
the API's services (test send, disable, enable, resend). Secrets never appear."""
import pytest

from webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.console.conftest import action, messages_of
from tests.webhooks.support import create_endpoint

pytestmark = pytest.mark.django_db

ENDPOINTS, DELIVERIES = "/admin/webhooks/webhookendpoint/", "/admin/webhooks/webhookdelivery/"


def test_the_endpoint_list_shows_health_and_never_the_secret(console, api, receiver,
                                                               django_capture_on_commit_callbacks):
    endpoint = create_endpoint(api, receiver.url, description="ERP sync")
    receiver.statuses = [500]
    with django_capture_on_commit_callbacks(execute=True):
        resp = action(console, ENDPOINTS, "send_test", [endpoint["id"]])
    assert any("test event queued" in message for message in messages_of(resp))
    page = console.get(ENDPOINTS).content.decode()
    assert "ERP sync" in page and "failing" in page and endpoint["secret"] not in page
    change = console.get(f"{ENDPOINTS}{endpoint['id']}/change/").content.decode()
    assert endpoint["secret"] not in change


def test_the_delivery_log_shows_each_attempt_and_resends(console, api, receiver, django_capture_on_commit_callbacks):
    endpoint = create_endpoint(api, receiver.url)
    receiver.statuses = [503]
    with django_capture_on_commit_callbacks(execute=True):
        api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test")
    delivery = WebhookDelivery.objects.get()
    log = console.get(DELIVERIES).content.decode()
    assert "webhook.test" in log and "503" in log
    with django_capture_on_commit_callbacks(execute=True):
        resp = action(console, DELIVERIES, "resend", [delivery])
    assert any("resent" in message for message in messages_of(resp))
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
    page = console.get(f"{DELIVERIES}{delivery.pk}/change/").content.decode()
    assert "503" in page and "200" in page


def test_disable_and_enable_need_a_money_role(console_for, api, receiver):
    endpoint = create_endpoint(api, receiver.url)
    member = console_for(role="member")
    action(member, ENDPOINTS, "disable", [endpoint["id"]])
    assert WebhookEndpoint.objects.get().enabled is True
    owner = console_for()
    action(owner, ENDPOINTS, "disable", [endpoint["id"]])
    assert WebhookEndpoint.objects.get().enabled is False
    action(owner, ENDPOINTS, "enable", [endpoint["id"]])
    assert WebhookEndpoint.objects.get().enabled is True


def test_webhook_events_are_found_by_id_and_by_what_their_object_holds(console, book):
    from webhooks.models import WebhookEvent

    paid = WebhookEvent.objects.create(book=book, type="invoice.paid", data_json='{"invoiceNumber": "INV-0042"}')
    other = WebhookEvent.objects.create(book=book, type="invoice.paid", data_json='{"invoiceNumber": "INV-0043"}')
    events = "/admin/webhooks/webhookevent/"
    for term in ("INV-0042", paid.pk):
        page = console.get(events, {"q": term}).content.decode()
        assert f"{events}{paid.pk}/change/" in page and f"{events}{other.pk}/change/" not in page, term
