"""The usage batch's fast path (billing/record_decoding.py) against the full parser and rules it stands in for.

The property: for any body, the fast path either gives up (None, and the full path runs as before) or gives exactly
the drafts the full path gives, value for value and type for type (compared by `repr`, so `Decimal('1.50')` is not
`Decimal('1.5')` and `True` is not `1`). It never takes a batch the full path would refuse or answer otherwise.
"""
import io
import json
from datetime import UTC, datetime
from decimal import Decimal

import orjson
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from rest_framework.exceptions import ParseError

from billing.record_decoding import UsageBatchParser, _Record, _Service, batch_decoded, drafts_decoded
from billing.record_validation import (RECORD_FIELDS, SERVICE_FIELDS, InvalidRecord, check_request_shape,
                                       validate_record)
from core import exact_json
from core.errors import ApiError
from customers.models import UsageEvent

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _full(raw: bytes):
    """What the full path makes of a body: its drafts and failures, or the 400 it raises."""
    try:
        records = check_request_shape(exact_json.loads(raw.decode()))  # UnicodeDecodeError is a ValueError
    except (ValueError, RecursionError, ApiError) as refused:
        return refused
    return [validate_record(index, record, now=NOW) for index, record in enumerate(records)]


def _fast(raw: bytes):
    decoded = batch_decoded(raw, lambda: None)
    return None if decoded is None else drafts_decoded(decoded, now=NOW)


def _assert_fast_agrees(raw: bytes) -> bool:
    """The property; True when the fast path took the batch."""
    fast = _fast(raw)
    if fast is None:
        return False
    full = _full(raw)
    assert isinstance(full, list) and not any(isinstance(item, InvalidRecord) for item in full), (raw, full)
    assert repr(fast) == repr(full), raw
    return True


# --------------------------------------------------------------------------- bodies written by hand, pair by pair
# An object is a list of (key, value) pairs, so that a key can be written twice; the writer picks the separators.

class Obj(list):
    pass


def _write(value, *, colon: str, comma: str, ensure_ascii: bool) -> str:
    if isinstance(value, dict):
        value = Obj(value.items())
    if isinstance(value, Obj):
        return "{" + comma.join(f"{json.dumps(key, ensure_ascii=ensure_ascii)}{colon}"
                                f"{_write(item, colon=colon, comma=comma, ensure_ascii=ensure_ascii)}"
                                for key, item in value) + "}"
    if isinstance(value, list):
        return "[" + comma.join(_write(item, colon=colon, comma=comma, ensure_ascii=ensure_ascii)
                                for item in value) + "]"
    if isinstance(value, Decimal):
        return str(value)
    return json.dumps(value, ensure_ascii=ensure_ascii)


# Each field mostly valid (a batch reaches the fast path only when every record is), sometimes anything.
valid_names = st.sampled_from(["acme", "agent-1", "support", "gpt-4o", "openai", "claude-3-5-sonnet-20241022",
                               "anthropic", "key-1", "Acme Corp", "GPT-4O", "x" * 255])
odd_names = st.one_of(st.sampled_from(["", " ", " padded ", "x" * 256, "Zürich", "nul\x00", "tab\there", "\ud800",
                                       "quote\": inside", "emoji 😀", "back\\slash"]), st.text(max_size=12))
numbers = st.one_of(
    st.integers(min_value=-5, max_value=5),
    st.sampled_from([0, 1, 999, 10**9, 10**9 + 1, 10**12, 10**12 + 1, 2**64, -(2**63) - 1, 10**21, 10**21 + 1,
                     10**30, 10**308, 10**309]),
    st.sampled_from([Decimal(text) for text in ("1.50", "1.5", "0.0", "-0.0", "1e3", "1E+3", "2.5e-3", "1e-30",
                                                 "1e-31", "1000000000.1", "1e9", "1e21", "1e+22", "1e308",
                                                 "1.7976931348623157e308", "1.7976931348623158e308",
                                                 "123.456789012345678901234567")]),
    st.decimals(allow_nan=False, allow_infinity=False, places=None, min_value=-10**6, max_value=10**6),
)
odd = st.one_of(odd_names, numbers, st.booleans(), st.none(), st.lists(st.integers(), max_size=2))
scalars = st.one_of(valid_names, odd_names, numbers, st.booleans(), st.none())
metadata_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.lists(st.tuples(st.sampled_from(["a", "b", "note", "a b", "ключ"]), inner), max_size=3).map(Obj),
), max_leaves=6)
valid_dates = st.one_of(st.sampled_from(["2026-01-01T00:00:00Z", "2026-11-29", "2026-11-29T10:00:00+02:00",
                                         "2026-11-29 10:00:00", "2026-11-29T10:00:00.123456Z"]),
                        st.datetimes(timezones=st.just(UTC)).map(lambda instant: instant.isoformat()))
