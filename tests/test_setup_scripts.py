"""`make test` as a new user meets it: an unprivileged account, a copy of this checkout of its own, and a PATH
without PostgreSQL, Redis, Chromium, sudo or apt-get. `make test` must still run the tests it is given, bringing
PostgreSQL (the embedded wheel's) and Redis (a server of the run's own, from a wheel) without root, skipping the
browser tests with one line saying what is missing and how to get it, and leaving nothing running after.

As root the account is the system user `billing-setup-test` (created when missing); as another user, that user.
The copy reuses this checkout's installed packages (a virtualenv of its own whose one .pth file adds this one's
site-packages) instead of running `pip install` again, so the whole run takes seconds: it runs one test of this
module, not the suite.
"""
import os
import pwd
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest
from playwright.sync_api import Browser

from tests.browser import chromium, chromium_program  # noqa: F401 (the fixture)

ROOT = Path(__file__).resolve().parent.parent
ACCOUNT = "billing-setup-test"
# All a shell, make and the scripts call; no postgres, redis-server, chromium, sudo, apt-get or dpkg-deb.
TOOLS = ("bash", "sh", "env", "make", "mkdir", "touch", "rm", "ls", "cat", "head", "dirname", "basename", "id",
         "sed", "grep", "cut", "sha256sum", "flock", "timeout", "find", "sort", "paste", "chmod")
MISSING = ("postgres", "pg_ctl", "initdb", "redis-server", "valkey-server", "chromium", "chromium-browser",
           "google-chrome", "sudo", "apt-get", "dpkg-deb")


def account() -> dict:
    """subprocess's arguments that run a program as the unprivileged account (none when this is not root)."""
    if os.geteuid() != 0:
        return {}
    try:
        entry = pwd.getpwnam(ACCOUNT)
    except KeyError:
        made = subprocess.run(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                               "--shell", "/usr/sbin/nologin", ACCOUNT], capture_output=True, text=True)
        assert made.returncode == 0 or "already exists" in made.stderr, made.stderr
        entry = pwd.getpwnam(ACCOUNT)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def python_for(who: dict) -> str | None:
    """An interpreter of this one's version that the account may run (this one may live in root's home)."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (os.path.realpath(sys._base_executable), shutil.which(f"python{version}"),
                      f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"):
        if not candidate or not os.path.exists(candidate):
            continue
        try:
            asked = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                   capture_output=True, text=True, **who)
        except PermissionError:  # e.g. an interpreter under root's home
            continue
        if asked.returncode == 0 and asked.stdout.strip() == version:
            return candidate
    return None


def copy_of_the_checkout(destination: Path) -> None:
    """The checkout's files (tracked, and new ones not ignored), with their times: `make`'s install target then
    sees the copy's virtualenv as up to date."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)


def complete_for(python: Path, environment: dict, who: dict) -> None:
    """Install what the borrowed packages need under this interpreter and not under the suite's (an interpreter
    of another patch release may need a backport the suite's does not, e.g. redis's async-timeout before 3.11.3)."""
    checked = subprocess.run([str(python), "-m", "pip", "check"], capture_output=True, text=True, env=environment,
                             **who)
    missing = sorted(set(re.findall(r"requires ([A-Za-z0-9_.-]+), which is not installed", checked.stdout)))
    if missing:
        installed = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", *missing],
                                   capture_output=True, text=True, env=environment, timeout=300, **who)
        assert installed.returncode == 0, installed.stderr


