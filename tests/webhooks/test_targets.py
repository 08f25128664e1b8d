"""The POST of one attempt (webhooks/targets.py) against receivers that misbehave on the wire."""
import socket
import threading
import time

import pytest

from webhooks import targets


@pytest.fixture
def trickling_receiver(settings):
    """A receiver that reads the request, then answers a byte every 0.3 seconds: every read of the answer gets a
    byte well within a 1-second timeout, so only a bound on the whole attempt stops it."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        connection, _ = server.accept()
        with connection:
            connection.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok":
                if stop.wait(0.3):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return  # the client gave up and closed
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    stop.set()
    thread.join(timeout=5)
    server.close()


def test_an_answer_trickling_in_is_cut_at_the_attempts_timeout(trickling_receiver):
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        targets.post(trickling_receiver, b"{}", {}, timeout=1.0)
    assert time.monotonic() - started < 2.0  # the whole answer would take 24 seconds


def test_an_internationalized_url_goes_out_in_the_form_the_wire_takes():
    """`https://пример.рф/hook` was accepted and every attempt failed: the Host header and the request line went out
    beyond ASCII (UnicodeEncodeError, recorded as an unexpected error, and the endpoint disabled in the end)."""
    target = targets.target_of("https://пример.рф/crochets/é?q=ü")
    assert (target.host, target.path) == ("xn--e1afmkfd.xn--p1ai", "/crochets/%C3%A9?q=%C3%BC")
    assert targets.target_of("https://hooks.example.com/a%20b?x=1").path == "/a%20b?x=1"  # as written
    assert targets.url_problems("https://пример.рф/hook", livemode=True) == []
    assert targets.url_problems("https://ü..example/hook", livemode=True) == ["ü..example is not a valid host name."]


@pytest.mark.parametrize("host", ["a" * 64 + ".example.com", "hooks..example.com", ".example.com"])
def test_a_host_with_a_label_dns_cannot_carry_is_refused_at_create(host):
    """An empty label or one past 63 characters was accepted, and every attempt then failed as an unexpected error
    (UnicodeError from the resolver), logged with a traceback until the retries ran out."""
    assert targets.url_problems(f"https://{host}/hook", livemode=True) == [f"{host} is not a valid host name."]
    with pytest.raises(targets.TargetRefused, match="is not a valid host name"):
        targets.resolve_checked(host, 443)
