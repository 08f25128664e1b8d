"""Running long work as a job a person can watch.

An operation that starts long work creates a `Job` (`job_create`) naming the Celery task that does it, hands it
to a runner on commit (`job_start`) and answers the job's id; `GET /v1/jobs/{id}` and the console's Jobs page
read it. Where the work runs:

- with REDIS_URL, in a Celery worker (`task.delay`);
- without it (the zero-setup `make run`: no broker, no worker), on a thread of this process
  (core/background.py), after the response, as a worker would;
- inline, where an operation does a bounded part of the work itself after its commit (`job_run_inline`); when that
  run fails, the job is handed to the background rather than the committed operation answering 5xx.

The task is thin: `job_run(job_id, work)` takes the job up (`queued`, or `running` with no progress for
JOBS_STALE_SECONDS: its runner was lost), runs `work(progress)` and records `succeeded` with the work's result
or `failed` with the error. The work is idempotent (it acts on what is still to do), so a job taken up again,
or a task delivered twice, repeats nothing; a finished job is left alone.

Progress: the work's chunked loop calls `progress.expect(remaining)` then `progress.advance(count)` per chunk
(core/progress.py); each writes `done` and `total` to the job's row (`total` is what is done plus what
remains), with the last id walked and the items changed, so a job taken up again goes on from where it was and
answers the changes of all its runs; each report also tells the watchers of this process
(`watching`), through which a management command draws its bar.
"""
import logging
import threading
import time
from collections.abc import Callable, Iterable
from contextlib import contextmanager
from datetime import datetime, timedelta
from uuid import UUID

from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils.module_loading import import_string

from core import clock
from core.background import TaskRunner
from core.errors import ApiError
from core.progress import NO_PROGRESS, Progress, Resumed
from jobs.models import FINISHED, Job, JobStatus
from jobs.serializers import JobOut
from webhooks.events import emit
from webhooks.models import EventType

logger = logging.getLogger("billing.jobs")

ERROR_MAX_CHARS = 2000


def job_create(*, book, kind: str, task_path: str, task_args: Iterable = (), created_by: str = "",
               status: str = JobStatus.QUEUED, total: int | None = None) -> Job:
    """A job of `book` run by the Celery task at `task_path` (its dotted path) with `(*task_args, job_id)`."""
    job = Job(book=book, kind=kind, status=status, total=total, created_by=created_by[:64], task_path=task_path)
    if status == JobStatus.RUNNING:
        job.started_at, job.attempts = clock.now(), 1
    # Each argument as text (ids, Decimals), None kept as None: an override of every date has no `effective_from`.
    job.task_args = [*(None if arg is None else str(arg) for arg in task_args), str(job.pk)]
    job.save(force_insert=True)
    return job


def job_start(job: Job) -> None:
    """Hand the job to its runner once the caller's transaction commits (the runner reads what it wrote)."""
    # Robust: the job is committed; if its runner cannot be reached, housekeeping starts it (jobs_housekeeping).
    transaction.on_commit(lambda: _dispatch(job.task_path, job.task_args), robust=True)


def _dispatch(task_path: str, task_args: list) -> None:
    runner.dispatch(task_path, task_args)


# Without Redis: the jobs this process started, run by a thread of the process (one after another).
runner = TaskRunner("jobs")


# --------------------------------------------------------------------------- running


class JobProgress:
    """Progress of the job this runner holds, written to its row at each report (the runner is its only writer:
    it took the job up)."""

    def __init__(self, job: Job):
        self.job = job
        self.resumed = Resumed(job.resume_after, job.changed)  # as the job was when this run took it up

    def expect(self, remaining: int) -> None:
        self.job.total = self.job.done + max(0, remaining)
        self._save()

    def advance(self, count: int, *, through: UUID | None = None, changed: int = 0) -> None:
        self.job.done += count
        if self.job.total is not None and self.job.done > self.job.total:
            self.job.total = self.job.done  # items that arrived since the count
        if through is not None:
            self.job.resume_after = through
        self.job.changed += changed
        self._save()

    def _save(self) -> None:
        self.job.updated_at = clock.now()
        Job.objects.filter(pk=self.job.pk).update(done=self.job.done, total=self.job.total,
                                                  resume_after=self.job.resume_after, changed=self.job.changed,
                                                  updated_at=self.job.updated_at)
        _tell_watchers(self.job)


def _stale_before(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.JOBS_STALE_SECONDS)


def job_take(job_id) -> Job | None:
    """Take the job up for this runner: a queued job, or a running one whose runner was lost (no progress for
    JOBS_STALE_SECONDS). None when it is finished, unknown, or another runner holds it."""
    now = clock.now()
    taken = Job.objects.filter(Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING,
                                                              updated_at__lt=_stale_before(now)), pk=job_id)
    if not taken.update(status=JobStatus.RUNNING, started_at=Coalesce("started_at", now), updated_at=now,
                        attempts=F("attempts") + 1):
        return None
    return Job.objects.get(pk=job_id)


