"""The one error hierarchy of the API and the DRF handler that renders it as {message, code?}."""
import logging

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.db import DatabaseError, InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response

logger = logging.getLogger("billing.errors")


class ApiError(Exception):
    """An answer of the API other than success: its HTTP `status`, its `message` and a machine-readable `code`.

    Every class declares its default `code`, so that whoever catches one (a job, the console, a log) can tell
    the errors apart without reading messages. The answer's body carries `code` only where the interface
    shows one (spec.md section 7: "some errors add a `code`"): for a class with `code_shown`, and for any
    raise that names its own `code=` (`too_many_auth_failures`, ...). The generic classes keep theirs out of
    the body, so their answers stay `{message}` as clients know them."""

    status, code = 400, "api_error"
    code_shown = False

    def __init__(self, message: str | list[str], *, code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.message, self.code = message, code or self.code
        self.code_shown = bool(code) or self.code_shown
        self.headers = headers or {}

    def body(self) -> dict:
        """The JSON body of the answer: `{message, code?}`."""
        return error_body(self.message, self.code if self.code_shown else None)


class BadRequest(ApiError):
    status, code = 400, "bad_request"


class Unauthorized(ApiError):
    status, code = 401, "unauthorized"


class KeyRevoked(ApiError):
    status, code, code_shown = 401, "key_revoked", True


class Forbidden(ApiError):
    status, code = 403, "forbidden"


class NotFound(ApiError):
    status, code = 404, "not_found"


class Conflict(ApiError):
    status, code = 409, "conflict"


class Unprocessable(ApiError):
    status, code = 422, "unprocessable"


class RateLimited(ApiError):
    status, code = 429, "rate_limited"

    def __init__(self, message, *, retry_after: int, code: str | None = None):
        super().__init__(message, code=code, headers={"Retry-After": str(max(1, int(retry_after)))})


class PayloadTooLarge(ApiError):
    status, code, code_shown = 413, "request_too_large", True


def body_too_large() -> PayloadTooLarge:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return PayloadTooLarge(f"The request body is larger than the limit of {limit} bytes ({limit / 1048576:g} MiB); "
                           f"send fewer or smaller records per request.")


class AuthUnavailable(ApiError):
    status, code, code_shown = 503, "auth_unavailable", True


class ServiceUnavailable(ApiError):
    """A request that could not be carried out now, with nothing stored; the same request may succeed later."""

    status, code, code_shown = 503, "service_unavailable", True


class EmailNotSent(ApiError):
    """An email the request exists to send was not taken by the mail server (an invoice, an invitation)."""

    status, code, code_shown = 502, "email_not_sent", True


def error_body(message, code=None) -> dict:
    body = {"message": message}
    if code:
        body["code"] = code
    return body


def flatten_validation_errors(detail, prefix: str = "") -> list[str]:
    """DRF's nested error dict as a flat list of "field: message" strings (camelCase paths)."""
    if isinstance(detail, dict):
        out = []
        for field, value in detail.items():
            if field in ("non_field_errors", "__all__"):
                out.extend(flatten_validation_errors(value, prefix))
            elif isinstance(field, int):  # a list item (ListSerializer reports {index: errors})
                out.extend(flatten_validation_errors(value, f"{prefix}[{field}]"))
            else:
                path = f"{prefix}.{field}" if prefix else str(field)
                out.extend(flatten_validation_errors(value, path))
        return out
    if isinstance(detail, list):
        out = []
        for index, item in enumerate(detail):
            if isinstance(item, (dict, list)) and item:
                out.extend(flatten_validation_errors(item, f"{prefix}[{index}]"))
            elif isinstance(item, (dict, list)):
                continue
            else:
                out.append(f"{prefix}: {item}" if prefix else str(item))
        return out
    return [f"{prefix}: {detail}" if prefix else str(detail)]


def api_exception_handler(exc, context):
    """Render every client error as {message, code?}; anything unexpected becomes a plain 500."""
    if isinstance(exc, RequestDataTooBig):  # a body the middleware could not refuse from its Content-Length
        exc = body_too_large()
    if isinstance(exc, ApiError):
        return Response(exc.body(), status=exc.status, headers=exc.headers)
    if isinstance(exc, drf_exceptions.ValidationError):
        return Response(error_body(flatten_validation_errors(exc.detail)), status=400)
    if isinstance(exc, drf_exceptions.ParseError):
        return Response(error_body(f"Malformed JSON body: {exc.detail}"), status=400)
    if isinstance(exc, drf_exceptions.UnsupportedMediaType):
        return Response(error_body("Request bodies must be JSON (Content-Type: application/json)."), status=415)
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return Response(error_body(str(exc.detail)), status=405)
    if isinstance(exc, drf_exceptions.NotAuthenticated):
        return Response(error_body("Missing API key: send it in the x-api-key header."), status=401)
    if isinstance(exc, drf_exceptions.AuthenticationFailed):
        return Response(error_body(str(exc.detail)), status=401)
    if isinstance(exc, (drf_exceptions.PermissionDenied, DjangoPermissionDenied)):
        return Response(error_body("Forbidden."), status=403)
    if isinstance(exc, (drf_exceptions.NotFound, Http404)):
        return Response(error_body("Not found."), status=404)
    if isinstance(exc, drf_exceptions.Throttled):
        return Response(error_body("Too many requests."), status=429,
                        headers={"Retry-After": str(int(exc.wait or 1))})
    if isinstance(exc, drf_exceptions.APIException):
        return Response(error_body(str(exc.detail)), status=exc.status_code)
    if isinstance(exc, (OperationalError, InterfaceError)):
        logger.warning("database unavailable: %s", exc.__class__.__name__)
        return Response(error_body("The database is unavailable; retry later.", "service_unavailable"),
                        status=503, headers={"Retry-After": "5"})
    if isinstance(exc, DatabaseError):
        logger.exception("database error")
        return Response(error_body("Internal server error."), status=500)
    logger.exception("unhandled error")
    return Response(error_body("Internal server error."), status=500)
