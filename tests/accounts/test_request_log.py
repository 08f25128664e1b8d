"""Every API-key request is logged (key id, never the secret) without an INSERT per request."""
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.models import ApiRequestLog
from accounts.request_log import LogEntry, buffer, flush_request_log
from core import clock

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.accounts.policy_urls")]


def test_each_api_key_request_is_logged_with_key_org_method_path_status_ip(api, org):
    api.get("/v1/probe", REMOTE_ADDR="203.0.113.7")
    api.delete("/v1/probe")  # 405: still an API-key request
    entries = list(ApiRequestLog.objects.order_by("created_at"))
    assert [(e.method, e.path, e.status) for e in entries] == [("GET", "/v1/probe", 200),
                                                               ("DELETE", "/v1/probe", 405)]
    first = entries[0]
    assert (first.api_key_id, first.organization_id, first.ip) == (api.key.id, org.id, "203.0.113.7")
    assert first.created_at is not None


def test_refused_requests_are_logged_too(client_for):
    member = client_for(role="member")
    member.post("/v1/probe/caps", {})
    assert ApiRequestLog.objects.get().status == 403


def test_log_never_holds_the_secret(api):
    api.get("/v1/probe?x=1")
    entry = ApiRequestLog.objects.get()
    assert api.raw_key not in " ".join(str(getattr(entry, f.attname)) for f in ApiRequestLog._meta.fields)


def test_requests_without_a_valid_key_are_not_logged(anonymous):
    anonymous.get("/v1/probe")
    assert not ApiRequestLog.objects.exists()


def test_buffered_entries_are_written_in_one_bulk_insert(api, org, settings):
    settings.API_REQUEST_LOG_FLUSH_SECONDS = 3600  # the writer thread stays asleep; flush by hand
    for _ in range(25):
        assert api.get("/v1/probe").status_code == 200
    assert not ApiRequestLog.objects.exists()
    with CaptureQueriesContext(connection) as queries:
        assert flush_request_log() == 25
    statements = [q["sql"].split()[0] for q in queries.captured_queries]
    assert statements.count("INSERT") == 1 and statements.count("UPDATE") == 1  # last_used_at, once per key
    assert ApiRequestLog.objects.filter(api_key=api.key).count() == 25


def test_an_unstorable_entry_is_dropped_without_losing_its_neighbours(api, org, settings):
    settings.API_REQUEST_LOG_FLUSH_SECONDS = 3600
    good = LogEntry(organization_id=org.id, api_key_id=api.key.id, method="GET", path="/v1/ok", status=200,
                    ip="192.0.2.1", created_at=clock.now())
    bad = LogEntry(organization_id=org.id, api_key_id=api.key.id, method="GET", path="/v1/bad", status=200,
                   ip="not-an-address", created_at=clock.now())
    buffer.append(good)
    buffer.append(bad)
    assert flush_request_log() == 1
    assert list(ApiRequestLog.objects.values_list("path", flat=True)) == ["/v1/ok"]
    assert flush_request_log() == 0


@pytest.mark.django_db(transaction=True)  # the writer thread's own connection must see committed rows
def test_the_writer_thread_keeps_one_connection_across_writes_and_closes_it_when_stopped(api, org, settings):
    import threading
    import time

    from django.db.backends.signals import connection_created

    from accounts.request_log import RequestLogBuffer

    settings.API_REQUEST_LOG_FLUSH_SECONDS = 0.05
    opened, closed = [], []

    def on_connect(sender, connection, **kwargs):
        if threading.current_thread().name == "request-log-writer":
            opened.append(connection)
            real_close = connection.close
            connection.close = lambda: closed.append(connection) or real_close()

    writer = RequestLogBuffer()
    connection_created.connect(on_connect)
    try:
        for written in range(1, 4):
            writer.append(LogEntry(organization_id=org.id, api_key_id=api.key.id, method="GET", path=f"/v1/{written}",
                                   status=200, ip=None, created_at=clock.now()))
            deadline = time.monotonic() + 10
            while ApiRequestLog.objects.count() < written and time.monotonic() < deadline:
                time.sleep(0.02)
            assert ApiRequestLog.objects.count() == written
        writer.append(LogEntry(organization_id=org.id, api_key_id=api.key.id, method="GET", path="/v1/last",
                               status=200, ip=None, created_at=clock.now()))
        writer.stop()
    finally:
        connection_created.disconnect(on_connect)
    assert len(opened) == 1  # three writes, one connection (DB_CONN_MAX_AGE is 60 s here)
    assert closed == opened and not writer._thread.is_alive()
    assert ApiRequestLog.objects.filter(path="/v1/last").exists()  # stopping wrote what was buffered


@pytest.mark.django_db(transaction=True)
def test_the_writer_thread_ends_with_its_connection_once_entries_are_written_as_they_come(api, org, settings):
    import threading
    import time

    from django.db.backends.signals import connection_created

    from accounts.request_log import RequestLogBuffer

    settings.API_REQUEST_LOG_FLUSH_SECONDS = 0.05
    closed = []

    def on_connect(sender, connection, **kwargs):
        if threading.current_thread().name == "request-log-writer":
            real_close = connection.close
            connection.close = lambda: closed.append(connection) or real_close()

    writer = RequestLogBuffer()
    connection_created.connect(on_connect)
    try:
        writer.append(LogEntry(organization_id=org.id, api_key_id=api.key.id, method="GET", path="/v1/one",
                               status=200, ip=None, created_at=clock.now()))
        deadline = time.monotonic() + 10
        while not ApiRequestLog.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        settings.API_REQUEST_LOG_FLUSH_SECONDS = 0  # no buffering from now on
        writer._thread.join(timeout=10)
    finally:
        connection_created.disconnect(on_connect)
    # Ended by itself (no loop spinning on a zero interval) and left no session behind.
    assert not writer._thread.is_alive() and len(closed) == 1