VALID = {
    "usageDate": valid_dates,
    "environment": st.sampled_from(["production", "staging", "development", "testing", None]),
    "serviceTier": st.sampled_from(["standard", "batch", "flex", "priority", None]),
    "metadata": st.one_of(st.none(), st.dictionaries(st.sampled_from(["a", "b", "run", "x y"]), metadata_values,
                                                     max_size=3).map(lambda d: Obj(d.items())), metadata_values),
    "quantity": st.one_of(st.integers(0, 1000), st.decimals(min_value=0, max_value=10**6, places=4), st.none(),
                          st.sampled_from([Decimal("2.50"), Decimal("1E+3"), Decimal("1e-30")])),
}
TOKEN_NAMES = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "cacheWrite1hTokens")


def _valid(name: str):
    if name in ("customerExternalId", "agentCode", "signalName", "model", "modelProvider", "idempotencyKey"):
        return valid_names
    if name in TOKEN_NAMES:
        return st.one_of(st.integers(0, 10**6), st.none())
    if name == "services":
        return st.lists(service_objects(), min_size=1, max_size=3)
    return VALID.get(name, odd)


def _field(name: str):
    # One in ten anything (hypothesis draws small integers most often: 7 rather than 0).
    return st.integers(0, 9).flatmap(lambda pick: odd if pick == 7 else _valid(name))


SERVICE_NAMES = ["model", "modelProvider", *TOKEN_NAMES, "serviceTier", "quantity"]


@st.composite
def service_objects(draw):
    pairs = [("model", draw(_field("model"))), ("modelProvider", draw(_field("modelProvider")))]
    for name in draw(st.lists(st.sampled_from([*SERVICE_NAMES[2:], *SERVICE_NAMES[2:], "inputToken"]),
                              max_size=4, unique=True)):
        pairs.append((name, draw(_field(name))))
    return Obj(draw(st.permutations(pairs)))


RECORD_EXTRAS = [name for name in sorted(RECORD_FIELDS) if name not in
                 ("customerExternalId", "agentCode", "signalName", "model", "modelProvider", "services")]


@st.composite
def records(draw):
    pairs = [(name, draw(_field(name))) for name in ("customerExternalId", "agentCode", "signalName")]
    single = draw(st.booleans())
    if single:
        pairs += [("model", draw(_field("model"))), ("modelProvider", draw(_field("modelProvider")))]
    else:
        pairs.append(("services", draw(_field("services"))))
    extras = [name for name in RECORD_EXTRAS if single or name not in TOKEN_NAMES + ("serviceTier",)]
    chosen = draw(st.lists(st.sampled_from(extras), max_size=6, unique=True))
    if draw(st.integers(0, 9)) == 7:  # sometimes a field the record does not take, or the other shape's
        chosen.append(draw(st.sampled_from(["timestamp", "promptTokens", "inputToken", "services", "inputTokens"])))
    for name in chosen:
        pairs.append((name, draw(_field(name))))
    pairs = draw(st.permutations(pairs))
    if draw(st.integers(0, 9)) == 7:
        pairs = [*pairs, draw(st.sampled_from(pairs))]  # a key written twice, with the same value
    return Obj(pairs)


@st.composite
def bodies(draw):
    batch = Obj([("records", draw(st.lists(records(), min_size=1, max_size=4)))])
    if draw(st.integers(0, 19)) == 7:
        batch.append(("other", 1))
    colon, comma = draw(st.sampled_from([(":", ","), (": ", ", "), (":", ","), (": ", ", "), (" : ", " , "),
                                         (":", ",\n  ")]))
    ensure_ascii = draw(st.integers(0, 4)) == 3
    return _write(batch, colon=colon, comma=comma, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass")


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies())
def test_the_fast_path_gives_the_full_paths_drafts_or_gives_up(raw):
    _assert_fast_agrees(raw)


# --------------------------------------------------------------------------- the batches it exists for, and its limits

def _plain_record(index: int, **fields) -> dict:
    return {"customerExternalId": f"customer-{index}", "agentCode": "agent", "signalName": "signal",
            "model": "gpt-4o", "modelProvider": "openai", "inputTokens": 1000 + index, "outputTokens": 200,
            "quantity": 1 + index % 3, "usageDate": "2026-11-01T00:00:00Z", "idempotencyKey": f"key-{index}",
            "metadata": {"run": index, "ok": True}, **fields}


