"""Faults: the database going away and coming back, Celery tasks failing half-way and run again, and a
usage batch cut off in the middle.

The database is made unreachable without touching the shared PostgreSQL server: the live server's
connections go through a TCP proxy in a thread, which the test cuts (every connection dropped, new ones
refused) and restores.
"""
import json
import socket
import threading
import urllib.error
import urllib.request
from decimal import Decimal

import pytest
from django.db import connection, connections

from catalog.models import ModelAlias
from core.jobs import BooksFailed
from config.tasks import run_scheduled_job_task
from controls.models import CustomerAlertFiring
from controls.tasks import evaluate_spend_caps_task
from customers import backfill
from customers.models import CODING_AGENT_CODE, Agent, Customer, EventStatus, RollupGrain, Signal, UsageEvent
from customers.rollup import analytics_rollup_rebuild
from customers.tasks import backfill_event_costs_task
from tests.analytics.support import scanned, stored
from tests.billing.invoice_support import WEBHOOK_SECRET, stripe_event, stripe_signature
from tests.factories import CustomerFactory, ServiceEntryFactory, UsageEventFactory
from tests.mail import sent_mail

D = Decimal


class Crash(RuntimeError):
    """What a worker or request dying half-way looks like to the code under test."""


def crash_on_call(number: int, real):
    """A stand-in for `real` that raises on its `number`-th call and passes every other call through."""
    calls = []

    def wrapper(*args, **kwargs):
        calls.append(kwargs)
        if len(calls) == number:
            raise Crash(f"crashed on call {number}")
        return real(*args, **kwargs)

    wrapper.calls = calls
    return wrapper


# --------------------------------------------------------------------------- the database goes away

class TcpProxy:
    """Forwards a local port to the database server (its TCP port, or its Unix socket when the host is a
    directory, as the embedded server's is). `cut()` drops every connection and refuses new ones (what clients
    see when the server is down); `restore()` listens again on the same port."""

    def __init__(self, host: str, port: int):
        self.target = f"{host}/.s.PGSQL.{port}" if host.startswith("/") else (host, port)
        self.port = None
        self._listener = None
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()

    def start(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port or 0))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def _accept(self, listener):
        while True:
            try:
                client, _ = listener.accept()
            except OSError:  # cut(): the listener was closed
                return
            try:
                upstream = self._connect_upstream()
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _connect_upstream(self) -> socket.socket:
        if isinstance(self.target, tuple):
            return socket.create_connection(self.target, timeout=5)
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        upstream.settimeout(5)
        try:
            upstream.connect(self.target)
        except OSError:
            upstream.close()
            raise
        return upstream

    @staticmethod
    def _pump(source, sink):
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for end in (source, sink):
                try:
                    end.close()
                except OSError:
                    pass

    def cut(self):
        try:
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread (close alone does not)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            except OSError:
                pass

    def restore(self):
        self.start()


@pytest.fixture
def database_behind_proxy(transactional_db):
    """Every database connection opened from now on (the live server's included) goes through a proxy."""
    database = connections.settings["default"]
    proxy = TcpProxy(database["HOST"] or "127.0.0.1", int(database["PORT"] or 5432))
    proxy.start()
    original = database["HOST"], database["PORT"]
    connection.close()
    database["HOST"], database["PORT"] = "127.0.0.1", str(proxy.port)
    yield proxy
    connection.close()
    database["HOST"], database["PORT"] = original
    proxy.cut()


