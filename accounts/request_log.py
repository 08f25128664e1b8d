"""The API request log, written in bulk off the request path.

Each API-key request appends one entry to an in-process buffer; a background thread writes the
buffer with one bulk INSERT (and bumps each key's `last_used_at` once) every
API_REQUEST_LOG_FLUSH_SECONDS or every API_REQUEST_LOG_BATCH_SIZE entries, so ingestion pays
an append to a list, not an INSERT. A flush interval of 0 writes each entry at once. The thread keeps
its database connection between writes, for DB_CONN_MAX_AGE seconds like any other (opening one per
write cost every web worker a PostgreSQL backend a second), and closes it when the process stops.
"""
import atexit
import logging
import os
import threading
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError, DataError, IntegrityError, close_old_connections, connection, transaction

logger = logging.getLogger("billing.request_log")


MAX_PATH_LENGTH = 2048  # ApiRequestLog.path


def loggable_path(path: str) -> str:
    """The request path as the log stores it: characters PostgreSQL's text cannot hold (NUL) and other control
    characters percent-encoded again, as they arrived (a path with `%00` is logged, not dropped), cut to the
    column's length."""
    if not path.isprintable():
        path = "".join(f"%{ord(char):02X}" if ord(char) < 0x20 or ord(char) == 0x7F else char for char in path)
    return path[:MAX_PATH_LENGTH]


@dataclass(frozen=True)
class LogEntry:
    organization_id: object
    api_key_id: object
    method: str
    path: str
    status: int
    ip: str | None
    created_at: datetime


class RequestLogBuffer:
    def __init__(self):
        self._entries: list[LogEntry] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = None

    def append(self, entry: LogEntry) -> None:
        if settings.API_REQUEST_LOG_FLUSH_SECONDS <= 0:
            try:
                write_entries([entry])
            except DatabaseError:  # the answer (a 503, most likely) still goes out
                logger.warning("database unavailable; request-log entry for key %s not written", entry.api_key_id)
            return
        with self._lock:
            self._entries.append(entry)
            size = len(self._entries)
        self._ensure_thread()
        if size >= settings.API_REQUEST_LOG_BATCH_SIZE:
            self._wake.set()

    def flush(self) -> int:
        """Write the buffer; returns how many entries were written."""
        with self._lock:
            entries, self._entries = self._entries, []
        if not entries:
            return 0
        try:
            write_entries(entries)
            return len(entries)
        except (DataError, IntegrityError, ValueError):
            # One bad row must not block the others: write them one by one and drop what cannot be stored.
            written = 0
            for entry in entries:
                try:
                    write_entries([entry])
                    written += 1
                except (DataError, IntegrityError, ValueError):
                    logger.error("dropped an unstorable request-log entry for key %s", entry.api_key_id)
            return written
        except DatabaseError:
            logger.warning("database unavailable; keeping %d request-log entries for the next flush", len(entries))
            with self._lock:
                self._entries[:0] = entries
            return 0

    def _ensure_thread(self) -> None:
        # A forked server worker inherits the list but not the thread: start one per process.
        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        with self._lock:
            if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
                return
            self._pid = os.getpid()
            self._stopping.clear()
            self._thread = threading.Thread(target=self._run, name="request-log-writer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Write what is buffered and end this process's writer thread, closing its connection (at exit)."""
        thread = self._thread
        if thread is None or not thread.is_alive() or self._pid != os.getpid():
            self.flush()
            return
        self._stopping.set()
        self._wake.set()
        thread.join(timeout=10)

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                interval = settings.API_REQUEST_LOG_FLUSH_SECONDS
                if interval <= 0:  # entries are now written as they come: nothing left for this thread
                    break
                self._wake.wait(interval)
                self._wake.clear()
                close_old_connections()  # replaces a broken connection or one older than DB_CONN_MAX_AGE
                self.flush()
            self.flush()  # what is still buffered
        finally:
            connection.close()


@transaction.atomic
def write_entries(entries: list[LogEntry]) -> None:
    from accounts.models import ApiKey, ApiRequestLog

    ApiRequestLog.objects.bulk_create([ApiRequestLog(**entry.__dict__) for entry in entries])
    last_used: dict = {}
    for entry in entries:
        if entry.api_key_id not in last_used or entry.created_at > last_used[entry.api_key_id]:
            last_used[entry.api_key_id] = entry.created_at
    for key_id, used_at in last_used.items():
        ApiKey.objects.filter(pk=key_id).exclude(last_used_at__gte=used_at).update(last_used_at=used_at)


buffer = RequestLogBuffer()
atexit.register(buffer.stop)


def flush_request_log() -> int:
    """Write whatever is buffered now (tests, shutdown)."""
    return buffer.flush()

