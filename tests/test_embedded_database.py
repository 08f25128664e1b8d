"""The embedded PostgreSQL of `make run` and `make test` (config/embedded_database.py): it runs from the pinned
wheel with no PostgreSQL on PATH, keeps its data between runs, stops when the last command using it ends, and
the settings point at it when DATABASE_URL is unset. Each test starts a server of its own in a temporary data
directory (with fsync off, as `make test`'s), a second or two each, but `make run`'s whole path."""
import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.conf import settings

from config.embedded_database import url_for

ROOT = Path(__file__).resolve().parent.parent
# What the command run under the launcher reports: the server it reaches, and that no PostgreSQL program is on
# its PATH (the launcher's own PATH is the same).
PROBE = """
import os, shutil, sys, psycopg
with psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as connection:
    print("server", connection.execute("SHOW server_version").fetchone()[0])
    connection.execute(sys.argv[1])
    print("rows", connection.execute("SELECT count(*) FROM kept").fetchone()[0])
print("on PATH:", [program for program in ("postgres", "pg_ctl", "initdb", "psql") if shutil.which(program)])
"""


def environment(**extra) -> dict[str, str]:
    """This environment less DATABASE_URL (and the flags of a `make test` this suite may run under), with a PATH
    where no PostgreSQL program is (nor anything else)."""
    dropped = {"DATABASE_URL", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"}
    env = {name: value for name, value in os.environ.items() if name not in dropped}
    return {**env, "PATH": str(ROOT / "tests" / "no-such-directory"), **extra}


def launcher(data: Path, *command: str, prefer: str | None = None) -> list[str]:
    return [sys.executable, "-m", "config.embedded_database", "--data", str(data), "--scratch",
            *(["--prefer", prefer] if prefer is not None else []), "--", *command]


def run(arguments: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run(arguments, cwd=ROOT, env=environment(**env), capture_output=True, text=True, timeout=120)


@pytest.fixture
def scratch():
    """A directory for the data directories, outside pytest's tmp_path: each pytest session that starts on the
    machine resets /tmp/pytest-of-<user> to mode 0700, which (as root) would lock the server's own user out of a
    data directory below it while its server runs."""
    path = Path(tempfile.mkdtemp(prefix="billing-embedded-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def is_running(data: Path) -> bool:
    return (data / "postmaster.pid").exists()


def stops(data: Path, seconds: float = 60) -> bool:
    """Whether the server of `data` stops within `seconds` (its launcher may still be stopping it when the
    command that ran under it has ended)."""
    deadline = time.monotonic() + seconds
    while is_running(data) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not is_running(data)


def test_the_embedded_server_runs_from_the_wheel_with_no_postgresql_on_path_and_keeps_its_data(scratch):
    data = scratch / "postgres"
    first = run(launcher(data, sys.executable, "-c", PROBE, "CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)"))
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[0] == (f"database: embedded PostgreSQL 18.6, data in {data.resolve()}, database billing "
                                            f"(started)")
    assert "server 18.6" in first.stdout and "rows 1" in first.stdout
    assert "on PATH: []" in first.stdout
    assert not is_running(data)  # stopped with the command

    again = run(launcher(data, sys.executable, "-c", PROBE, "INSERT INTO kept VALUES (2)"))
    assert again.returncode == 0, again.stderr
    assert "rows 2" in again.stdout  # the same data directory, reused
    assert not is_running(data)


def test_the_command_exit_status_is_the_launcher_exit_status(scratch):
    result = run(launcher(scratch / "postgres", sys.executable, "-c", "raise SystemExit(3)"))
    assert result.returncode == 3


def test_the_server_stops_when_the_last_command_using_it_ends_whoever_started_it(scratch):
    data, release = scratch / "postgres", scratch / "release"
    wait_for_release = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"
    with subprocess.Popen(launcher(data, sys.executable, "-c", wait_for_release), cwd=ROOT, env=environment(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as first:
        try:
            said = first.stdout.readline()
            assert said.endswith("(started)\n"), said + first.stderr.read()
            second = run(launcher(data, sys.executable, "-c", "pass"))
            assert second.returncode == 0, second.stderr
            assert second.stdout.startswith("database: embedded PostgreSQL") and "(already running)" in second.stdout
            assert is_running(data)  # the first command still uses it
        finally:
            release.touch()
            first.wait(timeout=120)
        assert first.returncode == 0, first.stderr.read()
    assert stops(data)


def test_a_preferred_server_that_answers_is_used_and_nothing_is_started(scratch):
    url = settings.DATABASE_URL  # the suite's own server answers
    data = scratch / "postgres"
    result = run(launcher(data, sys.executable, "-c", "import os; print(os.environ['DATABASE_URL'])", prefer=url))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == url
    assert not data.exists()


def test_a_preferred_server_that_does_not_answer_falls_back_to_the_embedded_one(scratch):
    result = run(launcher(scratch / "postgres", sys.executable, "-c", "pass",
                          prefer="postgres://postgres:secret@127.0.0.1:1/billing"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("database: embedded PostgreSQL")
    assert "postgres://postgres:***@127.0.0.1:1/billing does not answer" in result.stdout  # no password printed


def test_with_database_url_set_the_launcher_uses_it_and_says_so(scratch):
    url = "postgres://billing:secret@db.example.com:5432/billing"
    result = run(launcher(scratch / "postgres", sys.executable, "-c", "import os; print(os.environ['DATABASE_URL'])"),
                 DATABASE_URL=url)
    assert result.stdout.splitlines() == ["database: postgres://billing:***@db.example.com:5432/billing (DATABASE_URL)",
                                          url]
    assert not (scratch / "postgres").exists()


SETTINGS_DATABASE = ("import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; django.setup(); "
                     "from django.conf import settings; d = settings.DATABASES['default']; print(d['ENGINE'], d['HOST'], d['NAME'])")


def test_without_database_url_the_settings_use_the_embedded_server_of_make_run():
    result = run([sys.executable, "-c", SETTINGS_DATABASE])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["core.postgresql", str(ROOT / "var" / "postgres"), "billing"]


@pytest.mark.parametrize("url", ["mysql://root@127.0.0.1/billing", "oracle://billing:secret@127.0.0.1:1521/billing"])
def test_a_database_url_other_than_postgresql_is_refused(url):
    result = run([sys.executable, "-c", SETTINGS_DATABASE], DATABASE_URL=url)
    assert result.returncode != 0
    assert "DATABASE_URL must name a PostgreSQL database" in result.stderr


def free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]


def get(url: str, **headers) -> tuple[int, str]:
    request = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as failure:
        return failure.code, failure.read().decode()


def post(url: str, key: str, body: dict) -> dict:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"x-api-key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_make_run_with_no_postgresql_on_path_serves_the_api_the_console_and_the_portal(scratch):
    """The whole zero-setup path: `make run` with no DATABASE_URL and no PostgreSQL program on PATH starts the
    embedded server (a fresh data directory), migrates, loads the catalog and serves; Ctrl-C stops it all.
    The slowest test here (migrating an empty database), about 20 seconds."""
    tools = scratch / "bin"  # PATH: only the programs the Makefile's recipes call
    tools.mkdir()
    for program in ("bash", "sh", "mkdir", "env"):
        (tools / program).symlink_to(shutil.which(program))
    make = shutil.which("make")
    if subprocess.run([make, "-q", ".venv/.installed"], cwd=ROOT).returncode != 0:
        pytest.skip("requirements.txt changed since `make install` (make test installs first)")
    data, port = scratch / "postgres", free_port()
    base, log = f"http://127.0.0.1:{port}", scratch / "make-run.log"
    with open(log, "w") as output:
        server = subprocess.Popen(
            [make, "--no-print-directory", "run", f"EMBEDDED_POSTGRES_DATA={data}", f"PORT={port}",
             "WEB_CONCURRENCY=1"],
            cwd=ROOT, env=environment(PATH=str(tools)), stdout=output, stderr=subprocess.STDOUT,
            start_new_session=True)  # its own process group, for the Ctrl-C below
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                if get(f"{base}/healthz")[0] == 200:
                    break
            except OSError:
                pass
            assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        said = [line for line in log.read_text().splitlines() if line.startswith("database: ")]
        assert said == [f"database: embedded PostgreSQL 18.6, data in {data.resolve()}, database billing (started)"]

        key = subprocess.run(
            [sys.executable, "manage.py", "create_api_key", "--org", "Acme Agents", "--email", "you@acme.example",
             "--role", "owner", "--type", "secret"], cwd=ROOT, env=environment(DATABASE_URL=url_for(data)),
            capture_output=True, text=True, check=True).stdout.splitlines()[-1]
        recorded = post(f"{base}/v1/usage/record", key, {"records": [{
            "customerExternalId": "cust-42", "agentCode": "support-bot", "signalName": "tickets_resolved",
            "model": "gpt-4o", "modelProvider": "openai", "inputTokens": 1200, "outputTokens": 300}]})
        assert recorded["successful"] == 1, recorded
        status, body = get(f"{base}/v1/analytics/usage?startDate=2026-01-01&endDate=2026-12-31", **{"x-api-key": key})
        assert status == 200, body
        customer_id = json.loads(get(f"{base}/v1/customers", **{"x-api-key": key})[1])[0]["id"]
        # A body sent in chunks (no Content-Length) is read whole through gunicorn (core/chunked_bodies.py).
        chunked = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        chunked.request("PATCH", f"/v1/customers/{customer_id}", body=iter([b'{"name": ', b'"Sent in chunks"}']),
                        headers={"x-api-key": key, "Content-Type": "application/json"}, encode_chunked=True)
        answer = chunked.getresponse()
        assert (answer.status, json.loads(answer.read())["name"]) == (200, "Sent in chunks")
        chunked.close()
        portal = post(f"{base}/v1/portal-sessions", key, {"customerId": customer_id})
        status, page = get(portal["url"])
        assert status == 200 and "Billing portal" in page
        status, page = get(f"{base}/admin/login/")
        assert status == 200 and "Billing console" in page
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGINT)  # Ctrl-C in the terminal
        server.wait(timeout=60)
    assert stops(data), log.read_text()[-3000:]