NAME_EDGES = ["a", " padded ", "padded ", "\tx", "x" * 255, "x" * 256, " " + "x" * 255, "", " ", "Zürich", "nul\x00",
              "tab\there", "\ud800", "😀", None, 1, True, []]
EDGES = {
    **{name: NAME_EDGES for name in ("customerExternalId", "agentCode", "signalName", "idempotencyKey", "model",
                                      "modelProvider")},
    **{name: [0, 1, 10**12, 10**12 + 1, -1, Decimal("1.0"), Decimal("1e3"), True, "5", None, 2**64]
       for name in TOKEN_NAMES},
    "quantity": [0, 1, Decimal("0.5"), Decimal("1.50"), Decimal("1e-30"), Decimal("1e-31"), Decimal("1e-33"), 10**9,
                 10**9 + 1, Decimal("1000000000.0"), Decimal("1000000000.1"), 10**21, 10**21 + 1, Decimal("1e21"),
                 Decimal("1000000000000000000000.5"), 10**308, 10**309, Decimal("1.7976931348623157e308"),
                 Decimal("1.7976931348623158e308"), Decimal("1e+308"), -1, Decimal("-0.0"), Decimal("-0.5"),
                 True, "1", " 2 ", "1_000", "NaN", None, Decimal("1e999999999999")],
    "usageDate": ["2026-11-29T10:00:00Z", "2026-11-29", "2026-11-29T10:00:00", "2026-11-29T10:00:00+02:00",
                  "2026-11-29 10:00:00", "not a date", "10000-01-01", " 2026-11-29 ", 20261129, None, "0001-01-01"],
    "environment": ["production", "staging", "development", "testing", "prod", "", 1, None],
    "serviceTier": ["standard", "batch", "flex", "priority", "turbo", "", 1, None],
    "metadata": [{}, None, {"a": 1}, {"a": Decimal("1.50")}, {"a": 10**1001}, {"a": "nul\x00"},
                 {"a": {"b": [1, {"c": 2, "d": Decimal("1E+3")}]}}, {"k" * 3: [[[]]]}, [], "text", 1,
                 {"a": {"b": {"c": {"d": None}}}}],
}


def _nested(depth: int):
    value = 1
    for _ in range(depth):
        value = {"d": value}
    return value


def _with(name: str, value) -> dict:
    record = _plain_record(7)
    record[name] = value
    return record


