"""Where a delivery may go, and the POST itself, safe by default.

- A URL is `http` or `https` with a host and no credentials; a live book's endpoints are `https` only.
- The host is resolved on every attempt and every address it resolves to must be public: private, loopback,
  link-local, shared, multicast, reserved and unspecified addresses are refused unless
  WEBHOOKS_ALLOW_PRIVATE_URLS (development and tests). The connection goes to the address that was checked
  (never resolved a second time), with the URL's host name in `Host` and in TLS (SNI and certificate check).
- Redirects are never followed (a 3xx is an answer that is not 2xx); at most RESPONSE_KEEP_BYTES of the answer
  are read; the whole attempt is bounded by WEBHOOKS_TIMEOUT_SECONDS.
"""
import http.client
import io
import ipaddress
import socket
import ssl
import time
from concurrent.futures import ThreadPoolExecutor, TimeoutError as FuturesTimeout
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from django.conf import settings

RESPONSE_KEEP_BYTES = 1024
RESOLVE_SECONDS = 2  # how long creating an endpoint waits for its host name to resolve
# The lookups of endpoint creations, a few at a time: a resolver that hangs holds these threads, never more (a
# creation whose lookup waits behind them past RESOLVE_SECONDS is accepted, its name judged at each attempt).
_RESOLVER = ThreadPoolExecutor(max_workers=2, thread_name_prefix="webhook-resolve")
USER_AGENT = "agentbilling-webhooks/1"


class TargetRefused(Exception):
    """The URL, or an address its host resolves to, is not one a delivery may reach."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str  # path and query, as sent in the request line


def url_problems(url: str, *, livemode: bool) -> list[str]:
    """What is wrong with `url` as an endpoint of a book (empty: nothing). Host names are judged when
    resolved, at each attempt; an address written in the URL is judged here already."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number or out of range
    except ValueError:
        return ["Must be an http or https URL with a valid port."]
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ["Must be an http or https URL with a host."]
    if parts.username is not None or parts.password is not None:
        return ["Must not carry a user name or password; authenticate deliveries by their signature."]
    if parts.fragment:
        return ["Must not have a #fragment."]
    try:
        _ascii_host(parts.hostname)
    except UnicodeError:
        return [f"{parts.hostname} is not a valid host name."]
    hostname = parts.hostname.rstrip(".").lower()
    if livemode and parts.scheme != "https" and not (settings.WEBHOOKS_ALLOW_PRIVATE_URLS and _private(hostname)):
        # Live events cross the internet signed but not hidden. Where private targets are allowed (a development or
        # in-house deployment, the contract's one switch for targets), plain http reaches those targets alone.
        return ["Must be https for a live book (with WEBHOOKS_ALLOW_PRIVATE_URLS=1, http reaches private and "
                "loopback addresses)."]
    if (hostname == "localhost" or hostname.endswith(".localhost")) and not settings.WEBHOOKS_ALLOW_PRIVATE_URLS:
        # Always the loopback interface (RFC 6761): refused now, as 127.0.0.1 is, not at every attempt.
        return [f"{parts.hostname} is this machine (a loopback name); webhook endpoints must be public "
                "(WEBHOOKS_ALLOW_PRIVATE_URLS=1 allows such targets in development)."]
    address = _written_address(parts.hostname)
    if address is None:
        return []
    problem = address_problem(address)
    return [problem] if problem else []


def _written_address(hostname: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """The address a host written as one stands for, None for a name. The resolver also takes IPv4's older
    spellings (`127.1`, `2130706433`, `0x7f000001`, `017700000001`), so they are read as it reads them."""
    try:
        return ipaddress.ip_address(hostname.strip("[]"))
    except ValueError:
        pass
    if hostname and all(character in "0123456789abcdefx." for character in hostname.lower()):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(hostname))
        except OSError:
            return None
    return None


def _private(hostname: str) -> bool:
    """A loopback name, or an address written in the URL that is not public."""
    if hostname == "localhost" or hostname.endswith(".localhost"):
        return True
    address = _written_address(hostname)
    if address is None:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return not address.is_global


