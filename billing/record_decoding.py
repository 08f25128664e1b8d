"""The usual usage batch decoded and validated in one pass in C (msgspec), the rules unchanged.

`POST /v1/usage/record` is the hot path, and reading a batch with the standard library's parser and then checking
each record in Python costs more than a tenth of the web process's time a batch (docs/performance.md). Most
batches are plain: every record valid, every name ASCII, nothing unusual. For those, msgspec decodes the body
straight into typed structs (numbers exact: an integer an `int`, any other number the `Decimal` it spells, through
the same function as the standard parser's, core/exact_json.py) and a short pass builds the same `RecordDraft`s
`validate_record` builds.

This is a fast path, never a second set of rules. It only ever answers "these are the drafts" for a batch whose
every record the full rules (billing/record_validation.py) accept, with the very values they produce; anything
else (a key given twice, a field the record does not take, a wrong type, a record with any error, a name that is
not ASCII, a body in another charset) makes it answer None, and the batch goes through the standard parser and
the full validation exactly as before, with their errors. tests/billing/test_record_decoding.py holds the two
equal on generated batches, valid and not.

A key given twice in one object, which the API refuses and msgspec would silently read as its last value, is told
apart by counting: a compact key ends with the two bytes `":`, so when no `"` is followed by whitespace and a
colon (a key written `"a" : 1`), the occurrences of `":` in the body are at least the keys it writes (more when a
string holds `\\":`). The decoded batch is taken only when its keys (every field present, null or not, and every
key of every metadata object) are exactly that many: a key given twice would be decoded once and counted twice.
"""
import codecs
import io
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Annotated, Any, Literal, NamedTuple

import msgspec
from django.conf import settings

from billing.record_validation import (
    CACHE_WRITE_1H_FIELD,
    ENVIRONMENTS,
    MAX_NAME_LENGTH,
    MAX_QUANTITY,
    MAX_RECORDS,
    MAX_TOKENS,
    QUANTITY_PLACES,
    SERVICE_TIER_FIELD,
    SERVICE_TIERS,
    TOKEN_FIELDS,
    InvalidRecord,
    RecordDraft,
    check_request_shape,
    validate_record,
)
from catalog.event_pricing import ServiceUsage
from catalog.resolution import normalize_model, normalize_provider
from core.api_json import JSONParser
from core.clock import parse_instant
from core.errors import ApiError
from core.exact_json import exact_number
from core.serialization import unstorable_reason

_UNSET = msgspec.UNSET
_Unset = msgspec.UnsetType
# What the structs check in C, each a rule of billing/record_validation.py that a valid record meets: a name is a
# string of 1 to MAX_NAME_LENGTH characters (the full rules strip it first: a name with spaces around it is left to
# them), a token count an integer (never a boolean, never 1000.0) from 0 to MAX_TOKENS, a tier and an environment
# one of theirs. A value that does not fit fails the decoding, and the batch takes the full path.
_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_LENGTH)]
_Tokens = Annotated[int, msgspec.Meta(ge=0, le=MAX_TOKENS)]
_Tier = Literal[SERVICE_TIERS]
_Environment = Literal[tuple(sorted(ENVIRONMENTS))]


def _optional(kind) -> tuple:
    return kind | None | _Unset, _UNSET


# A service's usage, in both shapes: its token counts, its tier, and its quantity (Any: an integer arrives as an
# `int`, any other number as the `Decimal` it spells, the decoder's float hook, anything else as itself, which the
# full rules read, a string as a number, or refuse).
_USAGE = [*((name, *_optional(_Tokens)) for name in (*TOKEN_FIELDS, CACHE_WRITE_1H_FIELD)),
          (SERVICE_TIER_FIELD, *_optional(_Tier)), ("quantity", Any, _UNSET)]
# Field order is the order of `_service_usage`'s parameters and of the unpacking in `_draft`.
_Service = msgspec.defstruct("_Service", [("model", _Name), ("modelProvider", _Name), *_USAGE],
                             forbid_unknown_fields=True)
