"""Request bodies sent in chunks (`Transfer-Encoding: chunked`), handed to Django as bodies of known length.

Django reads as much of a body as its Content-Length says, and a chunked request has none: its body read as
empty, so a chunked `PATCH` answered 200 and changed nothing, and a chunked batch of usage was a 400 for a body it
never read. gunicorn decodes the chunks and ends the input stream where the body ends (`wsgi.input_terminated`,
a WSGI extension); this wrapper of the WSGI application reads that stream, at most REQUEST_BODY_MAX_BYTES of it,
and passes the body on with its length, so every route reads it as it reads any other.

A chunked body it cannot pass on (past the limit; from a server that does not end the stream, so nothing says
where the body stops; with a Content-Length beside it, which HTTP forbids) goes on empty, marked, and the first
middleware that reads bodies (`RequestBodyLimitMiddleware`) answers for it: the answer then carries the request's
id and its access line, as every other does.

A Content-Type whose charset Python knows but cannot decode text with (`base64`, `hex`, `zlib`: not text
encodings; `punycode`, `undefined`: fail on any text) is marked the same way, its parameters taken off: Django takes
any charset `codecs` can look up, and decoding the query string with one raised while it built the request, before
any middleware, on every route (a 500). So is a charset that decodes bytes into unpaired surrogates (`utf-7`,
`unicode_escape`, `raw_unicode_escape`): a query parameter decoded with one reached a filter as text PostgreSQL
cannot take (a 500), and neither is a charset a client sends to mean text."""
import codecs
import io

from django.conf import settings
from django.utils.http import parse_header_parameters

from core.errors import ApiError, BadRequest, body_too_large

# The environ key that marks a chunked body the wrapper could not pass on, and why.
REFUSAL = "billing.chunked_body_refusal"
TOO_LARGE, LENGTH_REQUIRED, AMBIGUOUS, NOT_TEXT = "too_large", "length_required", "ambiguous", "not_text"


class LengthRequired(ApiError):
    status, code, code_shown = 411, "length_required", True


def refusal_error(environ) -> ApiError | None:
    """The answer to a request whose chunked body could not be passed on, None for any other request."""
    refusal = environ.get(REFUSAL)
    if refusal is None:
        return None
    if refusal == TOO_LARGE:
        return body_too_large()
    if refusal == LENGTH_REQUIRED:
        return LengthRequired("A chunked request body cannot be read by this server (it does not mark where the body "
                              "ends); send the body with a Content-Length header.")
    if refusal == NOT_TEXT:
        return BadRequest("Content-Type: its charset does not decode to text this service can store; send utf-8.", code="unsupported_charset")
    return BadRequest("A request may not carry both Transfer-Encoding: chunked and Content-Length; send one of them.",
                      code="ambiguous_body_length")


# Decoded with the request's charset before it is used: Django catches UnicodeDecodeError alone.
_PROBE = b"a=1&b=%C3%A9"
# The codecs that decode bytes into unpaired surrogates, whatever the error handler (`\\ud800`, `+2AA-`): found by
# decoding such bytes with every codec Python has (tests/core/test_chunked_bodies.py does it again).
SURROGATE_CODECS = frozenset({"utf-7", "unicode-escape", "raw-unicode-escape"})


def _charset_refused(environ) -> str | None:
    """The Content-Type without its parameters when its charset is one Django would take (`codecs` knows it) but
    that decodes with another error than UnicodeDecodeError: not a text encoding (`base64`, `zlib`: LookupError)
    or one that fails on any text (`punycode`, `undefined`: UnicodeError); or one of the `SURROGATE_CODECS`; else
    None. Read as Django reads it
    (`charset*=` included)."""
    main, params = parse_header_parameters(environ.get("CONTENT_TYPE", ""))
    charset = params.get("charset")
    if not charset:
        return None
    try:
        codec = codecs.lookup(charset)
    except LookupError:  # a name no codec has: Django ignores it
        return None
    if codec.name in SURROGATE_CODECS:
        return main
    for sample in (_PROBE, environ.get("QUERY_STRING", "").encode("latin-1", "replace")):
        try:
            sample.decode(charset)
        except UnicodeDecodeError:
            pass  # Django reads such a query string as latin-1, a parser refuses such a body
        except Exception:
            return main
    return None


class ChunkedBodies:
    """The WSGI application, with chunked request bodies read whole first and a charset that is not text marked
    (see the module's docstring)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if "charset" in environ.get("CONTENT_TYPE", "").lower():
            kept = _charset_refused(environ)
            if kept is not None:
                environ["CONTENT_TYPE"] = kept
                return self._refused(environ, start_response, NOT_TEXT)
        if "chunked" not in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
            return self.application(environ, start_response)
        if environ.get("CONTENT_LENGTH"):
            return self._refused(environ, start_response, AMBIGUOUS)
        if not environ.get("wsgi.input_terminated"):
            return self._refused(environ, start_response, LENGTH_REQUIRED)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = environ["wsgi.input"].read() if limit is None else environ["wsgi.input"].read(limit + 1)
        if limit is not None and len(body) > limit:
            return self._refused(environ, start_response, TOO_LARGE)
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        return self.application(environ, start_response)

    def _refused(self, environ, start_response, why: str):
        environ[REFUSAL], environ["wsgi.input"], environ["CONTENT_LENGTH"] = why, io.BytesIO(b""), "0"
        return self.application(environ, start_response)
