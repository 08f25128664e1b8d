"""Request bodies sent in chunks (`Transfer-Encoding: chunked`), handed to Django as bodies of known length.

Django reads as much of a body as its Content-Length says, and a chunked request has none: its body read as
empty, so a chunked `PATCH` answered 200 and changed nothing, and a chunked batch of usage was a 400 for a body it
never read. gunicorn decodes the chunks and ends the input stream where the body ends (`wsgi.input_terminated`,
a WSGI extension); this wrapper of the WSGI application reads that stream, at most REQUEST_BODY_MAX_BYTES of it,
and passes the body on with its length, so every route reads it as it reads any other. A server that does not
end the stream cannot say where the body stops: such a request is a 411."""
import io
import json

from django.conf import settings

from core.errors import body_too_large, error_body

LENGTH_REQUIRED = ("A chunked request body cannot be read by this server (it does not mark where the body ends); "
                   "send the body with a Content-Length header.")


def _is_chunked(environ) -> bool:
    return "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower() and not environ.get("CONTENT_LENGTH")


def _json_answer(start_response, status: str, body: dict) -> list[bytes]:
    content = json.dumps(body).encode()
    start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(content)))])
    return [content]


class ChunkedBodies:
    """The WSGI application, with chunked request bodies read whole first (see the module's docstring)."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if not _is_chunked(environ):
            return self.application(environ, start_response)
        if not environ.get("wsgi.input_terminated"):
            return _json_answer(start_response, "411 Length Required", error_body(LENGTH_REQUIRED, "length_required"))
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        body = environ["wsgi.input"].read() if limit is None else environ["wsgi.input"].read(limit + 1)
        if limit is not None and len(body) > limit:
            error = body_too_large()
            return _json_answer(start_response, f"{error.status} Request Entity Too Large", error.body())
        environ["wsgi.input"], environ["CONTENT_LENGTH"] = io.BytesIO(body), str(len(body))
        return self.application(environ, start_response)
