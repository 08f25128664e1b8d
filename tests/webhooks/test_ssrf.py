"""Safe by default: without WEBHOOKS_ALLOW_PRIVATE_URLS, private, loopback, link-local and other non-public
targets are refused, written as an address (400 at create) or reached through a name (refused at each attempt,
after resolution); redirects are never followed."""
import pytest

from core import clock
from tests.billing.support import error, ok
from tests.webhooks.receiver import Receiver
from tests.webhooks.support import create_endpoint, deliveries, sweep

pytestmark = pytest.mark.django_db


@pytest.fixture
def quiet_receiver(settings):
    """A receiver on loopback that the service may not reach (the setting stays off)."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    receiver = Receiver()
    yield receiver
    receiver.stop()


@pytest.mark.parametrize("host, kind", [
    ("127.0.0.1", "loopback"), ("10.1.2.3", "private"), ("192.168.0.10", "private"), ("172.16.5.4", "private"),
    ("169.254.169.254", "link-local"), ("[::1]", "loopback"), ("[fe80::1]", "link-local"), ("0.0.0.0", "unspecified"),
    ("[::ffff:127.0.0.1]", "loopback"), ("100.64.0.1", "not a public"),
    # IPv4's older spellings, which the resolver reads as the addresses they stand for
    ("127.1", "loopback"), ("2130706433", "loopback"), ("0x7f000001", "loopback"), ("017700000001", "loopback"),
    ("10.1", "private"),
])
def test_an_address_that_is_not_public_is_refused_at_create(api, settings, host, kind):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    message = error(api.post("/v1/webhook-endpoints", {"url": f"http://{host}:8080/hooks"}), 400)
    assert message.startswith("url: ") and kind in message


def test_the_setting_allows_private_targets(api, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    assert ok(api.post("/v1/webhook-endpoints", {"url": "http://10.1.2.3/hooks"}), 201)


def test_a_url_changed_to_a_private_address_is_refused(api, settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    endpoint = create_endpoint(api, "https://hooks.example.com/x")
    assert "link-local" in error(api.patch(f"/v1/webhook-endpoints/{endpoint['id']}",
                                           {"url": "http://169.254.169.254/latest/meta-data"}), 400)


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "hooks.localhost"])
def test_a_loopback_name_is_refused_at_create_naming_the_setting(api, settings, host):
    """`localhost` is this machine whatever DNS says (RFC 6761): refused as 127.0.0.1 is, not accepted and then
    failing at every attempt."""
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    message = error(api.post("/v1/webhook-endpoints", {"url": f"http://{host}:8080/hooks"}), 400)
    assert "loopback" in message and "WEBHOOKS_ALLOW_PRIVATE_URLS=1" in message
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    assert ok(api.post("/v1/webhook-endpoints", {"url": f"http://{host}:8080/hooks"}), 201)


def test_a_name_resolving_to_a_private_address_is_refused_at_create_and_one_that_does_not_resolve_accepted(
        api, settings, monkeypatch):
    import socket

    from webhooks import targets

    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    resolve = socket.getaddrinfo
    monkeypatch.setattr(targets.socket, "getaddrinfo", lambda host, *args, **kwargs: resolve(
        "10.1.2.3" if host == "127.0.0.1.nip.io" else host, *args, **kwargs))
    message = error(api.post("/v1/webhook-endpoints", {"url": "https://127.0.0.1.nip.io/hook"}), 400)
    assert message == ("url: 127.0.0.1.nip.io resolves to 10.1.2.3: 10.1.2.3 is a private address; webhook endpoints "
                       "must be public (WEBHOOKS_ALLOW_PRIVATE_URLS=1 allows such targets in development).")

    def unknown(host, *args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    monkeypatch.setattr(targets.socket, "getaddrinfo", unknown)
    assert ok(api.post("/v1/webhook-endpoints", {"url": "https://hooks.not-yet.example/hook"}), 201)


def test_an_endpoint_whose_name_now_resolves_privately_can_still_be_sent_back_whole_to_disable_it(
        api, settings, monkeypatch):
    """The URL is checked when it changes: the same URL sent back (a client echoing the endpoint) is no change,
    so an operator can disable an endpoint whose name was rebound to a private address since."""
    import socket

    from webhooks import targets

    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    resolve = socket.getaddrinfo
    answer = {"hooks.rebound.example": "93.184.215.14"}
    monkeypatch.setattr(targets.socket, "getaddrinfo", lambda host, *args, **kwargs: resolve(
        answer.get(host, host), *args, **kwargs))
    url = "https://hooks.rebound.example/hooks"
    endpoint = ok(api.post("/v1/webhook-endpoints", {"url": url}), 201)
    answer["hooks.rebound.example"] = "10.1.2.3"
    changed = ok(api.patch(f"/v1/webhook-endpoints/{endpoint['id']}", {"url": url, "enabled": False}))
    assert changed["enabled"] is False
    message = error(api.patch(f"/v1/webhook-endpoints/{endpoint['id']}",
                              {"url": "https://hooks.rebound.example/other"}), 400)
    assert "resolves to 10.1.2.3" in message


def test_a_name_resolving_to_loopback_is_refused_at_the_attempt(api, quiet_receiver, monkeypatch,
                                                                 django_capture_on_commit_callbacks):
    import socket

    from webhooks import targets

    resolve = socket.getaddrinfo
    # Public when the endpoint is made; rebound to loopback by the time of the attempt.
    monkeypatch.setattr(targets.socket, "getaddrinfo", lambda host, *args, **kwargs: resolve(
        "93.184.215.14" if host == "hooks.rebound.example" else host, *args, **kwargs))
    endpoint = create_endpoint(api, f"http://hooks.rebound.example:{quiet_receiver.port}/hooks")
    monkeypatch.setattr(targets.socket, "getaddrinfo", lambda host, *args, **kwargs: resolve(
        "127.0.0.1" if host == "hooks.rebound.example" else host, *args, **kwargs))
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    [delivery] = deliveries(api, endpoint["id"])
    assert delivery["status"] == "pending"
    assert "hooks.rebound.example resolves to 127.0.0.1: 127.0.0.1 is a loopback address" in \
        delivery["attemptLog"][0]["error"]
    assert quiet_receiver.requests == []


def test_a_target_allowed_once_is_checked_again_at_every_attempt(api, settings, quiet_receiver,
                                                                  django_capture_on_commit_callbacks):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    endpoint = create_endpoint(api, quiet_receiver.url)
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    sweep(clock.now())
    [delivery] = deliveries(api, endpoint["id"])
    assert "loopback" in delivery["attemptLog"][0]["error"] and quiet_receiver.requests == []


def test_a_redirect_is_not_followed(api, receiver, second_receiver, django_capture_on_commit_callbacks):
    # The setting is on here so that the first receiver (on loopback) is reachable at all.
    receiver.redirect_to = second_receiver.url
    endpoint = create_endpoint(api, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    [delivery] = deliveries(api, endpoint["id"])
    assert (delivery["status"], delivery["attemptLog"][0]["responseStatus"]) == ("pending", 302)
    assert "redirects are not followed" in delivery["attemptLog"][0]["error"]
    assert len(receiver.requests) == 1 and second_receiver.requests == []


def test_a_redirect_to_loopback_is_not_followed_without_the_setting(api, settings, quiet_receiver, monkeypatch,
                                                                     django_capture_on_commit_callbacks):
    # A public endpoint answering with a redirect to loopback: the service never follows it. The public host is
    # this machine's receiver seen through a name that the resolver maps to a public address (DNS at its edge).
    import socket
    from webhooks import targets
    public = "93.184.215.14"
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.create_connection

    def resolve(host, port, *args, **kwargs):
        if host == "hooks.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (public, port))]
        return real_getaddrinfo(host, port, *args, **kwargs)

    def connect(address, *args, **kwargs):
        if address[0] == public:
            address = ("127.0.0.1", address[1])
        return real_connect(address, *args, **kwargs)
    monkeypatch.setattr(targets.socket, "getaddrinfo", resolve)
    monkeypatch.setattr(targets.socket, "create_connection", connect)
    redirector = Receiver()
    try:
        redirector.redirect_to = quiet_receiver.url
        endpoint = create_endpoint(api, f"http://hooks.example.com:{redirector.port}/hooks")
        with django_capture_on_commit_callbacks(execute=True):
            ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
        [delivery] = deliveries(api, endpoint["id"])
        assert delivery["attemptLog"][0]["responseStatus"] == 302
        assert len(redirector.requests) == 1 and quiet_receiver.requests == []
        assert redirector.requests[0].headers["host"] == f"hooks.example.com:{redirector.port}"
    finally:
        redirector.stop()
