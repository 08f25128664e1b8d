"""Claiming a periodic job's run where no broker hands each run to one worker (the zero-setup default's web
processes, config/in_process_schedule.py): the database decides which process runs it."""
from datetime import datetime, timedelta

from jobs.models import PeriodicRun


def periodic_run_claim(*, name: str, every_seconds: float, now: datetime) -> bool:
    """True for the one caller that takes the run of job `name` due at `now` (a job never run is due); the job is
    then next due `every_seconds` later. Outside a transaction each statement commits at once: a claim is never
    rolled back by the job it lets run (the job is safe to run again; a run lost with its process is the next one's
    to do).

    The update moves the due time on only while it is due: concurrent claimants queue on the row, and each after
    the first finds it no longer due and updates nothing. A job's first claim creates its row; of two creators at
    once, the one whose insert loses on the primary key is not the one that created it."""
    next_due = now + timedelta(seconds=every_seconds)
    if PeriodicRun.objects.filter(name=name, due_at__lte=now).update(due_at=next_due, claimed_at=now):
        return True
    _, created = PeriodicRun.objects.get_or_create(name=name, defaults={"due_at": next_due, "claimed_at": now})
    return created
