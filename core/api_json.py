"""The API's JSON parser and renderer (DRF's defaults, config/settings.py): numbers are exact both ways.

In: a number with a fraction or an exponent is the `Decimal` it spells, an integer an `int`; `NaN` and
`Infinity` (which Python's json module accepts) are a 400 like any malformed body, and so is what PostgreSQL
could not store (`JSONParser`). Out: a `Decimal` is a
JSON number of its own digits, never a float's (core/exact_json.py).

The renderer is orjson, faster than DRF's for the answers of the ingestion hot path (a usage batch's 100
entries). What orjson does not know itself goes through DRF's encoder, so the bytes mean what
DRF's renderer wrote: instants, dates and times as DRF formats them (`...Z`, milliseconds), lazy strings,
querysets. The parser is the standard library's: orjson's is faster but reads integers beyond 64 bits as
floats, and metadata must be stored as sent (docs/performance.md). `POST /v1/usage/record` tries msgspec first
for the usual batch and falls back on this parser for anything else (billing/record_decoding.py).
"""
from decimal import Decimal

import orjson
from django.conf import settings
from rest_framework import parsers, renderers
from rest_framework.exceptions import ParseError
from rest_framework.utils.encoders import JSONEncoder as DrfEncoder

from core import exact_json
from core.errors import BadRequest
from core.serialization import MAX_JSON_DEPTH, unstorable_message, unstorable_reason

_drf_encoder = DrfEncoder()


def _api_default(value):
    if isinstance(value, Decimal):
        return exact_json.decimal_fragment(value)
    return _drf_encoder.default(value)


class JSONParser(parsers.JSONParser):
    """The boundary every API request body crosses (the base API view parses each one, whether its view reads
    it or not; the size limit is the middleware's, before any of it is read):

    - JSON in the declared charset, `NaN`/`Infinity` and duplicate keys refused: 400;
    - an object or an array at the top;
    - nothing PostgreSQL cannot store or the service cannot render (core/serialization.py
      `unstorable_reason`): NUL characters and unpaired surrogates in any string or key, numbers beyond 1000
      digits, arrays and objects nested more than 64 levels: 400 naming where (`metadata.note: ...`).

    A view that stores values record by record and reports the unstorable ones per record sets
    `checks_stored_values_per_record` (`POST /v1/usage/record`: such a record fails alone, spec §2); for it the
    last check is left to the view."""

    def parse(self, stream, media_type=None, parser_context=None):
        context = parser_context or {}
        encoding = context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            document = exact_json.loads(stream.read().decode(encoding))
        except RecursionError:  # about 990 levels: deeper than the standard library's parser reads
            raise BadRequest(f"The body must not nest arrays and objects more than {MAX_JSON_DEPTH} levels deep.")
        except ValueError as exc:  # malformed JSON, NaN/Infinity, duplicate keys, bytes that are not the charset's
            raise ParseError(f"JSON parse error - {exc}")
        if not isinstance(document, (dict, list)):
            raise BadRequest("The body must be a JSON object or array.")
        if not getattr(context.get("view"), "checks_stored_values_per_record", False):
            reason = unstorable_reason(document)
            if reason:
                raise BadRequest([unstorable_message(reason)])
        return document


def _surrogates_escaped(value):
    """`value` with every text's unpaired surrogates written as `\\udXXX` escapes (containers copied)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_surrogates_escaped(key): _surrogates_escaped(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_surrogates_escaped(item) for item in value]
    return value


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        option = orjson.OPT_PASSTHROUGH_DATETIME
        if self.get_indent(accepted_media_type, renderer_context or {}):
            option |= orjson.OPT_INDENT_2
        try:
            content = exact_json.dumps(data, default=_api_default, option=option)
        except orjson.JSONEncodeError:
            # A text with an unpaired surrogate (orjson writes UTF-8 only), echoed from a request by a message that
            # did not show it escaped: the answer shows it escaped rather than failing as a 500.
            content = exact_json.dumps(_surrogates_escaped(data), default=_api_default, option=option)
        # As DRF's renderer: U+2028 and U+2029 escaped, so the answer is also valid JavaScript. Hot path: their
        # first byte is looked for first, a search many times quicker than one for all three bytes.
        if b"\xe2" in content:
            content = content.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return content
