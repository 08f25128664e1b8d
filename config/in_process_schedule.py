"""The periodic jobs without a broker: the zero-setup default (`REDIS_URL` unset) has no Celery beat, so each web
process runs a scheduler thread (started by config/web_server.py) that wakes every TICK_SECONDS and runs the jobs of
config/schedule.py that are due. Each run is claimed in the database first (`jobs.periodic.periodic_run_claim`): however
many web processes there are, one of them runs it, and a process that stops leaves the next runs to the others.

With a broker, beat enqueues the same jobs for the workers and this starts nothing. The jobs are the same functions
either way, each safe to run twice (config/schedule.py), so a run lost with its process is done by the next one."""
import logging
import threading
import time

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection

from config.schedule import SCHEDULED_JOBS, scheduled_job_run
from core import clock
from jobs.periodic import periodic_run_claim

logger = logging.getLogger("billing.jobs")

# How often a process looks for due runs: the shortest job interval (webhook retries, 10 seconds) is kept to within
# a tick, and a look costs one short statement per job.
TICK_SECONDS = 5.0

_thread: threading.Thread | None = None


def periodic_jobs_run_due(*, now) -> list[str]:
    """Run each job whose run this process claims as of `now`, in the schedule's order; returns their names. A job
    that fails is logged and the next ones still run; when the database cannot be reached, the rest wait for the
    next tick (their runs are not claimed; the thread opens a new connection for each tick)."""
    ran = []
    for job in SCHEDULED_JOBS:
        try:
            claimed = periodic_run_claim(name=job.name, every_seconds=job.every_seconds, now=now)
        except DatabaseError:
            logger.warning("periodic jobs: the database did not answer; trying again in %s seconds", TICK_SECONDS,
                           exc_info=True)
            return ran
        if not claimed:
            continue
        ran.append(job.name)
        outcome = scheduled_job_run(job, now=now)
        if outcome.failed_books:  # each book's failure was logged with its traceback by the job
            logger.warning("scheduled job %s failed for %s book(s)", job.name, len(outcome.failed_books))
    return ran


def _loop() -> None:
    while True:
        time.sleep(TICK_SECONDS)
        close_old_connections()
        try:
            periodic_jobs_run_due(now=clock.now())
        except Exception:  # whatever happens, the thread lives on to the next tick
            logger.exception("periodic jobs: a tick failed")
        finally:
            connection.close()  # no idle connection held between ticks


def periodic_jobs_start_without_broker() -> bool:
    """Start this process's scheduler thread when no broker is configured; once per process. True when started."""
    global _thread
    if settings.REDIS_URL or _thread is not None:
        return False
    _thread = threading.Thread(target=_loop, name="periodic-jobs", daemon=True)
    _thread.start()
    return True
