"""GET /healthz (the process is up) and GET /readyz (the database answers; Redis, when configured, reported)."""
from unittest import mock

import pytest
from django.db import OperationalError


def test_healthz_answers_ok_without_a_key_or_the_database(client):
    resp = client.get("/healthz")  # no django_db mark: touching the database would fail the test
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok"}


@pytest.mark.django_db
def test_readyz_is_ready_when_the_database_answers(client, settings):
    settings.REDIS_URL = ""  # the Redis check is covered below
    resp = client.get("/readyz")
    assert resp.status_code == 200
    assert resp.json() == {"status": "ok", "checks": {"database": "ok"}}


@pytest.mark.django_db
def test_readyz_is_503_json_when_the_database_check_fails(client, settings):
    settings.REDIS_URL = ""
    with mock.patch("core.views.connection.cursor", side_effect=OperationalError("connection refused")):
        resp = client.get("/readyz")
    assert resp.status_code == 503
    assert resp["Content-Type"] == "application/json"
    assert resp.json() == {"status": "unavailable", "checks": {"database": "unavailable"}}


@pytest.mark.django_db
def test_readyz_reports_redis_when_it_is_configured_and_stays_ready_without_it(client, settings):
    """The service records and answers without Redis: an outage of it must not take every instance out of the
    load balancer at once."""
    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    with mock.patch("core.views.cache") as cache:
        cache.get.return_value = "1"
        assert client.get("/readyz").json() == {"status": "ok", "checks": {"database": "ok", "redis": "ok"}}
        cache.set.side_effect = ConnectionError("redis is down")
        resp = client.get("/readyz")
    assert resp.status_code == 200
    assert resp.json() == {"status": "degraded", "checks": {"database": "ok", "redis": "unavailable"}}


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_answer_any_host_over_plain_http_in_production(client, settings, path):
    """Orchestrators probe by address over HTTP: no DisallowedHost 400, no redirect to HTTPS."""
    settings.ALLOWED_HOSTS = ["billing.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    settings.REDIS_URL = ""
    resp = client.get(path, HTTP_HOST="10.0.0.7:8000")
    assert resp.status_code == 200
    assert client.get("/v1/verify", HTTP_HOST="10.0.0.7:8000").status_code == 400  # other routes still check


def test_probes_are_not_part_of_the_api_schema(client):
    paths = client.get("/v1/openapi.json").json()["paths"]
    assert not {"/healthz", "/readyz"} & set(paths)