def address_problem(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    if settings.WEBHOOKS_ALLOW_PRIVATE_URLS:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    for kind, flag in (("loopback", address.is_loopback), ("link-local", address.is_link_local),
                       ("unspecified", address.is_unspecified), ("multicast", address.is_multicast),
                       ("private", address.is_private), ("reserved", address.is_reserved)):
        if flag:
            return (f"{address} is a {kind} address; webhook endpoints must be public "
                    "(WEBHOOKS_ALLOW_PRIVATE_URLS=1 allows such targets in development).")
    if not address.is_global:
        return f"{address} is not a public address; webhook endpoints must be public."
    return None


# Printable ASCII, kept as written in a request line; anything else in a path or query is percent-encoded.
_REQUEST_LINE_SAFE = "".join(chr(code) for code in range(0x21, 0x7F))


def _ascii_host(hostname: str) -> str:
    """The host as DNS, TLS and the Host header take it: an internationalized name in its ASCII (IDNA) form
    (`пример.рф` is `xn--e1afmkfd.xn--p1ai`); UnicodeError for a name that has none, or a label DNS cannot carry
    (empty, `a..com`, or longer than 63 characters: every attempt failed on it)."""
    if hostname.isascii():
        if _written_address(hostname) is None and not hostname.startswith("["):
            hostname.encode("idna")  # checks each label's length, as the resolver would
        return hostname
    return hostname.encode("idna").decode("ascii")


def target_of(url: str) -> Target:
    """Where an attempt goes, every part as the wire takes it (a name or path beyond ASCII was written into the
    request as it is, and every attempt failed on it)."""
    parts = urlsplit(url)
    default_port = 443 if parts.scheme == "https" else 80
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(parts.scheme, _ascii_host(parts.hostname), parts.port or default_port,
                  quote(path, safe=_REQUEST_LINE_SAFE))


def resolved_problems(url: str) -> list[str]:
    """At an endpoint's creation or a new URL (after `url_problems` found nothing): a host name that resolves now to
    an address a delivery may not reach (`127.0.0.1.nip.io`) is refused now, as the address written in a URL is,
    rather than accepted and failing at every attempt. A name that does not resolve (yet) is accepted; every name is
    judged again at each attempt, since what it resolves to can change."""
    if settings.WEBHOOKS_ALLOW_PRIVATE_URLS or _written_address(urlsplit(url).hostname) is not None:
        return []
    target = target_of(url)
    # The system resolver has no timeout of its own: a name not answered within RESOLVE_SECONDS is accepted, as one
    # that does not resolve is (the attempts judge it).
    lookup = _RESOLVER.submit(socket.getaddrinfo, target.host, target.port, type=socket.SOCK_STREAM)
    try:
        infos = lookup.result(timeout=RESOLVE_SECONDS)
    except (socket.gaierror, UnicodeError, FuturesTimeout):
        return []
    refusal = _refused_address(target.host, _addresses(infos))
    return [refusal] if refusal else []


def _addresses(infos) -> list[str]:
    return list(dict.fromkeys(info[4][0] for info in infos))


def _refused_address(host: str, addresses: list[str]) -> str | None:
    """Why `host` may not be reached: the first address it resolved to that `address_problem` refuses."""
    for text in addresses:
        problem = address_problem(ipaddress.ip_address(text.split("%")[0]))
        if problem:
            return f"{host} resolves to {text}: {problem}" if text != host else problem
    return None


def resolve_checked(host: str, port: int) -> str:
    """The address to connect to: every address `host` resolves to must pass `address_problem`."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise TargetRefused(f"{host} does not resolve ({exc.strerror}).") from None
    except UnicodeError:
        raise TargetRefused(f"{host} is not a valid host name.") from None
    addresses = _addresses(infos)
    refusal = _refused_address(host, addresses)
    if refusal:
        raise TargetRefused(refusal)
    if not addresses:
        raise TargetRefused(f"{host} does not resolve.")
    return addresses[0]


@dataclass(frozen=True)
class Answer:
    status: int
    body_head: str
    latency_ms: int


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float) -> Answer:
    """POST `body` to `url` (checked as the module says); raises TargetRefused, or OSError / HTTPException
    (no answer: refused, reset, timed out...)."""
    target = target_of(url)
    started = time.monotonic()
    deadline = started + timeout
    address = resolve_checked(target.host, target.port)
    sock = socket.create_connection((address, target.port), timeout=_left(deadline))
    try:
        if target.scheme == "https":
            sock.settimeout(_left(deadline))  # each step gets what is left of the attempt, not the whole timeout
            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=target.host)
        connection = http.client.HTTPConnection(target.host, target.port, timeout=_left(deadline))
        connection.sock = sock  # already connected, to the checked address
        host_header = target.host if ":" not in target.host else f"[{target.host}]"
        if target.port != (443 if target.scheme == "https" else 80):
            host_header += f":{target.port}"
        connection.putrequest("POST", target.path, skip_host=True, skip_accept_encoding=True)
        for name, value in {"Host": host_header, "User-Agent": USER_AGENT, "Content-Type": "application/json",
                            "Content-Length": str(len(body)), **headers}.items():
            connection.putheader(name, value)
        sock.settimeout(_left(deadline))
        connection.endheaders(body)
        connection.sock = _ReadsByDeadline(sock, deadline)
        response = connection.getresponse()
        head = response.read(RESPONSE_KEEP_BYTES)
        latency_ms = int((time.monotonic() - started) * 1000)
        return Answer(response.status, head.decode("utf-8", errors="replace"), latency_ms)
    finally:
        sock.close()


class _ReadsByDeadline:
    """The connected socket as http.client reads the answer from it, each read waiting at most what is left until
    the attempt's deadline. http.client reads the status line and the headers in many small reads, and a socket
    timeout set once bounds each of them, not their sum: a receiver sending a byte every few seconds held an
    attempt open without end."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str = "rb", *args, **kwargs) -> io.BufferedReader:
        return io.BufferedReader(_BoundedReads(self._sock, self._deadline))

    def close(self) -> None:
        """Nothing: http.client closes its connection once an answer says it closes, before the body is read from
        it (a socket's own file keeps the socket open until then); `post` closes the socket when it is done."""

    def __getattr__(self, name):
        return getattr(self._sock, name)


class _BoundedReads(io.RawIOBase):
    def __init__(self, sock: socket.socket, deadline: float):
        super().__init__()
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self._sock.settimeout(_left(self._deadline))
        return self._sock.recv_into(buffer)


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("timed out")
    return left
