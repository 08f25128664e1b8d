"""scripts/coding-agent-hook.sh against a live server: it allows, refuses at an enforce cap (exit 2) and fails
open when the service is unreachable; it also reports the machine armed for coverage."""
import socket
import subprocess
from pathlib import Path

import pytest

from controls.models import Device

HOOK = Path(__file__).resolve().parents[2] / "scripts" / "coding-agent-hook.sh"
ALICE = "alice@acme.example.com"

pytestmark = pytest.mark.django_db(transaction=True)


def run_hook(base_url: str, raw_key: str, tmp_path, **extra_env) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache"),
           "SVC_API_URL": base_url, "SVC_API_KEY": raw_key, "SVC_DEVELOPER": ALICE, "SVC_DEVICE_ID": "alice-laptop",
           "SVC_TIMEOUT": "10", **extra_env}
    return subprocess.run(["bash", str(HOOK)], env=env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def ingest_key(client_for):
    return client_for(scope="ingest", role="member", email="laptop@acme.example.com").raw_key


def test_hook_allows_under_the_cap_and_reports_the_machine_armed(live_server, ingest_key, api, frozen_now, book,
                                                                  tmp_path):
    result = run_hook(live_server.url, ingest_key, tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    device = Device.objects.get(book=book)
    assert (device.customer_external_id, device.device_id, device.armed) == (ALICE, "alice-laptop", True)
    assert api.get("/v1/control/coverage").json()["armed"] == 1


def test_hook_sends_the_heartbeat_at_most_once_per_interval(live_server, ingest_key, frozen_now, book, tmp_path):
    run_hook(live_server.url, ingest_key, tmp_path)
    Device.objects.all().delete()
    run_hook(live_server.url, ingest_key, tmp_path)
    assert not Device.objects.exists()
    run_hook(live_server.url, ingest_key, tmp_path, SVC_HEARTBEAT_SECONDS="0")
    assert not Device.objects.exists()


def test_hook_refuses_with_exit_2_and_the_reason_once_an_enforce_cap_is_reached(live_server, ingest_key, api,
                                                                                 frozen_now, coding_usage, tmp_path):
    resp = api.post("/v1/control/caps", {"scope": "org", "providerScope": "all", "amountUsd": 1, "period": "month",
                                         "mode": "enforce"})
    assert resp.status_code == 201
    coding_usage(ALICE, "1.50")
    result = run_hook(live_server.url, ingest_key, tmp_path)
    assert result.returncode == 2
    assert "Refused by the AI tool spend cap: AI tool spend for the whole team this month is $1.50" in result.stderr


def test_hook_fails_open_with_a_warning_when_the_service_is_unreachable(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = run_hook(f"http://127.0.0.1:{port}", "svc_sk_test_unused", tmp_path)
    assert result.returncode == 0
    assert "warning" in result.stderr and "could not reach" in result.stderr


def test_hook_fails_open_when_the_key_is_refused(live_server, tmp_path):
    result = run_hook(live_server.url, "svc_sk_test_" + "x" * 40, tmp_path)
    assert result.returncode == 0
    assert "answered HTTP 401" in result.stderr


def test_hook_without_configuration_allows_with_a_warning(tmp_path):
    result = run_hook("", "", tmp_path, SVC_DEVELOPER="")
    assert result.returncode == 0 and "SVC_API_URL" in result.stderr
