from django.core.management.base import BaseCommand, CommandError

from config.core import clock
from config.core.errors import ApiError


class Command(BaseCommand):
    help = "Run every periodic job once, as of --now (default: the real time)."

    def add_arguments(self, parser):
        parser.add_argument("--now", help="ISO 8601 instant to run the jobs as of")

    def handle(self, *args, **options):
        from config.schedule import SCHEDULED_JOBS

        try:
            now = clock.parse_instant(options["now"], field="now") if options["now"] else clock.now()
        except ApiError as exc:
            raise CommandError(str(exc.message))
        for job in SCHEDULED_JOBS:
            result = job.run(now=now)
            self.stdout.write(f"{job.name}: {result if result is not None else 'done'}")
