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
    status, code = 400, None

    def __init__(self, message: str | list[str], *, code: str | None = None, headers: dict | None = None):
        super().__init__(message)
        self.message, self.code = message, code or self.code
        self.headers = headers or {}


class BadRequest(ApiError):
    status = 400


class Unauthorized(ApiError):
    status = 401


class KeyRevoked(ApiError):
    status, code = 401, "key_revoked"


class Forbidden(ApiError):
    status = 403


class NotFound(ApiError):
    status = 404


class Conflict(ApiError):
    status = 409


class Unprocessable(ApiError):
    status = 422


class RateLimited(ApiError):
    status = 429

    def __init__(self, message, *, retry_after: int, code: str | None = None):
        super().__init__(message, code=code, headers={"Retry-After": str(max(1, int(retry_after)))})


class PayloadTooLarge(ApiError):
    status, code = 413, "request_too_large"


def body_too_large() -> PayloadTooLarge:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return PayloadTooLarge(f"The request body is larger than the limit of {limit} bytes ({limit / 1048576:g} MiB); "
                           f"send fewer or smaller records per request.")


class AuthUnavailable(ApiError):
    status, code = 503, "auth_unavailable"


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
        return Response(error_body(exc.message, exc.code), status=exc.status, headers=exc.headers)
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
