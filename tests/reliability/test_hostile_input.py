"""Hostile input: every write route of the URL conf is sent what a schema-driven fuzzer does not generate
(malformed and oversized bodies, NaN, Infinity, 1e400, 2**63, NUL characters, unpaired surrogates, invalid UTF-8,
duplicate keys, wrong content types, deep nesting) and must answer a 4xx, never a 5xx, storing nothing.

The routes come from the URL conf (tests/routes.py), so a new write route is swept without an entry here. Its
body is the one the isolation sweep sends it (tests/reliability/test_isolation.py `ROUTES`, which has an entry
for every route), with the records it names created in the caller's book; a path names real records, so each
request reaches the view. One request per (route, payload), all of a route's in one test, which fails listing
every payload that answered wrongly:

- a 5xx anywhere fails;
- body payloads (the body is not JSON the service reads) are a 4xx on every route, ingestion included;
- value payloads (the body is JSON, with values PostgreSQL cannot store) are a 400 naming where, except in
  `POST /v1/usage/record`, where the hostile record fails alone (`stored: false`) and its neighbour is recorded
  (spec §2; billing/record_validation.py);
- number payloads replace the route's numbers (and number strings) and are a 400 or a record's failure; a route
  whose body holds no number gets them in every value and must only not answer 5xx (a string field may read
  2**63 as the text "9223372036854775808");
- nothing of a refused request is stored: every product table reads the same before and after (a digest of
  its rows), and a recorded batch adds exactly its valid record.

Query parameters: every GET route is sent dates far in the future and past for each date parameter its
OpenAPI operation declares, and answers 400 naming the parameter.
"""
import json
import re
import uuid
from dataclasses import dataclass
from typing import Callable

import pytest
from django.apps import apps
from django.conf import settings
from django.db import connection
from drf_spectacular.generators import SchemaGenerator

from customers.models import UsageEvent
from tests.billing.invoice_support import WEBHOOK_SECRET, stripe_event, stripe_signature
from tests.reliability.test_isolation import ROUTES, Addressed, Fill, fill
from tests.reliability.world import PATH_RECORDS, World
from tests.routes import api_routes

pytestmark = pytest.mark.django_db

USAGE = "/v1/usage/record"
WEBHOOK = "/v1/webhooks/stripe"
WRITE_ROUTES = sorted({(method.upper(), path) for path, _, method in api_routes()
                       if method.upper() in ("POST", "PUT", "PATCH")}, key=lambda route: (route[1], route[0]))
# The tables whose rows a refused request must leave as they were: every table of the product apps but the
# global services catalog, which no API request writes (load_catalog does) and which is most of their rows.
PRODUCT_APPS = ("catalog", "customers", "matters", "billing", "controls", "portal")
NOT_WATCHED = {"catalog.serviceentry"}


# --------------------------------------------------------------------------- payloads

SENTINEL = "\x01hostile\x01"  # stands for the hostile value in a body before it is written as JSON text


def leaves(body, replace: Callable[[object], bool]):
    """`body` with every scalar for which `replace(value)` holds set to SENTINEL."""
    if isinstance(body, dict):
        return {key: leaves(value, replace) for key, value in body.items()}
    if isinstance(body, list):
        return [leaves(value, replace) for value in body]
    return SENTINEL if replace(body) else body


def with_key_everywhere(body, key: str):
    """`body` with `key: 1` added to each of its objects."""
    if isinstance(body, dict):
        return {**{k: with_key_everywhere(v, key) for k, v in body.items()}, key: 1}
    if isinstance(body, list):
        return [with_key_everywhere(value, key) for value in body]
    return body


def every_leaf(body):
    """Every scalar replaced; a body without one gets a `note` field to carry the value."""
    replaced = leaves(body, lambda value: True)
    return replaced if SENTINEL in json.dumps(replaced) else \
        ({**replaced, "note": SENTINEL} if isinstance(replaced, dict) else replaced + [{"note": SENTINEL}])