def job_run(job, work: Callable[[Progress], dict]) -> dict | None:
    """Run `work(progress)` as the job (a `Job` this caller created running, or the id of one to take up) and
    record how it ended; returns the work's result, None when the job was not taken up or failed. Without a job
    (None: a task sent before jobs existed) the work runs with no progress."""
    if job is None:
        return work(NO_PROGRESS)
    if not isinstance(job, Job):
        job = job_take(job)
        if job is None:
            return None
    try:
        result = work(JobProgress(job))
    except Exception as exc:
        if _connection_lost(exc) and job.attempts < settings.JOBS_MAX_ATTEMPTS:
            # PostgreSQL went away under the run (a restart, a failover, a terminated backend): no failure of the
            # work, which is idempotent. Queued again for its runner; when even that cannot be written, jobs
            # housekeeping starts it again once it has not moved for JOBS_STALE_SECONDS.
            connection.close()  # the broken one: the hand-over opens a new one
            job_hand_over_after_failure(job)
            return None
        job_fail(job, exc)
        logger.exception("job %s (%s of book %s) failed", job.pk, job.kind, job.book_id)
        return None
    job_succeed(job, result)
    return result


def _connection_lost(exc: Exception) -> bool:
    """Whether the run failed because its database connection broke (Django has closed it, or it is closed): not
    a lock timeout or a statement the database refused, which fail the same way every time."""
    if not isinstance(exc, (OperationalError, InterfaceError)):
        return False
    held = connection.connection
    return held is None or held.closed


def job_run_inline(job: Job, work: Callable[[Progress], dict]) -> dict | None:
    """Run `work` as the job (created running) inside a request whose writes are already committed; returns the
    work's result, or None when the run failed and the job went to the background instead (the operation then
    answers that its job runs there). Such a request never answers 5xx (contract.md "Derived figures"): what it
    stored needs its job to finish, so a failure (PostgreSQL gone mid-run, a lock timeout) queues the job for its
    runner again, and a job whose hand-over could not be written either stays running, which jobs housekeeping
    starts again once it has not moved for JOBS_STALE_SECONDS. The work is idempotent: a run taken up again does
    what is left."""
    try:
        result = work(JobProgress(job))
    except Exception:
        job_hand_over_after_failure(job)
        return None
    try:
        job_succeed(job, result)
    except Exception:  # the work is done and committed; only its job's row is behind (housekeeping ends it)
        logger.warning("job %s: its success could not be recorded; jobs housekeeping runs it again", job.pk,
                       exc_info=True)
    return result


def _held(job: Job):
    """The job's row while this runner still holds it: running, taken up as many times as when this runner took it.
    A runner that stalled past JOBS_STALE_SECONDS may find its job failed by housekeeping or taken up by another
    runner; its outcome is then not the job's (one job reports one outcome, `job.succeeded` or `job.failed`)."""
    return Job.objects.filter(pk=job.pk, status=JobStatus.RUNNING, attempts=job.attempts)


def job_succeed(job: Job, result: dict) -> None:
    job.status, job.result, job.finished_at = JobStatus.SUCCEEDED, result, clock.now()
    job.total = max(job.total or 0, job.done)
    job.updated_at = job.finished_at
    with transaction.atomic():
        if not _held(job).update(status=job.status, result=result, total=job.total, done=job.done,
                                 finished_at=job.finished_at, updated_at=job.updated_at):
            return
        emit(job.book_id, EventType.JOB_SUCCEEDED, JobOut(job).data, now=job.finished_at)
    _tell_watchers(job)


def job_fail(job: Job, exc: BaseException | str) -> None:
    job.status, job.error, job.finished_at = JobStatus.FAILED, _error_text(job, exc), clock.now()
    job.updated_at = job.finished_at
    with transaction.atomic():
        if not _held(job).update(status=job.status, error=job.error, done=job.done, finished_at=job.finished_at,
                                 updated_at=job.updated_at):
            return
        emit(job.book_id, EventType.JOB_FAILED, JobOut(job).data, now=job.finished_at)
    _tell_watchers(job)


def job_hand_over_after_failure(job: Job) -> bool:
    """Queue a job whose inline run failed (the exception being handled) for its runner; False when even that could
    not be written: jobs housekeeping starts it again once it has not moved for JOBS_STALE_SECONDS."""
    logger.warning("job %s (%s of book %s): its inline run failed; it goes on in the background", job.pk, job.kind,
                   job.book_id, exc_info=True)
    try:
        job_hand_over(job)
    except Exception:
        logger.warning("job %s could not be handed over; jobs housekeeping starts it again", job.pk, exc_info=True)
        return False
    return True


def job_hand_over(job: Job) -> None:
    """The inline part of a job is over and the rest runs in the background: queue it again for its runner."""
    job.status = JobStatus.QUEUED
    Job.objects.filter(pk=job.pk).update(status=job.status, updated_at=clock.now())
    job_start(job)


def _error_text(job: Job, exc: BaseException | str) -> str:
    """What the job's readers see: a service's own message as is; anything unexpected by its type only (its
    details, which may name internals, are in the log under the job's id)."""
    if isinstance(exc, str):
        return exc[:ERROR_MAX_CHARS]
    if isinstance(exc, ApiError):
        message = exc.message if isinstance(exc.message, str) else "; ".join(map(str, exc.message))
        return message[:ERROR_MAX_CHARS]
    return (f"The work stopped on an unexpected error ({type(exc).__name__}); the log has its details under job "
            f"{job.pk}. Items done so far stay done; starting the operation again does the rest.")


