"""The embedded PostgreSQL of `make run` and `make test` (config/embedded_database.py): it runs from the pinned
wheel with no PostgreSQL on PATH, keeps its data between runs, stops when the last command using it ends, and
the settings point at it when DATABASE_URL is unset. Each test starts a server of its own in a temporary data
directory (with fsync off, as `make test`'s), a second or two each."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings

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
    """This environment less DATABASE_URL, with a PATH where no PostgreSQL program is (nor anything else)."""
    env = {name: value for name, value in os.environ.items() if name != "DATABASE_URL"}
    return {**env, "PATH": str(ROOT / "tests" / "no-such-directory"), **extra}


def launcher(data: Path, *command: str, prefer: str | None = None) -> list[str]:
    return [sys.executable, "-m", "config.embedded_database", "--data", str(data), "--scratch",
            *(["--prefer", prefer] if prefer is not None else []), "--", *command]


def run(arguments: list[str], **env) -> subprocess.CompletedProcess:
    return subprocess.run(arguments, cwd=ROOT, env=environment(**env), capture_output=True, text=True, timeout=120)


def is_running(data: Path) -> bool:
    return (data / "postmaster.pid").exists()


def test_the_embedded_server_runs_from_the_wheel_with_no_postgresql_on_path_and_keeps_its_data(tmp_path):
    data = tmp_path / "postgres"
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


def test_the_command_exit_status_is_the_launcher_exit_status(tmp_path):
    result = run(launcher(tmp_path / "postgres", sys.executable, "-c", "raise SystemExit(3)"))
    assert result.returncode == 3


def test_the_server_stops_when_the_last_command_using_it_ends_whoever_started_it(tmp_path):
    data, release = tmp_path / "postgres", tmp_path / "release"
    wait_for_release = f"import os, time\nwhile not os.path.exists({str(release)!r}): time.sleep(0.05)"
    first = subprocess.Popen(launcher(data, sys.executable, "-c", wait_for_release), cwd=ROOT, env=environment(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert first.stdout.readline().endswith("(started)\n")
        second = run(launcher(data, sys.executable, "-c", "pass"))
        assert second.returncode == 0, second.stderr
        assert second.stdout.startswith("database: embedded PostgreSQL") and "(already running)" in second.stdout
        assert is_running(data)  # the first command still uses it
    finally:
        release.touch()
        first.wait(timeout=60)
    assert first.returncode == 0
    deadline = time.monotonic() + 10
    while is_running(data) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(data)


def test_a_preferred_server_that_answers_is_used_and_nothing_is_started(tmp_path):
    url = settings.DATABASE_URL  # the suite's own server answers
    data = tmp_path / "postgres"
    result = run(launcher(data, sys.executable, "-c", "import os; print(os.environ['DATABASE_URL'])", prefer=url))
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == url
    assert not data.exists()


def test_a_preferred_server_that_does_not_answer_falls_back_to_the_embedded_one(tmp_path):
    result = run(launcher(tmp_path / "postgres", sys.executable, "-c", "pass",
                          prefer="postgres://postgres:secret@127.0.0.1:1/billing"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("database: embedded PostgreSQL")
    assert "postgres://postgres:***@127.0.0.1:1/billing does not answer" in result.stdout  # no password printed


def test_with_database_url_set_the_launcher_uses_it_and_says_so(tmp_path):
    url = "postgres://billing:secret@db.example.com:5432/billing"
    result = run(launcher(tmp_path / "postgres", sys.executable, "-c", "import os; print(os.environ['DATABASE_URL'])"),
                 DATABASE_URL=url)
    assert result.stdout.splitlines() == ["database: postgres://billing:***@db.example.com:5432/billing (DATABASE_URL)",
                                          url]
    assert not (tmp_path / "postgres").exists()


SETTINGS_DATABASE = ("import os, django; os.environ['DJANGO_SETTINGS_MODULE'] = 'config.settings'; django.setup(); "
                     "from django.conf import settings; d = settings.DATABASES['default']; print(d['ENGINE'], d['HOST'], d['NAME'])")


def test_without_database_url_the_settings_use_the_embedded_server_of_make_run():
    result = run([sys.executable, "-c", SETTINGS_DATABASE])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.postgresql", str(ROOT / "var" / "postgres"), "billing"]


@pytest.mark.parametrize("url", ["mysql://root@127.0.0.1/billing", "oracle://billing:secret@127.0.0.1:1521/billing"])
def test_a_database_url_other_than_postgresql_is_refused(url):
    result = run([sys.executable, "-c", SETTINGS_DATABASE], DATABASE_URL=url)
    assert result.returncode != 0
    assert "DATABASE_URL must name a PostgreSQL database" in result.stderr
