"""Chunked request bodies (`Transfer-Encoding: chunked`): read whole and handed to Django with their length, as
gunicorn ends the stream where such a body ends (core/chunked_bodies.py). Through the WSGI application itself,
as a server calls it; tests/test_embedded_database.py sends one through gunicorn."""
import codecs
import io
import json

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from core.chunked_bodies import SURROGATE_CODECS, ChunkedBodies
from customers.models import Customer
from tests.factories import CustomerFactory

pytestmark = pytest.mark.django_db

APPLICATION = ChunkedBodies(WSGIHandler())


def call(method: str, path: str, key: str, body: bytes, *, terminated=True, length=False) -> tuple[str, dict]:
    environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "SERVER_NAME": "testserver", "SERVER_PORT": "80",
               "HTTP_HOST": "testserver", "wsgi.url_scheme": "http", "SERVER_PROTOCOL": "HTTP/1.1",
               "REMOTE_ADDR": "127.0.0.1", "wsgi.errors": io.StringIO(), "wsgi.input": io.BytesIO(body),
               "CONTENT_TYPE": "application/json", "HTTP_X_API_KEY": key, "HTTP_TRANSFER_ENCODING": "chunked"}
    if terminated:
        environ["wsgi.input_terminated"] = True
    if length:
        environ["CONTENT_LENGTH"] = str(len(body))
    answered = []
    content = b"".join(APPLICATION(environ, lambda status, headers, *_: answered.append(status)))
    return answered[0], json.loads(content)


@pytest.fixture(autouse=True)
def connection_kept():
    """As Django's test client does: a request must not close the test's connection, which holds its transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def customer(book):
    return CustomerFactory(book=book, name="Before")


def test_a_chunked_patch_changes_what_it_says(api, customer):
    status, body = call("PATCH", f"/v1/customers/{customer.id}", api.raw_key, b'{"name": "After"}')
    assert status.startswith("200") and body["name"] == "After"
    assert Customer.objects.get(pk=customer.pk).name == "After"


def test_a_chunked_batch_of_usage_is_recorded(api, customer):
    batch = {"records": [{"customerExternalId": customer.external_id, "agentCode": "bot", "signalName": "calls",
                          "model": "in-house-model", "modelProvider": "in-house", "quantity": 2}]}
    status, body = call("POST", "/v1/usage/record", api.raw_key, json.dumps(batch).encode())
    assert status.startswith("200") and body["processed"] == 1 and body["failed"] == 1  # stored, no price
    assert body["results"]["failed"][0]["stored"] is True


def test_a_chunked_body_beyond_the_limit_is_a_413_and_changes_nothing(api, customer, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64
    status, body = call("PATCH", f"/v1/customers/{customer.id}", api.raw_key,
                        json.dumps({"name": "After" + " " * 100}).encode())
    assert status.startswith("413") and body["code"] == "request_too_large"
    assert Customer.objects.get(pk=customer.pk).name == "Before"


def test_a_server_that_does_not_end_the_stream_gets_a_411(api, customer):
    status, body = call("PATCH", f"/v1/customers/{customer.id}", api.raw_key, b'{"name": "After"}', terminated=False)
    assert status.startswith("411") and body["code"] == "length_required"
    assert "Content-Length" in body["message"]
    assert Customer.objects.get(pk=customer.pk).name == "Before"


def test_a_chunked_body_with_a_content_length_too_is_a_400(api, customer):
    """HTTP forbids both (RFC 9112 6.3); gunicorn refuses such a request itself, other servers may pass it on."""
    status, body = call("PATCH", f"/v1/customers/{customer.id}", api.raw_key, b'{"name": "After"}', length=True)
    assert status.startswith("400") and body["code"] == "ambiguous_body_length"
    assert Customer.objects.get(pk=customer.pk).name == "Before"


def test_a_refused_chunked_body_is_answered_inside_the_application_with_its_request_id(api, customer, settings):
    """The refusal goes through the middleware like any answer: it carries the request's id."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 8
    headers = {}
    environ = {"REQUEST_METHOD": "PATCH", "PATH_INFO": f"/v1/customers/{customer.id}", "SERVER_NAME": "testserver",
               "SERVER_PORT": "80", "HTTP_HOST": "testserver", "wsgi.url_scheme": "http", "wsgi.errors": io.StringIO(),
               "wsgi.input": io.BytesIO(b'{"name": "After"}'), "wsgi.input_terminated": True,
               "HTTP_TRANSFER_ENCODING": "chunked", "HTTP_X_API_KEY": api.raw_key, "REMOTE_ADDR": "127.0.0.1"}
    b"".join(APPLICATION(environ, lambda status, pairs, *_: headers.update(pairs, status=status)))
    assert headers["status"].startswith("413") and headers.get("X-Request-ID")


