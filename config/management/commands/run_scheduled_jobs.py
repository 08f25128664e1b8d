from django.core.management.base import BaseCommand, CommandError

from core import clock
from core.background import background_work_finish
from core.errors import ApiError
from config.schedule import SCHEDULED_JOBS, scheduled_job_run


def _said(result) -> str:
    """A job's result as a line says it: `restarted 0, failed 0, deleted 0` for counts by name (not a dict)."""
    if result is None:
        return "done"
    if isinstance(result, dict):
        return ", ".join(f"{str(name).replace('_', ' ')} {value}" for name, value in result.items()) or "done"
    return str(result)


class Command(BaseCommand):
    help = ("Run every periodic job once, as of --now (default: the real time). A job that fails for one book "
            "(organization) is logged and the other books and jobs still run; the exit status is 1 if any failed.")

    def add_arguments(self, parser):
        parser.add_argument("--now", help="ISO 8601 instant to run the jobs as of")

    def handle(self, *args, **options):
        try:
            now = clock.parse_instant(options["now"], field="now") if options["now"] else clock.now()
        except ApiError as exc:
            raise CommandError(str(exc.message))
        failed = []
        for job in SCHEDULED_JOBS:
            outcome = scheduled_job_run(job, now=now)
            if outcome.failed_books:  # the job ran every book; these failed (logged with their tracebacks)
                books = outcome.failed_books
                failed.append(f"{job.name} ({len(books)} book(s): {', '.join(map(str, books))})")
                self.stdout.write(f"{job.name}: {_said(outcome.result)}; FAILED for {len(books)} book(s)")
            elif outcome.failed:  # before reaching the books (logged): the later jobs still run
                failed.append(job.name)
                self.stdout.write(f"{job.name}: FAILED")
            else:
                self.stdout.write(f"{job.name}: {_said(outcome.result)}")
        # Without a broker the jobs hand work (webhook retries, long jobs) to this process's threads: done before
        # the command exits, or the threads die with it.
        background_work_finish()
        if failed:
            raise CommandError(f"{len(failed)} scheduled job(s) failed (see the log; the rest ran): "
                               f"{'; '.join(failed)}")