def is_number(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return isinstance(value, str) and re.fullmatch(r"-?\d+(\.\d+)?", value) is not None


def number_leaves(body):
    """The body's numbers (and number strings) replaced; None when it has none."""
    replaced = leaves(body, is_number)
    return replaced if SENTINEL in json.dumps(replaced) else None


def text(body) -> str:
    return json.dumps(body)  # ASCII: unpaired surrogates and NUL as JSON escapes


def substitute(body, literal: str) -> bytes:
    """The body as JSON text with each SENTINEL written as `literal` (JSON text, such as `NaN` or `1e400`)."""
    return text(body).replace(json.dumps(SENTINEL), literal).encode()


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@dataclass(frozen=True)
class Payload:
    name: str
    kind: str  # "body", "value" or "number" (see the module docstring)
    build: Callable[[object], tuple[bytes, str]]  # base body -> (raw bytes, content type)


JSON = "application/json"
CONTENT_TYPES = ("text/plain", "form-encoded", "multipart", "XML")
OVERSIZED = b'{"pad": "' + b"a" * (settings.REQUEST_BODY_MAX_BYTES + 1) + b'"}'

PAYLOADS = [
    # The body is not JSON the service reads: refused whole, on every route.
    Payload("malformed JSON", "body", lambda body: (text(body)[:-1].encode(), JSON)),
    Payload("NaN", "body", lambda body: (substitute(every_leaf(body), "NaN"), JSON)),
    Payload("Infinity", "body", lambda body: (substitute(every_leaf(body), "-Infinity"), JSON)),
    Payload("invalid UTF-8", "body", lambda body: (substitute(every_leaf(body), '"\xff\xfe"').replace(
        "\xff\xfe".encode(), b"\xff\xfe"), JSON)),
    Payload("duplicate keys", "body", lambda body: (
        text(body).replace("{", '{"dup": 1, "dup": 2, ', 1).encode() if "{" in text(body)
        else b'{"dup": 1, "dup": 2}', JSON)),
    Payload("nested 10,000 levels", "body", lambda body: (nested(10_000).encode(), JSON)),
    Payload("a JSON string, not an object", "body", lambda body: (b'"hello"', JSON)),
    Payload("over the size limit", "body", lambda body: (OVERSIZED, JSON)),
    Payload("text/plain", "body", lambda body: (text(body).encode(), "text/plain")),
    Payload("form-encoded", "body", lambda body: (b"name=x&agentId=y", "application/x-www-form-urlencoded")),
    Payload("multipart", "body", lambda body: (b"--b\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nx\r\n"
                                               b"--b--\r\n", "multipart/form-data; boundary=b")),
    Payload("XML", "body", lambda body: (b"<name>x</name>", "application/xml")),
    # JSON, with values PostgreSQL cannot store or the service cannot render: a 400 naming where.
    Payload("NUL in every string", "value", lambda body: (substitute(every_leaf(body), '"a\\u0000b"'), JSON)),
    Payload("lone surrogate in every string", "value", lambda body: (
        substitute(every_leaf(body), '"\\ud800"'), JSON)),
    Payload("NUL in a key", "value", lambda body: (text(with_key_everywhere(body, "ke\x00y")).encode(), JSON)),
    Payload("lone surrogate in a key", "value", lambda body: (
        text(with_key_everywhere(body, "\udfffkey")).encode(), JSON)),
    Payload("nested 100 levels", "value", lambda body: (substitute(every_leaf(body), nested(100)), JSON)),
    Payload("number of 1,001 digits", "value", lambda body: (substitute(every_leaf(body), "1e1000"), JSON)),
    # Longer than Python turns into an int: read as the decimal it spells, refused where it stands.
    Payload("integer of 5,000 digits", "value", lambda body: (substitute(every_leaf(body), "9" * 5000), JSON)),
    # Numbers beyond what a column holds.
    Payload("1e400", "number", lambda body: (substitute(number_leaves(body) or every_leaf(body), "1e400"), JSON)),
    Payload("2**63", "number", lambda body: (substitute(number_leaves(body) or every_leaf(body), str(2**63)),
                                              JSON)),
    Payload("-2**63 - 1", "number", lambda body: (
        substitute(number_leaves(body) or every_leaf(body), str(-2**63 - 1)), JSON)),
    Payload("1e-400", "number", lambda body: (substitute(number_leaves(body) or every_leaf(body), "1e-400"),
                                              JSON)),
]


# --------------------------------------------------------------------------- state

def product_tables() -> list[str]:
    return sorted(model._meta.db_table for app in PRODUCT_APPS for model in apps.get_app_config(app).get_models()
                  if not model._meta.proxy and model._meta.label_lower not in NOT_WATCHED)


def snapshot(tables) -> dict:
    """A digest of every row of each table: any insert, update or delete changes it."""
    sql = " UNION ALL ".join(
        f"SELECT '{table}', count(*), md5(coalesce(string_agg(t::text, '|' ORDER BY t::text), '')) FROM {table} t"
        for table in tables)
    with connection.cursor() as cursor:
        cursor.execute(sql)
        return {table: (count, digest) for table, count, digest in cursor.fetchall()}


def changed(before: dict, after: dict) -> list[str]:
    return [f"{table} ({before[table][0]} -> {after[table][0]} rows)" for table in before
            if before[table] != after[table]]


# --------------------------------------------------------------------------- the sweep

def usage_record(world, **fields) -> dict:
    return {"customerExternalId": world.customer.externalId, "agentCode": world.agent.agentCode,
            "signalName": world.signal.shortName, "model": world.service.canonical_name, "modelProvider": "worldai",
            "inputTokens": 10, "idempotencyKey": f"hostile-{uuid.uuid4().hex}", "metadata": {"note": "x"},
            **fields}


def base_body(method, path, world, client):
    entry = ROUTES.get((method, path))
    body = getattr(entry, "body", None)
    return fill(body, Fill(world, client.key.membership.user.email)) if body is not None else {}


def url_of(method, path, world) -> str:
    entry = ROUTES.get((method, path))
    records = entry.records if isinstance(entry, Addressed) else {}
    return path.format(**{name: "x" * 43 if name == "token" else world.record_id_of(records.get(name, PATH_RECORDS[name]))
                          for name in re.findall(r"{(\w+)}", path)})


def send(client, method, url, raw: bytes, content_type: str, *, signed: bool = False):
    extra = {"HTTP_STRIPE_SIGNATURE": stripe_signature(raw)} if signed else {}
    return client.generic(method, url, raw, content_type=content_type, **extra)


def judge(payload: Payload, path: str, resp, before: dict, after: dict, *, strict: bool, good_key=None) -> str | None:
    """What is wrong with this answer, or None."""
    status = resp.status_code
    if status >= 500:
        return f"{status} {resp.content[:200]!r}"
    if path == USAGE and payload.kind != "body":
        if status != 200:
            return f"{status} (a record's failure is data: 200) {resp.content[:200]!r}"
        body = resp.json()
        failed = body["results"]["failed"]
        if (body["successful"], body["failed"]) != (1, 1) or (failed[0]["index"], failed[0]["stored"]) != (1, False):
            return f"not one valid record stored and the hostile one failed alone: {body}"
        stored = list(UsageEvent.objects.filter(idempotency_key=good_key).values_list("idempotency_key", flat=True))
        events = (after.get(UsageEvent._meta.db_table), before.get(UsageEvent._meta.db_table))
        if stored != [good_key] or events[0][0] != events[1][0] + 1:
            return f"the batch did not store exactly its valid record: {stored}, events {events}"
        return None
    if path == WEBHOOK and status == 200 and resp.json()["handled"] is False:
        pass  # acknowledged and ignored: Stripe would retry an error for days
    elif strict and not 400 <= status < 500:
        return f"{status}, not a 4xx: {resp.content[:200]!r}"
    if 400 <= status < 500 or not strict:
        if 400 <= status < 500 and changed(before, after):
            return f"{status} but stored: {changed(before, after)}"
    if payload.kind == "value" and status == 400:
        message = resp.json()["message"]
        first = message[0] if isinstance(message, list) else message
        if not re.match(r"[\w\[\].\\-]*: |The body ", first) and path != WEBHOOK:
            return f"400 that does not name where: {message}"
    return None


@pytest.mark.parametrize("method, path", WRITE_ROUTES, ids=[f"{m} {p}" for m, p in WRITE_ROUTES])
def test_hostile_bodies_are_refused_and_store_nothing(method, path, client_for, settings):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    client = client_for()
    world = World(client)
    url = url_of(method, path, world)
    tables = product_tables()
    body = base_body(method, path, world, client)
    if path == WEBHOOK:
        body = json.loads(stripe_event(world.invoice.id, 100))
    problems = []
    for payload in PAYLOADS:
        good_key = None
        sent = body
        if path == USAGE:
            good = usage_record(world)
            good_key = good["idempotencyKey"]
            sent = {"records": [good, usage_record(world)]}
        if path == USAGE and payload.kind != "body":
            hostile_only = payload.build(sent["records"][1])[0].decode(errors="surrogateescape")
            raw = (f'{{"records": [{text(sent["records"][0])}, {hostile_only}]}}'
                   .encode(errors="surrogateescape"))
            content_type = JSON
        else:
            raw, content_type = payload.build(sent)
        strict = payload.kind != "number" or number_leaves(sent) is not None
        if path == WEBHOOK and payload.name in CONTENT_TYPES:
            strict = False  # it reads its raw body: the signature, not the header, vouches for the bytes
        before = snapshot(tables)
        resp = send(client, method, url, raw, content_type, signed=path == WEBHOOK)
        problem = judge(payload, path, resp, before, snapshot(tables), strict=strict, good_key=good_key)
        if problem:
            problems.append(f"{payload.name}: {problem}")
    assert not problems, f"{method} {path}:\n" + "\n".join(problems)


# --------------------------------------------------------------------------- dates in query parameters

def date_parameters() -> list[tuple[str, str]]:
    """(path, parameter) for every query parameter of a GET operation that is a date or an instant."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, operations in schema["paths"].items():
        for parameter in operations.get("get", {}).get("parameters", []):
            name = parameter["name"]
            if parameter["in"] == "query" and (parameter.get("schema", {}).get("format") in ("date", "date-time")
                                               or re.search(r"(^|[a-z])(Date|date)$|^date|^(from|to|since|until)$",
                                                            name)):
                found.append((path, name))
    return sorted(found)


DATE_PARAMETERS = date_parameters()


def test_the_date_parameters_found_include_the_lists_that_overflowed():
    assert {("/v1/invoices", "endDate"), ("/v1/events", "endDate"),
            ("/v1/matters/audit", "endDate")} <= set(DATE_PARAMETERS)


@pytest.mark.parametrize("path, parameter", DATE_PARAMETERS, ids=[f"{p}?{n}" for p, n in DATE_PARAMETERS])
def test_a_date_out_of_range_in_a_query_parameter_is_400_naming_it(path, parameter, api):
    world = World(api)
    url = url_of("GET", path, world)
    problems = []
    for value in ("9999-12-31", "9999-12-31T23:59:59Z", "0001-01-01", "0001-01-01T00:00:00+01:00", "99999-01-01"):
        resp = api.get(url, {parameter: value})
        message = resp.json().get("message") if resp.status_code == 400 else None
        messages = message if isinstance(message, list) else [message]
        if resp.status_code != 400 or not any(str(line).startswith(f"{parameter}:") for line in messages):
            problems.append(f"{value}: {resp.status_code} {resp.content[:200]!r}")
    assert not problems, f"GET {path}?{parameter}=...:\n" + "\n".join(problems)
