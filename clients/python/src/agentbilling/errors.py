"""Typed exceptions. Every error answer of the service carries `message` (a string, or a list of strings
naming the faulty fields) and sometimes a `code` (spec §7); both are on the exception, with the status.

    AgentBillingError
    ├── MissingAPIKeyError        no API key given nor in $AGENTBILLING_API_KEY (also a ValueError)
    ├── APIConnectionError        the service could not be reached (refused, reset, timed out)
    └── APIError                  the service answered with an error status
        ├── BadRequestError              400
        ├── AuthenticationError          401 (KeyRevokedError: code key_revoked)
        ├── PermissionDeniedError        403
        ├── NotFoundError                404
        ├── ConflictError                409
        ├── UnprocessableEntityError     422
        ├── RateLimitError               429 (retry_after)
        └── ServerError                  5xx (ServiceUnavailableError: 502, 503, 504)
"""
from __future__ import annotations

from typing import Any, Mapping


class AgentBillingError(Exception):
    """Base of every error this package raises on purpose."""


class MissingAPIKeyError(AgentBillingError, ValueError):
    """No API key: raised when a `Client` or `Recorder` is made without one (not later, at each call)."""


class APIConnectionError(AgentBillingError):
    """No answer: connection refused or reset, DNS failure, timeout."""


class APIError(AgentBillingError):
    """An error answer: `status`, the spec's `message` (str or list of str) and `code` (or None)."""

    status: int = 0

    def __init__(self, status: int, message: str | list[str], code: str | None = None, *,
                 body: Any = None, headers: Mapping[str, str] | None = None, retry_after: float | None = None):
        self.status, self.message, self.code = status, message, code
        self.body, self.headers, self.retry_after = body, dict(headers or {}), retry_after
        super().__init__(str(self))

    @property
    def messages(self) -> list[str]:
        """The message as a list (the service sends a list when several fields are wrong)."""
        return list(self.message) if isinstance(self.message, list) else [self.message]

    def __str__(self) -> str:
        text = "; ".join(str(part) for part in self.messages)
        return f"{self.status} {self.code}: {text}" if self.code else f"{self.status}: {text}"

    def __reduce__(self):  # picklable, for multiprocessing users
        return (_rebuild, (type(self), self.status, self.message, self.code, self.body, self.headers,
                           self.retry_after))


def _rebuild(cls, status, message, code, body, headers, retry_after):
    return cls(status, message, code, body=body, headers=headers, retry_after=retry_after)


class BadRequestError(APIError):
    status = 400


class AuthenticationError(APIError):
    status = 401


class KeyRevokedError(AuthenticationError):
    """401 with `code: key_revoked`: the message says when the key was revoked."""


class PermissionDeniedError(APIError):
    status = 403


class NotFoundError(APIError):
    status = 404


class ConflictError(APIError):
    status = 409


class UnprocessableEntityError(APIError):
    status = 422


class RateLimitError(APIError):
    """429: request rate exceeded (or `code: too_many_auth_failures`); `retry_after` seconds to wait."""
    status = 429


class ServerError(APIError):
    """A 5xx answer."""
    status = 500


class ServiceUnavailableError(ServerError):
    """502, 503 or 504: transient (`code: auth_unavailable` or `service_unavailable` on a 503)."""
    status = 503


_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
    409: ConflictError, 422: UnprocessableEntityError, 429: RateLimitError,
    502: ServiceUnavailableError, 503: ServiceUnavailableError, 504: ServiceUnavailableError,
}


def error_class(status: int, code: str | None) -> type[APIError]:
    if status == 401 and code == "key_revoked":
        return KeyRevokedError
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    return ServerError if status >= 500 else APIError
