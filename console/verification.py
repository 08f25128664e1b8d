"""The ledger verifier: every figure derived from a book's ledger recomputed from the ledger and compared
(docs/operations.md, "When the verifier finds drift"; docs/decisions/reliability.md, "Derived figures").

`ledger_verify` runs the checks of each app for one book or every book with events (or rows derived from them)
and answers what differs; with `repair` each check rewrites its derived rows to the ledger's figures (never the
ledger) and the answer says what it changed. `ledger_verify_all` is the scheduled job: drift is logged as an error
and kept as `LedgerDrift` rows, which the console's dashboard shows until a run no longer finds them.
`manage.py ledger_verify` is the operator's command. This module names every app's check, so it lives in the
composition root.
"""
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import reduce
from operator import or_

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from billing.verification import (credit_pool_differences, draft_invoice_differences, events_billed_twice,
                                  final_invoice_differences, invoice_total_differences)
from accounts.models import Book
from console.models import LedgerDrift
from core.jobs import BookFailures
from core.scoping import owned
from customers.models import RollupBacklog, UsageDailyRollup, UsageEvent, UsageEventKey
from customers.rollup import MEASURES, analytics_rollup_differences
from customers.verification import Finding, backlog_orphans, key_orphans, keys_missing
from matters.models import MatterAttribution
from matters.verification import attribution_orphans

logger = logging.getLogger("billing.verification")


def _rollup(*, book, now, repair) -> list[Finding]:
    findings = []
    for difference in analytics_rollup_differences(book_id=book.pk, repair=repair):
        key = difference["key"]
        subject = (f"rollup grain {key['grain']} {key['day']} customer {key['customer_id']} agent {key['agent_id']} "
                   f"signal {key['signal_id']} model {key['model']}")
        changed = [m for m in MEASURES if difference["ledger"][m] != difference["rollup"][m]]
        findings.append(Finding(subject, ", ".join(f"{m} {difference['ledger'][m]}" for m in changed),
                                ", ".join(f"{m} {difference['rollup'][m]}" for m in changed), key["day"]))
    return findings


# Every check, by name: what it compares is in the named function's module docstring.
CHECKS: dict[str, Callable[..., list[Finding]]] = {
    "rollup": _rollup,
    "rollup_backlog": lambda *, book, now, repair: backlog_orphans(book_id=book.pk, repair=repair),
    "idempotency_keys": lambda *, book, now, repair: key_orphans(book_id=book.pk, repair=repair)
    + keys_missing(book_id=book.pk, repair=repair),
    "matter_attributions": lambda *, book, now, repair: attribution_orphans(book=book, repair=repair),
    "credit_pools": credit_pool_differences,
    "draft_invoices": draft_invoice_differences,
    "final_invoices": final_invoice_differences,
    "events_billed_once": events_billed_twice,
    "invoice_totals": invoice_total_differences,
}


@dataclass
class BookReport:
    book: Book
    findings: dict[str, list[Finding]] = field(default_factory=dict)

    @property
    def drift(self) -> int:
        return sum(len(found) for found in self.findings.values())


def books_to_verify() -> list[Book]:
    """The books with events, or with rows derived from events: a book whose ledger lost every event still has
    its rollup, keys, backlog and attributions compared (each an EXISTS on an index that starts with the book)."""
    derived = [model.objects.filter(book_id=OuterRef("pk"))
               for model in (UsageEvent, UsageDailyRollup, UsageEventKey, RollupBacklog, MatterAttribution)]
    books = Book.objects.filter(reduce(or_, (Q(Exists(rows)) for rows in derived)))
    return list(books.select_related("organization").order_by("pk"))


def ledger_verify(*, now: datetime, book: Book | None = None, repair: bool = False,
                  checks: tuple[str, ...] = tuple(CHECKS)) -> list[BookReport]:
    """Run `checks` for `book` (default: `books_to_verify`); with `repair`, each check sets what it found
    to the ledger's figures."""
    reports = []
    for one in [book] if book is not None else books_to_verify():
        report = BookReport(one)
        for name in checks:
            report.findings[name] = CHECKS[name](book=one, now=now, repair=repair)
        reports.append(report)
    return reports


def _remember(report: BookReport, now: datetime) -> None:
    """Keep what this run found for the book (the dashboard reads it) and forget what it no longer finds."""
    with transaction.atomic():
        kept = []
        for check, found in report.findings.items():
            for finding in found:
                row, created = LedgerDrift.objects.get_or_create(
                    book=report.book, check_name=check, subject=finding.subject[:500],
                    defaults={"ledger": finding.ledger, "derived": finding.derived, "since": _instant(finding.since),
                              "first_found_at": now, "last_found_at": now})
                if not created:
                    LedgerDrift.objects.filter(pk=row.pk).update(ledger=finding.ledger, derived=finding.derived,
                                                                 last_found_at=now)
                kept.append(row.pk)
        owned(LedgerDrift, report.book).exclude(pk__in=kept).delete()


def _instant(value):
    if value is None or isinstance(value, datetime):
        return value
    return datetime(value.year, value.month, value.day, tzinfo=UTC)  # a rollup row's day


def ledger_verify_all(*, now: datetime) -> int:
    """The scheduled job: verify every book of `books_to_verify`, log each drift as an error, keep it for the
    console's dashboard; returns the number of findings."""
    failures = BookFailures("ledger-verify")
    total = 0
    checked = set()
    for book in books_to_verify():
        checked.add(book.pk)
        with failures.isolated(book.pk):
            [report] = ledger_verify(now=now, book=book)
            for check, found in report.findings.items():
                for finding in found:
                    logger.error("ledger drift in book %s (%s): %s: the ledger says %s, the derived figure %s",
                                 book.pk, check, finding.subject, finding.ledger, finding.derived)
            _remember(report, now)
            total += report.drift
    LedgerDrift.objects.exclude(book_id__in=checked).delete()
    return failures.finish(total)
