"""The API's JSON parser and renderer (DRF's defaults, config/settings.py): numbers are exact both ways.

In: a number with a fraction or an exponent is the `Decimal` it spells, an integer an `int`; `NaN` and
`Infinity` (which Python's json module accepts) are a 400 like any malformed body. Out: a `Decimal` is a
JSON number of its own digits, never a float's (config/core/exact_json.py).

The renderer is orjson, several times faster than DRF's for a usage batch's answer of 100 entries (the
ingestion hot path). What orjson does not know itself goes through DRF's encoder, so the bytes mean what
DRF's renderer wrote: instants, dates and times as DRF formats them (`...Z`, milliseconds), lazy strings,
querysets. The parser is the standard library's: orjson's is faster but reads integers beyond 64 bits as
floats, and metadata must be stored as sent (docs/performance.md).
"""
from decimal import Decimal

import orjson
from django.conf import settings
from rest_framework import parsers, renderers
from rest_framework.exceptions import ParseError
from rest_framework.utils.encoders import JSONEncoder as DrfEncoder

from config.core import exact_json

_drf_encoder = DrfEncoder()


def _api_default(value):
    if isinstance(value, Decimal):
        return exact_json.decimal_fragment(value)
    return _drf_encoder.default(value)


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            return exact_json.loads(stream.read().decode(encoding))
        except ValueError as exc:  # malformed JSON, NaN/Infinity, bytes that are not the charset's
            raise ParseError(f"JSON parse error - {exc}")


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        option = orjson.OPT_PASSTHROUGH_DATETIME
        if self.get_indent(accepted_media_type, renderer_context or {}):
            option |= orjson.OPT_INDENT_2
        content = exact_json.dumps(data, default=_api_default, option=option)
        # As DRF's renderer: U+2028 and U+2029 escaped, so the answer is also valid JavaScript. Hot path: their
        # first byte is looked for first, a search many times quicker than one for all three bytes.
        if b"\xe2" in content:
            content = content.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return content
