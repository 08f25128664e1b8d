"""What a restart and a slow provider do to requests that carry no API key (contract: nothing a client or a payment
provider sends answers 500; a database that is back answers): the first request after PostgreSQL dropped a web
process's kept connection, a console action on a selection edited by hand, and a Stripe that does not answer."""
import socket
import threading
import time

import psycopg
import pytest
from django.db import connections

from billing import stripe_gateway
from tests.billing.invoice_support import WEBHOOK_SECRET, stripe_event, stripe_signature
from tests.reliability.world import World


def drop_kept_connection() -> None:
    """What a PostgreSQL restart does to the connection a web process keeps between requests (CONN_MAX_AGE)."""
    kept = connections["default"]
    kept.ensure_connection()
    params = kept.get_connection_params()
    with psycopg.connect(**{key: value for key, value in params.items()
                            if key in ("dbname", "user", "password", "host", "port")}, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [kept.connection.info.backend_pid])


@pytest.fixture
def dropped(transactional_db):
    yield drop_kept_connection
    connections["default"].close()  # a failing test leaves it dead for the teardown


@pytest.mark.django_db(transaction=True)
def test_a_stripe_webhook_after_a_restart_is_answered(api, settings, client, dropped):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    invoice = World(api).invoice
    dropped()
    body = stripe_event(invoice.id, 100)
    answer = client.generic("POST", "/v1/webhooks/stripe", body, content_type="application/json",
                            HTTP_STRIPE_SIGNATURE=stripe_signature(body))
    assert answer.status_code == 200, answer.content[:300]


@pytest.mark.django_db(transaction=True)
def test_hosted_pages_after_a_restart_are_answered(api, client, dropped):
    path = "/portal/" + World(api).portal_session.url.rsplit("/portal/", 1)[1]
    dropped()
    assert client.get("/pay/" + "t" * 43).status_code == 404  # an unknown link, read from the database
    dropped()
    answer = client.get(path)
    assert answer.status_code == 200, answer.content[:300]


@pytest.mark.django_db(transaction=True)
def test_the_console_after_a_restart_is_answered(client, django_user_model, dropped):
    client.force_login(django_user_model.objects.create_superuser(email="ops@acme.example", password="pw-console-1"))
    assert client.get("/admin/").status_code == 200
    dropped()
    assert client.get("/admin/").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("changelist, action", [
    ("/admin/billing/invoice/", "send_invoices"), ("/admin/customers/customer/", "soft_delete_customers"),
    ("/admin/webhooks/webhookendpoint/", "send_test"), ("/admin/accounts/apikey/", "revoke_keys")])
def test_a_console_action_on_a_selection_of_no_records_is_a_warning(client, django_user_model, changelist, action):
    client.force_login(django_user_model.objects.create_superuser(email="ops@acme.example", password="pw-console-1"))
    answer = client.post(changelist, {"action": action, "_selected_action": ["not-a-uuid"], "index": "0"},
                         follow=True)
    assert answer.status_code == 200
    assert "The selection names rows that do not exist" in answer.content.decode()


class SilentServer:
    """A provider that takes connections and never answers; counts them."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                self.held.append(self.listener.accept()[0])
            except OSError:
                return

    def close(self):
        self.listener.close()
        for held in self.held:
            held.close()


def test_a_stripe_that_does_not_answer_is_given_up_on_after_the_timeout_and_one_more_try(settings, monkeypatch):
    import stripe

    silent = SilentServer()
    settings.STRIPE_SECRET_KEY, settings.STRIPE_TIMEOUT_SECONDS = "sk_test_silent", 1
    monkeypatch.setattr(stripe, "api_base", f"http://127.0.0.1:{silent.port}")
    started = time.monotonic()
    try:
        with pytest.raises(stripe_gateway.PaymentProviderError):
            stripe_gateway.refund(payment_intent="pi_1", amount_cents=100, idempotency_key="refund-1")
    finally:
        silent.close()
    # Two tries of one second and the client's pause between them (Stripe's client waited 80 s a try, three tries).
    assert time.monotonic() - started < 6
    assert len(silent.held) == 2