# --------------------------------------------------------------------------- watching (management commands)

_watchers: list[Callable[[Job], None]] = []
_watchers_lock = threading.Lock()


def _tell_watchers(job: Job) -> None:
    for watcher in tuple(_watchers):  # a copy: another thread may add or remove one meanwhile
        watcher(job)


@contextmanager
def watching(watcher: Callable[[Job], None]):
    """Within the block, `watcher(job)` hears every progress report of the jobs this process runs (eager
    tasks, the in-process runner, `jobs_run_or_follow`)."""
    with _watchers_lock:
        _watchers.append(watcher)
    try:
        yield
    finally:
        with _watchers_lock:
            _watchers.remove(watcher)


def jobs_run_or_follow(job_ids: list[UUID], *, on_update: Callable[[list[Job]], None],
                       poll_seconds: float = 0.5) -> list[Job]:
    """Until every job is finished: run in this thread each one no runner holds (queued, or stale), and follow
    the others (a worker's) by reading their rows. `on_update(jobs)` hears each change of their progress.
    Returns the finished jobs."""
    latest: dict = {}

    def heard(job: Job) -> None:
        if job.pk in latest:
            latest[job.pk] = job
            on_update(list(latest.values()))

    latest.update((job.pk, job) for job in Job.objects.filter(pk__in=job_ids))
    on_update(list(latest.values()))
    with watching(heard):
        while True:
            for job in list(latest.values()):
                if job.status == JobStatus.QUEUED or (job.status == JobStatus.RUNNING
                                                      and job.updated_at < _stale_before(clock.now())):
                    import_string(job.task_path)(*job.task_args)
            latest.update((job.pk, job) for job in Job.objects.filter(pk__in=job_ids))
            on_update(list(latest.values()))
            if all(job.status in FINISHED for job in latest.values()):
                return list(latest.values())
            time.sleep(poll_seconds)


# --------------------------------------------------------------------------- housekeeping


def _fail_stale(jobs, *, now: datetime, error: str) -> int:
    """Fail these stale jobs, each reported as `job.failed` in the same transaction; returns how many."""
    with transaction.atomic():
        failing = list(jobs.select_for_update(skip_locked=True).order_by("pk"))
        Job.objects.filter(pk__in=[job.pk for job in failing]).update(status=JobStatus.FAILED, finished_at=now,
                                                                      updated_at=now, error=error)
        for job in failing:
            job.status, job.finished_at, job.updated_at, job.error = JobStatus.FAILED, now, now, error
            emit(job.book_id, EventType.JOB_FAILED, JobOut(job).data, now=now)
    return len(failing)


# A queued job no runner has taken up yet is handed over again after this long, not JOBS_STALE_SECONDS: its message
# was most likely never published (the broker was down when the request that made it committed), and a second
# message for a job that is taken up meanwhile finds it running and does nothing (`job_take`).
UNSTARTED_SECONDS = 60


def jobs_housekeeping(*, now: datetime) -> dict:
    """Scheduled: start again the unfinished jobs that have not moved for JOBS_STALE_SECONDS (a lost worker, a
    web process stopped while it ran one, a lost broker message), or that no runner took up for UNSTARTED_SECONDS,
    failing those taken up JOBS_MAX_ATTEMPTS times already; delete finished jobs older than JOBS_KEEP_DAYS. Safe
    to run twice."""
    stale = Job.objects.filter(
        Q(status__in=[JobStatus.QUEUED, JobStatus.RUNNING], updated_at__lt=_stale_before(now))
        | Q(status=JobStatus.QUEUED, attempts=0, updated_at__lt=now - timedelta(seconds=UNSTARTED_SECONDS)))
    again = "Items done so far stay done; starting the operation again does the rest."
    failed = _fail_stale(stale.filter(task_path=""), now=now,
                         error=f"Stopped: its runner was lost and it names no task to start again. {again}")
    failed += _fail_stale(stale.filter(attempts__gte=settings.JOBS_MAX_ATTEMPTS), now=now,
                          error=f"Stopped: its runner was lost {settings.JOBS_MAX_ATTEMPTS} times. {again}")
    restarted = 0
    for job in stale.order_by("updated_at")[:1000]:  # the failed ones above are no longer stale
        # Queued again with a new message, and moved now: the next sweep leaves it to that message for another
        # JOBS_STALE_SECONDS.
        if Job.objects.filter(pk=job.pk, updated_at=job.updated_at).update(status=JobStatus.QUEUED, updated_at=now):
            _dispatch(job.task_path, job.task_args)
            restarted += 1
    deleted, _ = Job.objects.filter(status__in=FINISHED,
                                    finished_at__lt=now - timedelta(days=settings.JOBS_KEEP_DAYS)).delete()
    return {"restarted": restarted, "failed": failed, "deleted": deleted}
