from django.core.management.base import BaseCommand, CommandError

from catalog.services import catalog_load
from catalog.sources import corrected_external_ids
from core import clock
from core.progress import ProgressBar
from jobs.models import JobStatus
from jobs.services import jobs_run_or_follow


REPORTED_CHANGES = 20  # at most this many changed entries are named on the summary line (-v 2 lists every one)


class Command(BaseCommand):
    help = ("Load the services catalog from catalog/data (idempotent: ids stay, rates update, dropped entries go "
            "inactive), then price the unpriced events it can price now: one job per book, which this command runs "
            "itself unless a worker has taken it up, with a progress bar on a terminal (plain lines otherwise).")

    def add_arguments(self, parser):
        parser.add_argument("--no-wait", action="store_true",
                            help="Leave the pricing jobs to the workers and return once the catalog is loaded.")

    def handle(self, *args, **options):
        started = []
        result = catalog_load(now=clock.now(), started_jobs=started)
        reviewed = corrected_external_ids()
        updated = {external_id: fields for external_id, fields in result.changes.items() if fields != ["new"]}
        if result.created or result.updated or result.deactivated:
            summary = (f"catalog: {result.created} created, {result.updated} updated, {result.unchanged} unchanged, "
                       f"{result.deactivated} deactivated")
        else:  # the usual run after the first: a line of zeros read as if nothing had loaded
            summary = f"catalog: already up to date, {result.unchanged} entries (none created, updated or deactivated)"
        summary += f"; its prices include {len(reviewed)} reviewed corrections of the price data"
        if updated and len(updated) <= REPORTED_CHANGES:
            summary += "; changed: " + ", ".join(f"{external_id} ({', '.join(fields)})"
                                                 for external_id, fields in updated.items())
        self.stdout.write(summary)
        if options["verbosity"] >= 2:
            for external_id, fields in result.changes.items():
                self.stdout.write(f"  changed {external_id}: {', '.join(fields)}")
            for external_id, correction in reviewed.items():
                self.stdout.write(f"  reviewed correction {external_id}: {', '.join(sorted(correction['set']))} "
                                  f"(checked {correction['checked']} against {correction['source']})")
        if not started:
            return
        if options["no_wait"]:
            self.stdout.write(f"pricing unpriced events of {len(started)} book(s) in the background: jobs "
                              f"{', '.join(str(job.pk) for job in started)}")
            return
        bar = ProgressBar(self.stdout, f"Checking unpriced events of {len(started)} book(s)")

        def show(jobs):
            totals = [job.total for job in jobs]
            bar.update(sum(job.done for job in jobs), None if None in totals else sum(totals))
        jobs = jobs_run_or_follow([job.pk for job in started], on_update=show)
        bar.finish()
        priced = sum((job.result or {}).get("eventsPriced", 0) for job in jobs)
        checked = sum(job.done or 0 for job in jobs)
        failed = [job for job in jobs if job.status == JobStatus.FAILED]
        line = f"unpriced events: {priced:,} of {checked:,} priced"
        if priced < checked and not failed:
            # The bar counts the events checked; those left name models the catalog does not price.
            line += ("; the others name models the catalog does not price: map them to catalog entries "
                     "(POST /v1/events/map-model, or the console's usage events)")
        self.stdout.write(line)
        if failed:
            raise CommandError("; ".join(f"job {job.pk} (book {job.book_id}) failed: {job.error}" for job in failed))
