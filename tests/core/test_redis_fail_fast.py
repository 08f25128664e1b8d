"""A Redis that stops answering (a partition, a stalled server): the raw client and the shared cache wait for it
once, then do not connect again for `UNREACHABLE_PAUSE_SECONDS` (core/redis_client.py). Every caller treats Redis
as optional, so each further wait would only slow a request whose answer does not depend on it."""
import socket
import threading

import pytest
import redis

from core import redis_client as module
from core.cache import ResilientRedisCache


class SilentServer:
    """Accepts connections, counts them, reads what they send and never answers."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.accepted, self.held = 0, []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            self.held.append(connection)

    def close(self):
        self.listener.close()
        for connection in self.held:
            connection.close()


@pytest.fixture
def silent():
    server = SilentServer()
    module.reachable_again()
    yield server
    module.reachable_again()
    server.close()


def wait_for(condition):
    for _ in range(200):
        if condition():
            return
        threading.Event().wait(0.01)


def test_the_raw_client_waits_once_then_refuses_at_once_until_the_pause_ends(silent):
    url = f"redis://127.0.0.1:{silent.port}/0"
    client = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=0.5,
                                  connection_class=module.fail_fast_connection_class(url))
    with pytest.raises(redis.TimeoutError):
        client.incr("rate")
    wait_for(lambda: silent.accepted == 1)
    for _ in range(5):
        with pytest.raises(redis.ConnectionError, match="failed moments ago"):
            client.incr("rate")
    assert silent.accepted == 1  # none of them connected
    module.reachable_again()  # the pause is over
    with pytest.raises(redis.TimeoutError):
        client.incr("rate")
    wait_for(lambda: silent.accepted == 2)
    assert silent.accepted == 2


def test_the_shared_cache_misses_without_waiting_again(silent):
    cache = ResilientRedisCache(f"redis://127.0.0.1:{silent.port}/0",
                                {"OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 0.5}})
    assert cache.get("balance") is None  # waited for the timeout: a miss
    wait_for(lambda: silent.accepted == 1)
    assert [cache.get("balance"), cache.add("rate", 1), cache.get_many(["a", "b"])] == [None, False, {}]
    assert silent.accepted == 1


@pytest.mark.parametrize(("url", "expected"), [
    ("redis://cache.internal:6379/0", module.FailFastConnection),
    ("rediss://cache.internal:6380/0", module.FailFastSSLConnection),  # TLS stays TLS
    ("unix:///run/redis.sock", module.FailFastUnixConnection),
])
def test_the_connection_keeps_the_urls_transport(url, expected):
    assert module.fail_fast_connection_class(url) is expected
    assert issubclass(expected, redis.SSLConnection) is url.startswith("rediss")


FOLLOWUP_THEN_PUBLISH = """
import time
import django
django.setup()
from core.background import publish
from billing.followup import usage_followup_schedule
started = time.monotonic()
usage_followup_schedule(book_id="00000000-0000-4000-8000-000000000001", customer_ids={"00000000-0000-4000-8000-000000000002"})
followup = time.monotonic() - started
started = time.monotonic()
published = publish("billing.tasks.usage_followup_task", ("b",))
print(f"{followup:.2f} {time.monotonic() - started:.2f} {published}")
"""
PUBLISH = """
import time
import django
django.setup()
from core.background import publish
started = time.monotonic()
published = publish("billing.tasks.usage_followup_task", ("b",))
print(f"{time.monotonic() - started:.2f} {published}")
"""


def run_with_redis_at(silent, script: str) -> list[str]:
    """`script` in a new process whose REDIS_URL (broker and cache) is the silent server; its last line, split."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "REDIS_URL": f"redis://127.0.0.1:{silent.port}/0", "DJANGO_SETTINGS_MODULE": "config.settings",
           "PYTHONPATH": str(root), "CELERY_TASK_ALWAYS_EAGER": "0"}
    run = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()[-1].split()


def test_a_stalled_broker_costs_a_batch_one_bounded_wait_not_one_per_call(silent):
    """A Redis that stops answering (SIGSTOP, a partition): the follow-up waits for it once (2 s), and the task it
    would publish instead is left to its sweep at once; a publish of its own waits 2 s, not the 10 s socket
    timeout the broker had, nor once per retry."""
    followup, publish, published = run_with_redis_at(silent, FOLLOWUP_THEN_PUBLISH)
    assert 1.5 < float(followup) < 4  # the raw client's one wait, the publish skipped
    assert published == "False"
    assert float(publish) < 0.5  # Redis failed moments ago: not asked again


def test_a_publish_to_a_stalled_broker_waits_the_redis_timeout_once(silent):
    waited, published = run_with_redis_at(silent, PUBLISH)
    assert published == "False" and 1.5 < float(waited) < 4  # 2 s (REDIS_TIMEOUT_SECONDS), once


PUBLISH_THEN_STALL = """
import os
import signal
import time
import django
django.setup()
from core.background import publish
from core.redis_client import unreachable
assert publish("billing.tasks.usage_followup_task", ("b",))  # the process now keeps a broker connection
server = int(os.environ["REDIS_SERVER_PID"])
os.kill(server, signal.SIGSTOP)
try:
    started = time.monotonic()
    published = publish("billing.tasks.usage_followup_task", ("b",))
    waited = time.monotonic() - started
finally:
    os.kill(server, signal.SIGCONT)
print(f"{waited:.2f} {published} {unreachable()}")
"""


def test_a_broker_that_stalls_under_a_kept_connection_costs_one_redis_timeout(tmp_path):
    """A web process that published before keeps its broker connection; Redis then stops answering (SIGSTOP). The
    hand-over waits the Redis timeout once (2 s), not once more per publish retry and reconnection, and marks Redis
    unreachable for the rest of the request."""
    import os
    import subprocess
    import sys

    from tests.live_servers import ROOT
    from tests.reliability.test_outages import RedisServer, redis_server_program

    if redis_server_program() is None:
        pytest.skip("no redis-server program to start a Redis of this test's own")
    server = RedisServer(tmp_path)
    server.start()
    try:
        env = {**os.environ, "REDIS_URL": server.url, "DJANGO_SETTINGS_MODULE": "config.settings",
               "PYTHONPATH": str(ROOT), "CELERY_TASK_ALWAYS_EAGER": "0", "REDIS_SERVER_PID": str(server.process.pid)}
        run = subprocess.run([sys.executable, "-c", PUBLISH_THEN_STALL], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr
        waited, published, unreachable = run.stdout.splitlines()[-1].split()
        assert published == "False" and unreachable == "True"
        assert 1.5 < float(waited) < 3.5  # REDIS_TIMEOUT_SECONDS, once
    finally:
        server.stop()