@pytest.fixture
def new_user_checkout():
    who = account()
    python = python_for(who)
    if python is None:
        pytest.skip(f"no Python {sys.version_info.major}.{sys.version_info.minor} the unprivileged account may run")
    scratch = Path(tempfile.mkdtemp(prefix="billing-setup-test-"))
    scratch.chmod(0o755)
    checkout, tools = scratch / "checkout", scratch / "bin"
    try:
        copy_of_the_checkout(checkout)
        tools.mkdir()
        for program in TOOLS:
            (tools / program).symlink_to(shutil.which(program))
        if who:
            subprocess.run(["chown", "-R", f"{who['user']}:{who['group']}", str(scratch)], check=True)
        environment = {"HOME": str(scratch), "PATH": str(tools), "LANG": "C.UTF-8"}
        made = subprocess.run([python, "-m", "venv", "--without-pip", str(checkout / ".venv")], capture_output=True,
                              text=True, env=environment, **who)
        assert made.returncode == 0, made.stderr
        site_packages = sysconfig.get_path("purelib")
        own = checkout / ".venv" / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
        (own / "checkout-packages.pth").write_text(f"import site; site.addsitedir({site_packages!r})\n")
        if who:
            subprocess.run(["chown", "-R", f"{who['user']}:{who['group']}", str(checkout / ".venv")], check=True)
        complete_for(checkout / ".venv" / "bin" / "python", environment, who)
        (checkout / ".venv" / ".installed").touch()
        yield checkout, environment, who
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_make_test_needs_no_root_nor_any_server_or_browser_on_path(new_user_checkout):
    checkout, environment, who = new_user_checkout
    assert not any(shutil.which(program, path=environment["PATH"]) for program in MISSING)
    ran = subprocess.run(["make", "--no-print-directory", "test",
                          "PYTEST_ARGS=tests/test_setup_scripts.py -k a_page_renders_in_chromium"],
                         cwd=checkout, capture_output=True, text=True, timeout=300, env=environment, **who)
    printed = ran.stdout + ran.stderr
    assert ran.returncode == 0, printed[-4000:]
    assert "sudo" not in printed and "Traceback" not in printed, printed[-4000:]
    lines = printed.splitlines()
    # one line before the suite says the browser tests are skipped, and how to get Chromium
    skipped = [line for line in lines if line.startswith("services: Chromium not found")]
    assert len(skipped) == 1 and "apt-get install chromium" in skipped[0] and "CHROMIUM=" in skipped[0], printed
    # a Redis and a PostgreSQL of the run's own, started for it
    assert any(line.startswith("redis: Valkey ") and "of this run on redis://127.0.0.1:" in line for line in lines)
    assert any(line.startswith("database: embedded PostgreSQL ") and "data in var/test-postgres" in line
               and line.endswith("(started)") for line in lines), printed
    # the browser test itself: skipped, with the same reason in pytest's summary
    assert any(line.startswith("SKIPPED [1]") and "Chromium not found" in line for line in lines), printed
    assert "1 skipped" in lines[-1], printed
    # nothing left running, nothing fetched
    assert not (checkout / "var" / "test-postgres" / "postmaster.pid").exists()
    assert list((checkout / "var" / "test-redis").iterdir()) == []
    assert not (checkout / "var" / "chromium").exists()


def test_a_page_renders_in_chromium(chromium: Browser):
    """What `make test` above runs: the browser fixture on its own (skipped there; here, Chromium renders)."""
    page = chromium.new_page()
    page.set_content("<h1>Invoice INV-000001</h1>")
    assert page.inner_text("h1") == "Invoice INV-000001"


def test_chromium_is_found_through_its_setting_then_path(monkeypatch, tmp_path):
    monkeypatch.setenv("CHROMIUM", str(tmp_path / "nowhere"))
    assert chromium_program() == (None, f"CHROMIUM={tmp_path / 'nowhere'} is not a program")
    program = tmp_path / "chromium"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    monkeypatch.setenv("CHROMIUM", str(program))
    assert chromium_program() == (str(program), "")
    monkeypatch.delenv("CHROMIUM")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert chromium_program() == (str(program), "")


REDIS_PROBE = ("import os, redis; url = os.environ['REDIS_URL']; print(url); "
               "print(redis.Redis.from_url(url).set('probe', 1, nx=True, ex=5, get=True))")


def test_the_runs_redis_is_its_own_and_stops_with_the_run():
    """A server started for the command (Redis 7's `SET ... NX GET` included, which the usage follow-up sends), on
    a port of its own, gone once the command ends; TEST_REDIS_URL instead names one and nothing is started."""
    environment = {name: value for name, value in os.environ.items()
                   if name not in ("REDIS_URL", "TEST_REDIS_URL", "REDIS_SERVER")}
    ran = subprocess.run([sys.executable, "scripts/test_redis.py", "--", sys.executable, "-c", REDIS_PROBE], cwd=ROOT,
                         capture_output=True, text=True, timeout=60, env=environment)
    assert ran.returncode == 0, ran.stderr
    said, url, answer = ran.stdout.splitlines()
    assert said == f"redis: Valkey 9.1.2 of this run on {url} (started; stopped after)" and answer == "None"
    assert url.startswith("redis://127.0.0.1:") and not url.startswith("redis://127.0.0.1:6379/")
    import redis

    with pytest.raises(redis.ConnectionError):
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()

    named = subprocess.run([sys.executable, "scripts/test_redis.py", "--", sys.executable, "-c",
                            "import os; print(os.environ['REDIS_URL'])"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60, env={**environment, "TEST_REDIS_URL": "redis://redis.example:6390/2"})
    assert named.returncode == 0, named.stderr
    assert named.stdout.splitlines() == ["redis: redis://redis.example:6390/2 (TEST_REDIS_URL)",
                                         "redis://redis.example:6390/2"]
