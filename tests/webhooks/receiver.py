"""A real HTTP receiver on 127.0.0.1 (http.server in a thread) that records every request and answers as told:
a queue of statuses (then 200), a delay, a redirect. Deliveries are verified with the Standard Webhooks
reference library (`standardwebhooks`), never with the service's own code."""
import json
import threading
import time
from dataclasses import dataclass
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks import Webhook


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]

    def verified(self, secret: str) -> dict:
        """The body, after the reference library checked its signature with `secret` (raises otherwise)."""
        Webhook(secret).verify(self.body, self.headers, json_parse=False)
        return json.loads(self.body, parse_float=Decimal)


class Receiver:
    def __init__(self):
        self.requests: list[Received] = []
        self.statuses: list[int] = []  # answered in order, then 200
        self.delay_seconds = 0.0
        self.redirect_to: str | None = None
        self._server = None
        self.port = None
        self.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                if receiver.delay_seconds:
                    time.sleep(receiver.delay_seconds)
                if receiver.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", receiver.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                answer = (b"ok " * 1000) if status < 300 else b"receiver error"
                self.send_response(status)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                try:
                    self.wfile.write(answer)
                except OSError:  # the client stopped reading (it keeps only the first bytes)
                    pass

            def log_message(self, *args):
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(("127.0.0.1", self.port or 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        """Down: the port refuses connections until `start()` again."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