@pytest.mark.parametrize("charset", ["base64", "hex", "rot13", "zlib", '"base64"', "punycode", "undefined",
                                     "BASE64", "utf-8; charset*=utf-8''base64"])
def test_a_charset_that_is_not_a_text_encoding_is_a_400_naming_it(api, customer, charset):
    # Django takes any charset Python can look up (`charset*=` too), and decoding the query string with one of these
    # raised while it built the request, before any middleware: a 500 on every route.
    def send(method: str, path: str, query: str, body: bytes, content_type: str) -> tuple[str, dict]:
        environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "QUERY_STRING": query, "SERVER_NAME": "testserver",
                   "SERVER_PORT": "80", "HTTP_HOST": "testserver", "wsgi.url_scheme": "http",
                   "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1", "wsgi.errors": io.StringIO(),
                   "wsgi.input": io.BytesIO(body), "CONTENT_LENGTH": str(len(body)), "CONTENT_TYPE": content_type,
                   "HTTP_X_API_KEY": api.raw_key}
        answered = []
        content = b"".join(APPLICATION(environ, lambda status, headers, *_: answered.append(status)))
        return answered[0], json.loads(content)

    status, body = send("GET", "/v1/customers", "limit=5", b"", f"application/json; charset={charset}")
    assert status.startswith("400") and body["code"] == "unsupported_charset", body
    assert body["message"].startswith("Content-Type:")
    status, body = send("PATCH", f"/v1/customers/{customer.pk}", "", b'{"name": "After"}',
                        f"application/json; charset={charset}")
    assert status.startswith("400") and body["code"] == "unsupported_charset"
    customer.refresh_from_db()
    assert customer.name == "Before"
    status, body = send("GET", "/v1/customers", "limit=5", b"", "application/json; charset=utf-8")
    assert status.startswith("200") and len(body) == 1
    status, _ = send("GET", "/v1/customers", "limit=5", b"", "application/json; charset=no-such-codec")
    assert status.startswith("200")  # a name no codec has is ignored, as Django ignores it


@pytest.mark.parametrize(("charset", "query"), [("utf-7", "search=%2B2AA-"), ("UTF7", "search=%2B2AA-"),
                                                ("unicode_escape", "search=%5Cud800"),
                                                ("raw-unicode-escape", "externalId=%5CU0000dc00")])
def test_a_charset_that_decodes_to_unpaired_surrogates_is_a_400(api, customer, charset, query):
    # A query parameter decoded with one of these reached a filter as '\ud800', which the driver cannot send: a 500.
    environ = {"REQUEST_METHOD": "GET", "PATH_INFO": "/v1/customers", "QUERY_STRING": query, "SERVER_NAME": "testserver",
               "SERVER_PORT": "80", "HTTP_HOST": "testserver", "wsgi.url_scheme": "http", "SERVER_PROTOCOL": "HTTP/1.1",
               "REMOTE_ADDR": "127.0.0.1", "wsgi.errors": io.StringIO(), "wsgi.input": io.BytesIO(b""),
               "CONTENT_LENGTH": "0", "CONTENT_TYPE": f"application/json; charset={charset}",
               "HTTP_X_API_KEY": api.raw_key}
    answered = []
    body = json.loads(b"".join(APPLICATION(environ, lambda status, headers, *_: answered.append(status))))
    assert answered[0].startswith("400") and body["code"] == "unsupported_charset", body


def test_the_surrogate_codecs_are_every_codec_that_decodes_bytes_to_a_surrogate():
    # The list is what decoding such bytes with every codec Python has finds; a new codec that does shows here.
    import encodings
    import encodings.aliases
    import pkgutil
    import re

    names = set(encodings.aliases.aliases.values()) | {module.name for module in pkgutil.iter_modules(encodings.__path__)}
    samples = [b"+2AA-", b"\\ud800", b"\\U0000d800", b"\xed\xa0\x80", b"\x00\xd8", b"\xd8\x00", b"\x00\x00\xd8\x00"]
    found = set()
    for name in names:
        try:
            codec = codecs.lookup(name)
        except LookupError:
            continue
        for sample in samples:
            try:
                text = sample.decode(codec.name, "replace")
            except Exception:
                continue
            if isinstance(text, str) and re.search("[\ud800-\udfff]", text):
                found.add(codec.name)
    assert found == SURROGATE_CODECS
