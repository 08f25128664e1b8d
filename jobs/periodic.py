"""Claiming a periodic job's run where no broker hands each run to one worker (the zero-setup default's web
processes, config/in_process_schedule.py): the database decides which process runs it."""
from datetime import datetime, timedelta

from django.db import connection

from jobs.models import PeriodicRun

_TABLE = PeriodicRun._meta.db_table
# One statement: a first claim inserts the row; a later one moves `due_at` on only while it is due. Concurrent
# claimants queue on the row, and each after the first finds it no longer due and gets no row back.
_CLAIM = (f"INSERT INTO {_TABLE} AS run (name, due_at, claimed_at) VALUES (%s, %s, %s) "
          f"ON CONFLICT (name) DO UPDATE SET due_at = EXCLUDED.due_at, claimed_at = EXCLUDED.claimed_at "
          f"WHERE run.due_at <= %s RETURNING run.name")


def periodic_run_claim(*, name: str, every_seconds: float, now: datetime) -> bool:
    """True for the one caller that takes the run of job `name` due at `now` (a job never run is due); the job is
    then next due `every_seconds` later. Commits at once outside a transaction: a claim is never rolled back by
    the job it lets run (the job is safe to run again; a run lost with its process is the next one's to do)."""
    with connection.cursor() as cursor:
        cursor.execute(_CLAIM, [name, now + timedelta(seconds=every_seconds), now, now])
        return cursor.fetchone() is not None
