"""Scheduled jobs run each book on its own: what fails on one organization's data is logged and the other
books still get their invoices, alerts and rollups.

A job over every book wraps each book's work (or each row's, where it works row by row) in
`failures.isolated(book_id)` and ends with `failures.finish(result)`:

    failures = BookFailures("customer-alerts")
    for book in books:
        with failures.isolated(book.pk):
            sent += customer_alerts_evaluate(book=book, now=now)
    return failures.finish(sent)

`finish` returns the result when every book succeeded and raises `BooksFailed` (carrying the result) once
all have run, so `run_scheduled_jobs` exits non-zero and a Celery task is marked failed. Every job is
idempotent: the next run (beat's schedule, or the command again) retries the books that failed.
"""
import logging

from django.db import connection, transaction

logger = logging.getLogger("billing.jobs")


class BooksFailed(Exception):
    """A scheduled job ran every book; these failed (each logged with its traceback)."""

    def __init__(self, job: str, book_ids: list, result=None):
        self.job, self.book_ids, self.result = job, book_ids, result
        super().__init__(f"{job}: {len(book_ids)} book(s) failed ({', '.join(str(pk) for pk in book_ids)}); "
                         f"the others ran: {result}")


class BookFailures:
    def __init__(self, job: str):
        self.job = job
        self.book_ids: list = []

    def isolated(self, book_id) -> "_Isolated":
        return _Isolated(self, book_id)

    def finish(self, result):
        if self.book_ids:
            raise BooksFailed(self.job, self.book_ids, result)
        return result


class _Isolated:
    """One book's work: an exception is logged, remembered and swallowed. Inside a transaction (a test's, or a
    caller's), the work gets a savepoint, so a failed statement does not spoil the books after it."""

    def __init__(self, failures: BookFailures, book_id):
        self.failures, self.book_id = failures, book_id
        self.savepoint = None

    def __enter__(self):
        if connection.in_atomic_block:
            self.savepoint = transaction.atomic()
            self.savepoint.__enter__()
        return self

    def __exit__(self, exc_type, exc, traceback):
        if self.savepoint is not None:
            self.savepoint.__exit__(exc_type, exc, traceback)  # rolls the book's work back on an exception
        if exc_type is None or not issubclass(exc_type, Exception):
            return False
        logger.error("scheduled job %s failed for book %s; the other books go on", self.failures.job, self.book_id,
                     exc_info=(exc_type, exc, traceback))
        if self.book_id not in self.failures.book_ids:
            self.failures.book_ids.append(self.book_id)
        return True