_Record = msgspec.defstruct("_Record", [
    ("customerExternalId", _Name), ("agentCode", _Name), ("signalName", _Name), ("model", *_optional(_Name)),
    ("modelProvider", *_optional(_Name)), *_USAGE, ("usageDate", *_optional(str)),
    ("environment", *_optional(_Environment)), ("idempotencyKey", *_optional(_Name)),
    ("metadata", *_optional(dict[str, Any])), ("services", *_optional(list[_Service])),
], forbid_unknown_fields=True)


class _Batch(msgspec.Struct, forbid_unknown_fields=True):
    records: list[_Record]


_decoder = msgspec.json.Decoder(_Batch, float_hook=exact_number)
_RECORD_FIELD_COUNT = len(_Record.__struct_fields__)
_SERVICE_FIELD_COUNT = len(_Service.__struct_fields__)
_METADATA, _SERVICES = _Record.__struct_fields__.index("metadata"), _Record.__struct_fields__.index("services")
_KEY_BEFORE_SPACED_COLON = re.compile(rb'"[ \t\r\n]+:')
_astuple = msgspec.structs.astuple


class DecodedBatch(NamedTuple):
    """A body the fast path decoded: each record's values in `_Record`'s field order (read once, for counting its
    keys, and kept for its draft); `parsed_fully()` is the body as the standard parser reads it (or its 400), for
    the full validation."""

    records: list[tuple]
    parsed_fully: Callable[[], Any]


def _nested_keys(value) -> int:
    """Keys of the objects nested within a decoded metadata object or array (its own keys not counted)."""
    count = 0
    for item in (value.values() if value.__class__ is dict else value):
        if item.__class__ is dict:
            count += len(item) + _nested_keys(item)
        elif item.__class__ is list:
            count += _nested_keys(item)
    return count


def batch_decoded(raw: bytes, parsed_fully: Callable[[], Any]) -> DecodedBatch | None:
    """The body decoded by msgspec, or None where only the standard parser and the full rules can say what it
    holds: not a batch of 1 to MAX_RECORDS records of the fields the structs know, not valid JSON, a byte beyond
    ASCII or an escape `\\u` (so no name needs the checks for NUL characters and surrogates), or a key that may be
    given twice."""
    if not raw.isascii() or b"\\u" in raw or _KEY_BEFORE_SPACED_COLON.search(raw):
        return None
    try:
        records = _decoder.decode(raw).records
    except (msgspec.DecodeError, ValueError, RecursionError):  # ValueError: from the float hook
        return None
    if not 1 <= len(records) <= MAX_RECORDS:
        return None
    keys = 1  # `records`
    records = [_astuple(record) for record in records]
    for values in records:
        keys += _RECORD_FIELD_COUNT - values.count(_UNSET)
        metadata, services = values[_METADATA], values[_SERVICES]
        if metadata:
            keys += len(metadata) + _nested_keys(metadata)
        if services:
            for service in services:
                keys += _SERVICE_FIELD_COUNT - _astuple(service).count(_UNSET)
    if keys != raw.count(b'":'):
        return None
    return DecodedBatch(records, parsed_fully)


_FAILED = object()


def _quantity(value):
    """The quantity as the full rules read it, None when not given, `_FAILED` when they would refuse it or read
    it from another type (a string)."""
    if value.__class__ is int:
        return Decimal(value) if 0 <= value <= MAX_QUANTITY else _FAILED
    if value.__class__ is Decimal:
        if value.is_finite() and 0 <= value <= MAX_QUANTITY and value.as_tuple().exponent >= -QUANTITY_PLACES:
            return value
        return _FAILED
    return None if value is None or value is _UNSET else _FAILED


def _service_usage(model: str, provider: str, input_tokens, output_tokens, cache_read, cache_write, cache_write_1h,
                   tier, quantity) -> ServiceUsage:
    """A service's usage from its decoded values (a `_USAGE` field not given is None, as the full rules read it)."""
    return ServiceUsage(
        normalize_model(model), normalize_provider(provider), None if input_tokens is _UNSET else input_tokens,
        None if output_tokens is _UNSET else output_tokens, None if cache_read is _UNSET else cache_read,
        None if cache_write is _UNSET else cache_write, quantity=quantity,
        cache_write_1h_tokens=None if cache_write_1h is _UNSET else cache_write_1h,
        service_tier=None if tier is None or tier is _UNSET or tier == "standard" else tier)