SERVICE = {"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 10}
SERVICES_EDGES = [[], [SERVICE], [SERVICE, {**SERVICE, "quantity": Decimal("2.5")}], [{"model": "gpt-4o"}],
                  [{**SERVICE, "quantity": Decimal("1e-31")}], [{**SERVICE, "serviceTier": "turbo"}],
                  [{**SERVICE, "serviceTier": "flex"}], [{**SERVICE, "inputToken": 1}], [{**SERVICE, "model": " m "}],
                  [{**SERVICE, "quantity": True}], [{**SERVICE, "inputTokens": -1}], "x", None, [1]]


def _edge_bodies():
    for name, values in EDGES.items():
        for value in values:
            yield pytest.param(_with(name, value), id=f"{name}={value!r:.40}")
    yield pytest.param(_with("metadata", _nested(70)), id="metadata-nested-70")
    yield pytest.param(_with("metadata", _nested(60)), id="metadata-nested-60")
    for value in SERVICES_EDGES:
        multi = {key: item for key, item in _plain_record(3).items() if key not in ("model", "modelProvider",
                                                                                    "inputTokens", "outputTokens")}
        yield pytest.param({**multi, "services": value}, id=f"services={value!r:.60}")
        yield pytest.param({**_plain_record(3), "services": value}, id=f"both-shapes-services={value!r:.40}")


@pytest.mark.parametrize("record", _edge_bodies())
def test_edges_of_every_field(record):
    """Each field at and beyond the edges of its rules, in a batch otherwise valid, written as clients write it."""
    batch = {"records": [_plain_record(0), record]}
    for colon, comma in ((":", ","), (": ", ", ")):
        _assert_fast_agrees(_write(batch, colon=colon, comma=comma, ensure_ascii=False).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("dumps", [orjson.dumps, lambda value: json.dumps(value).encode()],
                         ids=["compact", "python-json"])
def test_a_usual_batch_takes_the_fast_path(dumps):
    """The batches clients send (compact, or the standard library's `": "`) are decoded in C: the path is not dead."""
    raw = dumps({"records": [_plain_record(index) for index in range(100)]})
    assert _assert_fast_agrees(raw)
    multi = {"customerExternalId": "c", "agentCode": "a", "signalName": "s", "quantity": 2,
             "services": [{"model": "gpt-4o", "modelProvider": "openai", "inputTokens": 5, "serviceTier": "batch"},
                          {"model": "serper", "modelProvider": "serper", "quantity": 3}]}
    assert _assert_fast_agrees(orjson.dumps({"records": [multi]}))
    fractions = exact_json.dumps({"records": [_plain_record(0, quantity=Decimal("2.50"),
                                                            metadata={"rate": Decimal("1E+3"), "n": 10**30})]})
    assert _assert_fast_agrees(fractions)


@pytest.mark.parametrize("raw", [
    b'{"records":[{"customerExternalId":"a","customerExternalId":"b","agentCode":"x","signalName":"s",'
    b'"model":"gpt-4o","modelProvider":"openai"}]}',
    b'{"records":[{"customerExternalId":"a","agentCode":"x","signalName":"s","model":"gpt-4o",'
    b'"modelProvider":"openai","metadata":{"k":1,"k":2}}]}',
    b'{"records":[{"customerExternalId":"a","agentCode":"x","signalName":"s","model":"gpt-4o",'
    b'"modelProvider":"openai","metadata":{"deep":[{"k":1,"k":1}]}}]}',
    b'{"records":[{"customerExternalId":"a","agentCode":"x","signalName":"s","services":[{"model":"gpt-4o",'
    b'"modelProvider":"openai","inputTokens":1,"inputTokens":2}]}]}',
    b'{"records":[{"customerExternalId":"a","agentCode":"x","signalName":"s","model":"gpt-4o",'
    b'"modelProvider":"openai"}],"records":[]}',
    # a duplicate hidden behind a key written with a space before its colon
    b'{"records":[{"customerExternalId":"a","agentCode" :"x","agentCode":"y","signalName":"s","model":"gpt-4o",'
    b'"modelProvider":"openai"}]}',
    # a string holding `":` beside a duplicate: counts that might cancel out
    b'{"records":[{"customerExternalId":"a","agentCode":"x","signalName":"s","model":"gpt-4o",'
    b'"modelProvider":"openai","metadata":{"note":"\\":","note":"\\":"}}]}',
], ids=["record", "metadata", "nested-metadata", "service", "top-level", "spaced-colon", "quoted-colon"])
def test_a_key_given_twice_is_left_to_the_full_parser_which_refuses_it(raw):
    assert batch_decoded(raw, lambda: None) is None
    with pytest.raises(ParseError, match="appears twice"):
        UsageBatchParser().parse(io.BytesIO(raw), "application/json", {"encoding": "utf-8"})


def test_the_parser_hands_over_what_the_full_parser_reads_when_it_gives_up():
    raw = orjson.dumps({"records": [_plain_record(0, customerExternalId="Zürich")]})
    assert UsageBatchParser().parse(io.BytesIO(raw), "application/json", {"encoding": "utf-8"}) == \
        exact_json.loads(raw.decode())
    in_latin_1 = '{"records":[{"customerExternalId":"a","agentCode":"x","signalName":"s","model":"m",' \
                 '"modelProvider":"p"}]}'.encode("latin-1")
    parsed = UsageBatchParser().parse(io.BytesIO(in_latin_1), "application/json", {"encoding": "latin-1"})
    assert isinstance(parsed, dict)


def test_the_structs_know_the_fields_the_rules_take():
    """A field the rules start to take is taken by the structs too (else every record that sends it is read the slow
    way), and the structs take nothing the rules refuse."""
    assert set(_Record.__struct_fields__) == RECORD_FIELDS
    assert set(_Service.__struct_fields__) == SERVICE_FIELDS


@pytest.mark.django_db
def test_through_the_api_a_record_with_a_key_given_twice_is_a_400_and_nothing_is_stored(api):
    raw = (b'{"records":[{"customerExternalId":"a","customerExternalId":"b","agentCode":"x","signalName":"s",'
           b'"model":"gpt-4o","modelProvider":"openai"}]}')
    answer = api.generic("POST", "/v1/usage/record", raw, content_type="application/json")
    assert answer.status_code == 400
    assert 'The key \\"customerExternalId\\" appears twice in one object.' in answer.content.decode()
    assert not UsageEvent.objects.exists()
