from django.core.management.base import BaseCommand, CommandError

from accounts.models import Book
from console.verification import CHECKS, ledger_verify
from core import clock


class Command(BaseCommand):
    help = ("Recompute every figure derived from the usage ledger (the analytics rollup and its backlog, the "
            "idempotency keys, matter attributions, settled credit-pool periods, draft and final invoices) and report "
            "what "
            "differs, per book. --repair rewrites the derived rows (never the ledger) and says what it changed. "
            "Exit status 1 when drift was found (and, with --repair, after repairing it).")

    def add_arguments(self, parser):
        parser.add_argument("--book", help="the id of one book (default: every book with events or rows derived "
                                           "from them)")
        parser.add_argument("--repair", action="store_true", help="set each derived figure to the ledger's")
        parser.add_argument("--check", action="append", choices=sorted(CHECKS),
                            help="only this check (repeatable; default: all)")

    def handle(self, *args, **options):
        book = None
        if options["book"]:
            book = Book.objects.filter(pk=options["book"]).first() if _is_uuid(options["book"]) else None
            if book is None:
                raise CommandError(f"No book with id {options['book']}.")
        reports = ledger_verify(now=clock.now(), book=book, repair=options["repair"],
                                checks=tuple(options["check"] or CHECKS))
        drift = 0
        for report in reports:
            self.stdout.write(f"book {report.book.pk} ({report.book}): "
                              f"{report.drift or 'no'} difference(s) from the ledger")
            for check, found in report.findings.items():
                for finding in found:
                    since = f" (since {finding.since:%Y-%m-%d})" if finding.since else ""
                    verb = "repaired" if options["repair"] else "differs"
                    self.stdout.write(f"  {check}: {finding.subject}{since} {verb}: the ledger says {finding.ledger}; "
                                      f"derived: {finding.derived}")
            drift += report.drift
        self.stdout.write(f"{len(reports)} book(s) verified, {drift} difference(s)"
                          + (" repaired" if options["repair"] and drift else ""))
        if drift:
            raise SystemExit(1)


def _is_uuid(text: str) -> bool:
    import uuid

    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True
