"""A local HTTP server in a thread for the client's tests: it answers canned responses (recorded provider
bodies for the OpenAI and Anthropic wrappers) or stands in front of the live service and fails some
requests on purpose (5xx, a dropped connection) before passing the rest through."""
import http.client
import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Exchange:
    """One request the fake server received."""

    def __init__(self, method: str, path: str, headers: dict, body: bytes):
        self.method, self.path, self.headers, self.body = method, path, headers, body

    def json(self):
        return json.loads(self.body)


class FakeServer:
    """`answers(exchange) -> (status, headers, body bytes)` or None to forward to `upstream`, or the string
    "drop" to close the connection without answering."""

    def __init__(self, answers, upstream: str | None = None):
        self.answers, self.upstream = answers, upstream
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                exchange = Exchange(self.command, self.path, dict(self.headers), self.rfile.read(length))
                with server._lock:
                    server.exchanges.append(exchange)
                answer = server.answers(exchange)
                if answer == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                if answer is None:
                    answer = server._forward(exchange)
                status, headers, body = answer
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PATCH = do_DELETE = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _forward(self, exchange: Exchange):
        target = urllib.parse.urlsplit(self.upstream)
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
        headers = {name: value for name, value in exchange.headers.items() if name.lower() != "host"}
        connection.request(exchange.method, exchange.path, body=exchange.body or None, headers=headers)
        response = connection.getresponse()
        body = response.read()
        keep = {"Content-Type", "Retry-After", "X-Total-Count"}
        answer = (response.status, {k: v for k, v in response.getheaders() if k in keep}, body)
        connection.close()
        return answer

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._server.shutdown()
        self._server.server_close()


def json_answer(body, status: int = 200, headers: dict | None = None):
    return status, {"Content-Type": "application/json", **(headers or {})}, json.dumps(body).encode()


def sse_answer(events: list[tuple[str | None, dict | str]]):
    """A text/event-stream body: (event name or None, data) pairs."""
    lines = []
    for name, data in events:
        if name:
            lines.append(f"event: {name}")
        lines.append("data: " + (data if isinstance(data, str) else json.dumps(data)))
        lines.append("")
    return 200, {"Content-Type": "text/event-stream"}, ("\n".join(lines) + "\n").encode()
