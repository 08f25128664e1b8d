from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError

from accounts.models import Book
from core import clock
from core.database import lock_wait_failed
from customers.backfill import events_reprice_start
from customers.models import ArchivedMonth
from customers.partitions import (
    archive_name,
    ledger_partition_detach,
    ledger_partition_restore,
    ledger_partitions,
    ledger_partitions_ensure,
    ledger_partitions_maintain,
    next_month,
    parse_month,
)
from customers.price_overrides import restored_month_reprice_start


class Command(BaseCommand):
    help = ("The usage ledger's monthly partitions (docs/operations.md). `list` shows them; `ensure` does what "
            "the scheduled job does (this month and the next ones partitioned, rows of the settle window "
            "waiting in the default partition moved to their months) and `ensure YYYY-MM ...` also partitions "
            "the months named, whatever their date; `detach YYYY-MM` takes a past month out of the ledger as "
            "a table of its own, to dump and drop; `restore YYYY-MM` brings that table's events back.")

    def add_arguments(self, parser):
        commands = parser.add_subparsers(dest="action", required=True)
        commands.add_parser("list", help="Each partition, its range and PostgreSQL's estimate of its rows.")
        ensure = commands.add_parser("ensure", help="Create the partitions due; move the default partition's rows.")
        ensure.add_argument("months", nargs="*", help="UTC months (YYYY-MM) to partition as well, whatever their "
                                                      "date: their rows leave the default partition.")
        detach = commands.add_parser("detach", help="Detach one month for archiving.")
        detach.add_argument("month", help="The UTC month, YYYY-MM.")
        restore = commands.add_parser("restore", help="Bring a detached month's table back into the ledger.")
        restore.add_argument("month", help="The UTC month, YYYY-MM.")
        mark = commands.add_parser("mark-archived", help="Record a month whose events left the ledger before "
                                                         "detaches were recorded, its table dropped since.")
        mark.add_argument("month", help="The UTC month, YYYY-MM.")

    def handle(self, *args, **options):
        action = options["action"]
        if action == "list":
            for partition in ledger_partitions():
                if partition.is_default:
                    span = "DEFAULT (any month without a partition)"
                else:
                    start = f"{partition.start:%Y-%m-%d}" if partition.start else "the earliest"
                    span = f"{start} .. {partition.end:%Y-%m-%d}" if partition.end else f"{start} .. the latest"
                rows = "not analyzed" if partition.estimated_rows < 0 else f"~{partition.estimated_rows} rows"
                self.stdout.write(f"{partition.name}  {span}  {rows}")
        elif action == "ensure":
            try:
                named = [parse_month(text) for text in options["months"]]
            except ValueError as error:
                raise CommandError(str(error)) from error
            created = ledger_partitions_maintain(now=clock.now()) + len(ledger_partitions_ensure(months=named))
            self.stdout.write(f"partitions created: {created}")
        elif action == "restore":
            self._restore(options["month"])
        elif action == "mark-archived":
            try:
                month = parse_month(options["month"])
            except ValueError as error:
                raise CommandError(str(error)) from error
            _, created = ArchivedMonth.objects.get_or_create(month=month, defaults={
                "archive": archive_name(month), "rows": 0, "detached_at": clock.now()})
            self.stdout.write(f"{month:%Y-%m} {'recorded' if created else 'was recorded already'} as archived: "
                              f"the ledger verifier compares no figure of it.")
        else:
            try:
                month = parse_month(options["month"])
                detached = ledger_partition_detach(month, now=clock.now())
            except ValueError as error:
                raise CommandError(str(error)) from error
            except OperationalError as error:
                if not lock_wait_failed(error):
                    raise
                raise CommandError("The ledger's reads or writes in flight kept its lock for longer than the "
                                   "timeout; nothing was changed: run it again.") from error
            self.stdout.write(
                f"detached {detached.month:%Y-%m}: {detached.rows} events now in table {detached.archive} "
                f"({detached.keys_released} idempotency keys released, the month's rollup rows removed).\n"
                f"Archive it, then drop it:\n"
                f"  pg_dump --table={detached.archive} --format=custom --file={detached.archive}.dump \"$DATABASE_URL\"\n"
                f"  psql \"$DATABASE_URL\" -c 'DROP TABLE {detached.archive}'")

    def _restore(self, text: str) -> None:
        try:
            restored = ledger_partition_restore(parse_month(text))
        except ValueError as error:
            raise CommandError(str(error)) from error
        for book in Book.objects.filter(pk__in=restored.unpriced_books):
            events_reprice_start(book=book, created_by="ledger_partitions restore")
        repricing = [job for book in Book.objects.filter(pk__in=restored.books)
                     for job in restored_month_reprice_start(book=book, start=restored.month,
                                                             end=next_month(restored.month),
                                                             created_by="ledger_partitions restore")]
        left_out = (f"; {restored.left_out} left out (their idempotency key was recorded again after the detach, "
                    f"or they were back already)" if restored.left_out else "")
        self.stdout.write(f"restored {restored.month:%Y-%m}: {restored.rows} events back in the ledger with their "
                          f"idempotency keys, waiting for the analytics rollup{left_out}; table {restored.archive} "
                          f"dropped.")
        if repricing:
            self.stdout.write(f"{len(repricing)} price override(s) in force for the month price its events "
                              f"again: jobs {', '.join(str(job.pk) for job in repricing)} (GET /v1/jobs/{{id}}).")
