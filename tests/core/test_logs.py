"""Structured JSON logs with a request id, echoed as X-Request-ID; no API key or link token in a log."""
import io
import json
import logging

import pytest

from core.logs import JsonFormatter, redact


@pytest.fixture
def log_lines():
    """What the configured console handler writes (settings.LOGGING), one parsed JSON object per line."""
    handler = next(h for h in logging.getLogger().handlers if isinstance(h.formatter, JsonFormatter))
    stream = io.StringIO()
    previous = handler.setStream(stream)
    yield lambda: [json.loads(line) for line in stream.getvalue().splitlines()]
    handler.setStream(previous)


def access_lines(lines):
    return [line for line in lines if line["logger"] == "billing.access"]


def test_each_request_gets_an_id_echoed_in_x_request_id(client):
    first, second = client.get("/healthz")["X-Request-ID"], client.get("/healthz")["X-Request-ID"]
    assert len(first) == 32 and first != second


def test_a_sane_incoming_request_id_is_kept(client):
    resp = client.get("/healthz", HTTP_X_REQUEST_ID="7f3c9a1e-trace.42")
    assert resp["X-Request-ID"] == "7f3c9a1e-trace.42"


@pytest.mark.parametrize("incoming", ["two words", "x" * 129, "svc_sk_test_abc", "<script>", ""])
def test_an_insane_incoming_request_id_is_replaced(client, incoming):
    resp = client.get("/healthz", HTTP_X_REQUEST_ID=incoming)
    assert resp["X-Request-ID"] != incoming and len(resp["X-Request-ID"]) == 32


def test_access_line_is_one_json_object_with_the_request_fields(client, log_lines):
    resp = client.get("/healthz", HTTP_X_REQUEST_ID="req-123")
    [line] = access_lines(log_lines())
    assert line["request_id"] == "req-123" == resp["X-Request-ID"]
    assert (line["level"], line["method"], line["path"], line["status"]) == ("INFO", "GET", "/healthz", 200)
    assert line["message"] == "GET /healthz 200"
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert line["time"].endswith("Z")


@pytest.mark.django_db
@pytest.mark.urls("tests.accounts.policy_urls")
def test_application_logs_during_a_request_carry_its_id(api, log_lines):
    resp = api.get("/v1/probe/crash", HTTP_X_REQUEST_ID="req-crash")
    assert resp.status_code == 500
    lines = log_lines()
    error = next(line for line in lines if line["logger"] == "billing.errors")
    assert error["request_id"] == "req-crash"
    assert "RuntimeError" in error["exception"]
    assert access_lines(lines)[0]["level"] == "ERROR"


@pytest.mark.django_db
def test_api_keys_never_reach_the_logs(api, log_lines):
    logging.getLogger("billing.test").warning("rejected key %s", api.raw_key)
    api.get("/v1/verify")
    output = json.dumps(log_lines())
    assert api.raw_key not in output
    assert "svc_sk_test_[redacted]" in output


def test_link_tokens_are_redacted_from_logged_paths(client, log_lines, db):  # /portal/{token} looks the token up
    client.get("/portal/s3cr3t-portal-token")
    client.get("/v1/invitations/accept/s3cr3t-invite-token")
    lines = log_lines()
    assert "s3cr3t" not in json.dumps(lines)
    assert {line["path"] for line in access_lines(lines)} == {"/portal/[redacted]",
                                                             "/v1/invitations/accept/[redacted]"}


@pytest.mark.parametrize("text, expected", [
    ("key svc_pk_live_AbC123xyz0 used", "key svc_pk_live_[redacted] used"),
    ("GET /pay/tok_123?x=1", "GET /pay/[redacted]?x=1"),
    ("GET /v1/portal-sessions/42", "GET /v1/portal-sessions/42"),
])
def test_redact_replaces_keys_and_link_tokens_only(text, expected):
    assert redact(text) == expected
