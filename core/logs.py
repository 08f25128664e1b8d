"""Structured logs: one JSON object per line, each carrying the id of the request it belongs to.

`RequestIdMiddleware` (core/middleware.py) sets `current_request_id` for the duration of a
request; `RequestIdFilter` copies it onto every record; `JsonFormatter` writes the line. Secrets that
may reach a message (API keys, the tokens of portal, pay-now and invitation links) are redacted.
"""
import contextvars
import json
import logging
import re
import time
from datetime import datetime, timezone

current_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("request_id", default=None)

# Fields of the access line (core.middleware), written when a record carries them.
ACCESS_FIELDS = ("method", "path", "status", "duration_ms")

SECRET_PATTERNS = [
    (re.compile(r"\bsvc_(sk|pk)_(test|live)_[A-Za-z0-9]+"), r"svc_\1_\2_[redacted]"),
    (re.compile(r"(/(?:portal|pay)/|/invitations/accept/)[^/\s?#\"']+"), r"\1[redacted]"),
]


def redact(text: str) -> str:
    """The text with API keys and link tokens replaced by `[redacted]`."""
    for pattern, replacement in SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


class RequestIdFilter(logging.Filter):
    """Stamps each record with the id of the request being served (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = current_request_id.get()
        return True


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, tz=timezone.utc)
                            .isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": redact(record.getMessage()),
            "request_id": getattr(record, "request_id", None),
        }
        for field in ACCESS_FIELDS:
            if hasattr(record, field):
                entry[field] = getattr(record, field)
        if record.exc_info:
            entry["exception"] = redact(self.formatException(record.exc_info))
        return json.dumps(entry, default=str)


class WarnedOncePer:
    """A warning logged at most once every `seconds` (with the traceback of the failure that triggered it): for a
    dependency that is down, where every request would otherwise log the same failure."""

    def __init__(self, logger: logging.Logger, seconds: float = 60):
        self.logger, self.seconds, self._last = logger, seconds, float("-inf")  # not money: a monotonic instant

    def warning(self, message: str, *args) -> None:
        now = time.monotonic()
        if now - self._last >= self.seconds:
            self._last = now
            self.logger.warning(message, *args, exc_info=True)