def call(url: str, *, key: str | None = None, body: bytes | None = None, headers: dict | None = None):
    request = urllib.request.Request(url, data=body, method="POST" if body is not None else "GET",
                                     headers={**({"x-api-key": key} if key else {}), **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as failure:
        return failure.code, dict(failure.headers), json.loads(failure.read())


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_api_answers_503_json_while_the_database_is_unreachable_and_recovers_by_itself(
        live_server, api, database_behind_proxy, settings):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    customers = f"{live_server.url}/v1/customers"
    assert call(customers, key=api.raw_key)[0] == 200

    database_behind_proxy.cut()
    status, headers, body = call(customers, key=api.raw_key)
    assert (status, body["code"]) == (503, "auth_unavailable"), body  # the key could not be checked
    assert headers["Retry-After"] and isinstance(body["message"], str)
    event = stripe_event("00000000-0000-0000-0000-000000000000", 100)
    status, headers, body = call(f"{live_server.url}/v1/webhooks/stripe", body=event, headers={
        "Stripe-Signature": stripe_signature(event), "Content-Type": "application/json"})
    assert (status, body["code"]) == (503, "service_unavailable"), body  # no key: the database itself
    assert headers["Retry-After"]
    assert call(f"{live_server.url}/readyz")[0] == 503

    database_behind_proxy.restore()
    assert call(customers, key=api.raw_key)[0] == 200  # no restart, no intervention
    assert call(f"{live_server.url}/readyz")[0] == 200


# --------------------------------------------------------------------------- Celery tasks that fail half-way

@pytest.mark.django_db(transaction=True)
def test_spend_cap_alert_task_that_crashes_half_way_sends_each_alert_once_when_run_again(api, book, monkeypatch):
    for cap in ({"scope": "org", "amountUsd": "10", "alertThresholds": [50, 80, 100]},
                {"scope": "dev", "scopeValue": "dev@team.example.com", "amountUsd": "10",
                 "alertThresholds": [50, 100]}):
        assert api.post("/v1/control/caps", {"providerScope": "all", "period": "month", "mode": "track",
                                             **cap}).status_code == 201
    developer = CustomerFactory(book=book, external_id="dev@team.example.com", is_internal=True)
    UsageEventFactory(book=book, customer=developer, customer_external_id=developer.external_id,
                      agent_code=CODING_AGENT_CODE, usage_cost=D("12"))
    from controls.services import spend_caps
    monkeypatch.setattr(spend_caps, "_send_alert_once", crash_on_call(3, spend_caps._send_alert_once))

    with pytest.raises(Crash):
        evaluate_spend_caps_task.delay(str(book.id))
    assert len(sent_mail()) == 2  # what went out before the crash stays sent

    monkeypatch.undo()
    assert evaluate_spend_caps_task.delay(str(book.id)).get() == 3  # the retry sends only what is missing
    assert evaluate_spend_caps_task.delay(str(book.id)).get() == 0
    subjects = [mail.subject for mail in sent_mail()]
    assert len(subjects) == len(set(subjects)) == 5  # org 50/80/100 and dev 50/100, one email each


@pytest.mark.django_db(transaction=True)
def test_customer_alert_job_that_crashes_half_way_fires_each_watch_once_when_run_again(api, book, monkeypatch):
    customers = [CustomerFactory(book=book) for _ in range(3)]
    for customer in customers:
        UsageEventFactory(book=book, customer=customer, usage_cost=D("50"))
        assert api.post("/v1/customer-alerts", {
            "customerId": str(customer.id), "metric": "cost", "thresholdUsd": "10", "windowMode": "month",
            "notifyEmail": api.key.membership.user.email}).status_code == 201
    confirmations = len(sent_mail())
    from controls.services import customer_alerts
    monkeypatch.setattr(customer_alerts, "customer_alert_evaluate",
                        crash_on_call(2, customer_alerts.customer_alert_evaluate))

    with pytest.raises(BooksFailed) as failed:  # the book's crash, logged, after the other books ran
        run_scheduled_job_task.delay("customer-alerts")
    assert failed.value.book_ids == [book.id]
    assert len(sent_mail()) == confirmations + 1

    monkeypatch.undo()
    run_scheduled_job_task.delay("customer-alerts")
    run_scheduled_job_task.delay("customer-alerts")
    fired = sent_mail()[confirmations:]
    assert len(fired) == 3 and len({tuple(mail.to) + (mail.subject,) for mail in fired}) == 3
    assert sorted(CustomerAlertFiring.objects.values_list("customer_id", flat=True)) == sorted(c.id for c in customers)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("seam", [
    "_price_and_save",  # between two chunks
    "analytics_rollup_add",  # inside a chunk: its events re-priced and taken out of the rollup, not yet back in
])
def test_backfill_task_that_crashes_half_way_prices_each_event_once_when_run_again(book, monkeypatch, seam):
    service = ServiceEntryFactory(canonical_name="priced-llm", provider="acme", input_cost=D("0.001"),
                                  output_cost=D("0.002"))
    events = [UsageEventFactory(book=book, model="legacy-llm", model_provider="acme", input_tokens=1000,
                                output_tokens=10, usage_cost=None, event_status=EventStatus.NEEDS_COST_BACKFILL)
              for _ in range(7)]
    analytics_rollup_rebuild(book=book)  # the rollup as recording them left it
    ModelAlias.objects.create(book=book, model="legacy-llm", model_provider="acme", service=service)
    monkeypatch.setattr(backfill, "BACKFILL_CHUNK", 3)
    priced_ids = []

    def price_and_save(book, chunk, **options):
        priced = real_price_and_save(book, chunk, **options)
        priced_ids.extend(event.pk for event in chunk)  # only chunks that got through
        return priced

    real_price_and_save = backfill._price_and_save
    working = {"_price_and_save": price_and_save, "analytics_rollup_add": backfill.analytics_rollup_add}
    monkeypatch.setattr(backfill, "_price_and_save", price_and_save)
    monkeypatch.setattr(backfill, seam, crash_on_call(2, working[seam]))

    with pytest.raises(Crash):
        backfill_event_costs_task.delay(str(book.id), "legacy-llm", "acme")
    assert UsageEvent.objects.filter(usage_cost__isnull=False).count() == 3  # the first chunk committed
    assert stored(book) == scanned(book)  # the rollup moved with it, and with nothing of the crashed chunk

    monkeypatch.setattr(backfill, seam, working[seam])
    assert backfill_event_costs_task.delay(str(book.id), "legacy-llm", "acme").get() == 4
    assert sorted(priced_ids) == sorted(event.pk for event in events)  # each event priced exactly once
    assert set(UsageEvent.objects.values_list("usage_cost", "event_status")) == {(D("1.02"), "PROCESSED")}
    rollup = stored(book)
    assert rollup == scanned(book)  # exact after the crash and the re-run: nothing counted twice or lost
    full = [values for key, values in rollup.items() if key[0] == RollupGrain.FULL]
    assert (sum(v[0] for v in full), sum(v[1] for v in full), sum(v[3] for v in full)) == (7, 0, 7 * D("1.02"))


# --------------------------------------------------------------------------- a batch cut off mid-way

def fresh_record(index: int) -> dict:
    return {"customerExternalId": f"cut-customer-{index % 2}", "agentCode": "cut-agent", "signalName": "cut-signal",
            "model": "cut-llm", "modelProvider": "acme", "inputTokens": 100, "idempotencyKey": f"cut-{index}"}


def insert_then_crash(real):
    def wrapper(**kwargs):
        real(**kwargs)  # the rows are written ...
        raise Crash("connection lost after the insert")  # ... and the request dies before the commit
    return wrapper


@pytest.mark.django_db
@pytest.mark.parametrize("seam, stand_in", [
    ("resolve_prices", lambda real: crash_on_call(1, real)),  # after provisioning, before the insert
    ("events_append", insert_then_crash),  # after the insert
    ("matters_attribute_new_events", lambda real: crash_on_call(1, real)),  # after the insert and pricing
])
def test_a_batch_cut_off_mid_way_stores_nothing_of_it_and_the_retry_stores_it_once(api, book, monkeypatch, seam,
                                                                                   stand_in):
    ServiceEntryFactory(canonical_name="cut-llm", provider="acme", input_cost=D("0.001"))
    batch = {"records": [fresh_record(index) for index in range(6)]}
    from billing import recording
    monkeypatch.setattr(recording, seam, stand_in(getattr(recording, seam)))

    resp = api.post("/v1/usage/record", batch)
    assert resp.status_code == 500 and resp.json() == {"message": "Internal server error."}
    for model in (UsageEvent, Customer, Agent, Signal):
        assert not model.objects.filter(book=book).exists(), f"{model.__name__} rows of the failed batch were kept"

    monkeypatch.undo()
    first, replay = api.post("/v1/usage/record", batch).json(), api.post("/v1/usage/record", batch).json()
    assert first["successful"] == replay["successful"] == 6
    assert UsageEvent.objects.filter(book=book).count() == 6
    assert all(entry.get("replayed") for entry in replay["results"]["success"])



def fetch_page(url: str, *, cookie: str | None = None) -> tuple[int, str, str]:
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as failure:
        return failure.code, failure.headers.get("Content-Type", ""), failure.read().decode()


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_every_page_answers_503_with_a_clear_body_while_the_database_is_unreachable(
        live_server, api, client, database_behind_proxy, django_user_model):
    operator = django_user_model.objects.create_superuser(email="ops@acme.example", password="pw-for-the-console")
    client.force_login(operator)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    token = "t" * 43  # any link token: the page must look it up
    pages = [f"/portal/{token}", f"/pay/{token}", "/admin/", "/admin/billing/invoice/"]  # /v1: the test above
    assert fetch_page(f"{live_server.url}/admin/", cookie=cookie)[0] == 200

    database_behind_proxy.cut()
    for page in pages:
        status, content_type, body = fetch_page(f"{live_server.url}{page}", cookie=cookie)
        assert status == 503, (page, status, body[:300])
        assert "text/html" in content_type and "Temporarily unavailable" in body, (page, body[:300])

    database_behind_proxy.restore()
    assert fetch_page(f"{live_server.url}/admin/", cookie=cookie)[0] == 200
    assert fetch_page(f"{live_server.url}/portal/{token}")[0] in (404, 410)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("committed", [True, False], ids=["committed", "rolled-back"])
def test_a_batch_whose_commit_lost_its_answer_answers_what_postgresql_did(api, book, monkeypatch, committed):
    """The connection dies while the batch commits (a crash, a restart, a failover): the commit may have happened.
    A committed batch answers 200 with its events (a 503 would make the client send it again, and without keys
    store it twice); one that was not answers 503 with nothing stored. PostgreSQL is asked on a new connection
    once the backend that ran the batch is gone."""
    from django.db import OperationalError
    from billing import recording

    ServiceEntryFactory(canonical_name="cut-llm", provider="acme", input_cost=D("0.001"))
    records = [{key: value for key, value in fresh_record(index).items() if key != "idempotencyKey"}
               for index in range(6)]  # no keys: a retry would store them again
    wrapper = connections["default"]
    real_commit, real_append, appended = wrapper._commit, recording.events_append, []

    def append(**kwargs):
        appended.append(True)
        return real_append(**kwargs)

    def commit_then_lose_the_answer():
        if not appended or len(appended) > 1:
            return real_commit()
        appended.append(True)
        if committed:
            real_commit()
        else:
            wrapper.connection.rollback()
        wrapper.connection.close()  # the connection is gone, and the commit's answer with it
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(recording, "events_append", append)
    monkeypatch.setattr(wrapper, "_commit", commit_then_lose_the_answer)
    resp = api.post("/v1/usage/record", {"records": records})
    stored = UsageEvent.objects.filter(book=book)
    if committed:
        assert resp.status_code == 200, resp.content
        assert resp.json()["successful"] == 6
        assert sorted(str(entry["eventId"]) for entry in resp.json()["results"]["success"]) == \
            sorted(str(pk) for pk in stored.values_list("pk", flat=True))
    else:
        assert resp.status_code == 503, resp.content
        assert not stored.exists()


@pytest.mark.django_db(transaction=True)
def test_an_invoice_whose_email_went_out_is_issued_though_the_connection_failed_right_after(api, book, monkeypatch):
    """The email is sent, then the connection to PostgreSQL fails (a restart) before the invoice is marked issued:
    the send waits for a new connection and issues it (200, one email), instead of a 503 that left it `pending`
    for good (never billed, never overdue) and invited a second email."""
    from django.db import OperationalError
    from billing.models import Invoice
    from billing.services import invoices
    from tests.billing.invoice_support import billing_chain, draft, recurring

    chain = billing_chain(api, book, [recurring("40")])
    invoice = draft(api, chain)
    real_mark_sent, failures = invoices._mark_sent, []

    def lost_then_real(*args, **kwargs):
        if not failures:
            failures.append(True)
            connections["default"].connection.close()  # the server went away after the email was accepted
            raise OperationalError("server closed the connection unexpectedly")
        return real_mark_sent(*args, **kwargs)

    monkeypatch.setattr(invoices, "_mark_sent", lost_then_real)
    resp = api.post(f"/v1/invoices/{invoice['id']}/send", {})
    assert resp.status_code == 200, resp.content
    assert failures and Invoice.objects.get(pk=invoice["id"]).status == "issued"
    assert len(sent_mail()) == 1


@pytest.mark.django_db(transaction=True)
def test_the_first_request_after_postgresql_dropped_the_idle_connection_is_answered(api):
    """A restart closes every web process's kept connection while it idles: the next request's key lookup finds
    it dead and reads on a new connection instead of answering 503 (one per process, before)."""
    import psycopg

    assert api.get("/v1/verify").status_code == 200  # the connection is kept (CONN_MAX_AGE)
    wrapper = connections["default"]
    backend_pid = wrapper.connection.info.backend_pid
    settings_dict = wrapper.get_connection_params()
    with psycopg.connect(**{k: v for k, v in settings_dict.items() if k in ("dbname", "user", "password", "host",
                                                                             "port")}, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [backend_pid])
    resp = api.get("/v1/verify")
    assert resp.status_code == 200, resp.content
    assert wrapper.connection.info.backend_pid != backend_pid
