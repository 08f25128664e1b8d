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