def _service(part: _Service) -> ServiceUsage | None:
    values = _astuple(part)
    model, provider, quantity = values[0], values[1], _quantity(values[-1])
    if model.strip() is not model or provider.strip() is not provider or quantity is _FAILED:
        return None
    return _service_usage(*values[:-1], quantity)


def _draft(index: int, values: tuple, now) -> RecordDraft | None:
    (customer, agent, signal, model, provider, input_tokens, output_tokens, cache_read, cache_write, cache_write_1h,
     tier, quantity, usage_date, environment, idempotency_key, metadata, services) = values
    # `str.strip` answers the string itself when there is nothing to strip: a name the full rules take as it is.
    if customer.strip() is not customer or agent.strip() is not agent or signal.strip() is not signal:
        return None
    if idempotency_key is _UNSET:
        idempotency_key = None
    elif idempotency_key is not None and not idempotency_key.strip():  # blank: the full rules say so
        return None
    quantity = _quantity(quantity)
    if quantity is _FAILED:
        return None
    if usage_date is None or usage_date is _UNSET:
        usage_date = now
    else:
        try:
            usage_date = parse_instant(usage_date, field="usageDate")
        except ApiError:
            return None
    if environment is _UNSET:
        environment = None
    if metadata is None or metadata is _UNSET:
        metadata = {}
    elif unstorable_reason(metadata):
        return None
    if services is None or services is _UNSET:
        # The single-service shape: model and modelProvider given (the one shape check), no `services`.
        if (model is None or model is _UNSET or provider is None or provider is _UNSET
                or model.strip() is not model or provider.strip() is not provider):
            return None
        parts = (_service_usage(model, provider, input_tokens, output_tokens, cache_read, cache_write, cache_write_1h,
                                tier, quantity if quantity is not None else Decimal(1)),)
        multi = False
    else:
        # The multi-service shape: a non-empty list, and none of the single shape's fields beside it.
        single = (model, provider, input_tokens, output_tokens, cache_read, cache_write, cache_write_1h, tier)
        if not services or any(value is not None and value is not _UNSET for value in single):
            return None
        parts = tuple(_service(part) for part in services)
        if None in parts:
            return None
        multi = True
    return RecordDraft(index, customer, agent, signal, quantity if quantity is not None else Decimal(1), usage_date,
                       parts, multi, environment, idempotency_key, metadata)


def drafts_decoded(batch: DecodedBatch, *, now) -> list[RecordDraft] | None:
    """Every record's draft, as `validate_record` makes it, when every record is valid; None when any is not (the
    full path then says which, and why)."""
    drafts = []
    for index, values in enumerate(batch.records):
        draft = _draft(index, values, now)
        if draft is None:
            return None
        drafts.append(draft)
    return drafts


def records_checked(body, *, now) -> list[RecordDraft | InvalidRecord]:
    """Each record of a request body, in order, as its draft or its failure: by the fast path when it takes the batch,
    else by the full rules (a malformed request, a 400, raised by `check_request_shape` or the standard parser).
    `body`: what `UsageBatchParser` gives, a `DecodedBatch` or the parsed JSON."""
    if isinstance(body, DecodedBatch):
        drafts = drafts_decoded(body, now=now)
        if drafts is not None:
            return drafts
        body = body.parsed_fully()
    return [validate_record(index, record, now=now) for index, record in enumerate(check_request_shape(body))]


class UsageBatchParser(JSONParser):
    """The API's JSON parser for `POST /v1/usage/record`: a UTF-8 body the fast path decodes is handed over as a
    `DecodedBatch`, any other body is parsed (and refused) exactly as on every other route."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read()
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)

        def parsed_fully():
            return super(UsageBatchParser, self).parse(io.BytesIO(raw), media_type, parser_context)

        decoded = batch_decoded(raw, parsed_fully) if codecs.lookup(encoding).name == "utf-8" else None
        return decoded if decoded is not None else parsed_fully()
