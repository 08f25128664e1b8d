"""Work that follows a request, run in this process after the response: the stand-in for a Celery worker
when there is none (no REDIS_URL, so no broker and tasks run inline, inside the request that queued them).

`Coalescer` gathers items per key and runs `run(key, items)` once for everything added to a key within
`delay` seconds of the first add, on one daemon thread per process, with that thread's own database
connection (closed after each run). The request that adds only takes a lock. Work still pending when the
process exits normally (gunicorn's graceful stop) is run then; work of a process that is killed is lost, so
only work that something else redoes belongs here (billing/followup.py says what does).

`TaskRunner` is the usual way in: a Celery task handed over after a commit goes to the broker when there is
one and to such a thread when there is none (jobs, jobs/services.py; the ledger's partitions after a
back-filled batch, customers/ledger.py)."""
import atexit
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable, Iterable

import kombu.exceptions
import redis
from django.db import connections
from django.utils.module_loading import import_string

from core.redis_client import mark_unreachable, redis_client, unreachable

logger = logging.getLogger("billing.background")


FLUSH_WAIT_SECONDS = 120  # at most this for a run in progress on the thread (a webhook attempt times out sooner)
_coalescers: list["Coalescer"] = []


def background_work_finish() -> None:
    """Run what this process's background threads still hold and wait for what they are running: for a
    command about to exit (run_scheduled_jobs without a broker hands due webhook retries and jobs to them)."""
    for coalescer in _coalescers:
        coalescer.flush(wait_for_running=True)


class Coalescer:
    def __init__(self, name: str, run: Callable[[Hashable, set], object], *, delay: float):
        self.name, self._run, self.delay = name, run, delay
        self._pid = None  # the process whose thread this is: a forked child starts its own
        atexit.register(self.flush)
        _coalescers.append(self)

    def _reset_for_this_process(self) -> None:
        self._pid = os.getpid()
        self._condition = threading.Condition()
        self._pending: dict[Hashable, set] = {}
        self._due: dict[Hashable, float] = {}  # monotonic time at which the key's run starts
        self._running = False  # the thread is running a key it took: flush waits for it
        self._thread = threading.Thread(target=self._loop, name=self.name, daemon=True)
        self._thread.start()

    def add(self, key: Hashable, items: Iterable) -> None:
        """Add items to the key's next run (armed now, due `delay` seconds from now, if none is pending)."""
        if self._pid != os.getpid():
            self._reset_for_this_process()
        with self._condition:
            self._pending.setdefault(key, set()).update(items)
            if key not in self._due:
                self._due[key] = time.monotonic() + self.delay
                self._condition.notify()

    def flush(self, *, wait_for_running: bool = False) -> None:
        """Run every pending key now, in the calling thread (and its database connection). `wait_for_running`:
        then wait for the run the thread has already taken (a command that exits once its work is done; never
        at a web worker's exit, where a graceful stop has seconds and other buffers to write)."""
        if self._pid != os.getpid():
            return
        with self._condition:
            work = [(key, self._pending.pop(key, set())) for key in list(self._due)]
            self._due.clear()
        for key, items in work:
            self._run_one(key, items, on_own_thread=False)
        if wait_for_running:
            # A key the thread took just before is run by it, not here: a command exiting (a cron run of
            # run_scheduled_jobs) waits for it, or the daemon thread dies with the process and its work is lost.
            with self._condition:
                self._condition.wait_for(lambda: not self._running, timeout=FLUSH_WAIT_SECONDS)

    def _loop(self) -> None:
        while True:
            with self._condition:
                while True:
                    now = time.monotonic()
                    ready = next((key for key, due in self._due.items() if due <= now), None)
                    if ready is not None:
                        break
                    self._condition.wait(min(self._due.values()) - now if self._due else None)
                del self._due[ready]
                items = self._pending.pop(ready, set())
                self._running = True
            try:
                self._run_one(ready, items, on_own_thread=True)
            finally:
                with self._condition:
                    self._running = False
                    self._condition.notify_all()

    def _run_one(self, key: Hashable, items: set, *, on_own_thread: bool) -> None:
        try:
            self._run(key, items)
        except Exception:
            logger.exception("%s: the run for %s failed", self.name, key)
        finally:
            if on_own_thread:
                connections.close_all()  # this thread's connections only (Django's are per thread)


class TaskRunner:
    """Hands a Celery task over once the caller's transaction commits, as a worker would take it: with a broker
    (REDIS_URL) `task.delay(...)`; without one (the zero-setup `make run`), where `delay` would run the task
    inline, inside the request that asked for it, a thread of this process runs it after the response (calls
    one after another; the same call asked for again while pending runs once). Only for tasks that something
    else redoes if the process dies first (a scheduled job).

    `once_while_waiting`: with a broker too, the same call asked for again while one waits is published once.
    A mark in Redis (`SET NX`) says a call is waiting; the task calls `taken` before it reads, so it sees what
    every caller committed before then, and a caller after that asks anew. A task lost with its worker leaves the
    mark to expire after `MARK_SECONDS` (the scheduled job does the work meanwhile). For tasks asked by many
    requests in a row for the same work (the ledger's settle task during a back-fill)."""

    MARK_SECONDS = 60

    def __init__(self, name: str, *, once_while_waiting: bool = False):
        self.name = name
        self.once_while_waiting = once_while_waiting
        self.in_process = Coalescer(name, self._run_in_process, delay=0)

    def dispatch(self, task_path: str, task_args: Iterable = ()) -> None:
        """Run the Celery task at `task_path` (its dotted path) with `task_args` outside this request."""
        call = (task_path, tuple(task_args))
        client = redis_client()
        if client is None:
            self.in_process.add(call, [call])
            return
        marked = False
        if self.once_while_waiting:
            try:
                if not client.set(self._mark(call), 1, nx=True, ex=self.MARK_SECONDS):
                    return  # the waiting call has not started: it takes this caller's work too
                marked = True
                broker_pause_end()
            except redis.RedisError:
                pass  # published regardless: a run too many redoes work that is already done
        if not publish(*call) and marked:
            self.taken(*call)  # no run waits behind the mark: the next caller publishes again

    def taken(self, task_path: str, task_args: Iterable = ()) -> None:
        """Called by a `once_while_waiting` task before it reads: a caller from now on asks for another run."""
        client = redis_client()
        if client is not None:
            try:
                client.delete(self._mark((task_path, tuple(task_args))))
            except redis.RedisError:
                pass  # the mark expires on its own; the scheduled job does the work meanwhile

    def _mark(self, call: tuple) -> str:
        return f"task-waiting:{self.name}:{call[0]}:{call[1]!r}"

    @staticmethod
    def _run_in_process(key, calls: set) -> None:
        for task_path, task_args in calls:
            import_string(task_path)(*task_args)


# After the broker failed to take a task, this process hands it none for this long: each attempt costs the
# caller a wait (nothing against a refused connection, the Redis timeout against one that does not answer),
# and one request may publish thousands (a webhook replay) or every batch one (a follow-up). Skipping is
# safe for the reason `publish` may fail at all: every task it hands over has a sweep that does its work.
BROKER_PAUSE_SECONDS = 10
_broker_paused_until = 0.0  # time.monotonic() before which `publish` does not try the broker


def publish(task_path: str, args: tuple = (), *, countdown: float | None = None) -> bool:
    """Hand the Celery task at `task_path` (its dotted path) to the broker; False, logged, when the broker cannot
    take it, and without trying for `BROKER_PAUSE_SECONDS` after it could not. Never raises: it runs after a
    commit (a request whose writes committed never answers 5xx, docs/decisions/reliability.md), and every task
    published this way has a scheduled job that finds its work undone and does it (config/schedule.py). Tasks are
    named, not imported: a task module imports the services it runs, so a service that imported its task would
    close a circle (.importlinter, tasks-at-the-edge)."""
    global _broker_paused_until
    task = import_string(task_path)
    # Redis is the broker: when it has just failed to answer the raw client or the cache (a request's rate count,
    # its follow-up), publishing would wait for it again.
    if time.monotonic() < _broker_paused_until or unreachable():
        # debug: one request may skip thousands (a webhook replay); the failure that started the pause is a warning
        logger.debug("task %s not published (the broker failed moments ago); its scheduled sweep does it", task.name)
        return False
    try:
        # No publish retries: against a Redis that stopped answering under a kept connection, each retry and each
        # reconnection waits the Redis timeout again (docs/decisions/reliability.md); a connection Redis closed (a
        # restart) is opened again by the client within the one attempt.
        task.apply_async(args, countdown=countdown, retry=False)
    except (kombu.exceptions.OperationalError, redis.RedisError, OSError) as failure:  # the broker did not take it
        _broker_paused_until = time.monotonic() + BROKER_PAUSE_SECONDS
        if isinstance(failure.__cause__ or failure, (redis.ConnectionError, redis.TimeoutError, OSError)):
            mark_unreachable()  # the cache and the raw client do not wait for it again either
        logger.warning("task %s not published (the broker is unavailable); its scheduled sweep does it, and this "
                       "process tries the broker again in %s s", task.name, BROKER_PAUSE_SECONDS, exc_info=True)
        return False
    return True


def broker_pause_end() -> None:
    """Try the broker at the next `publish`: Redis, which is the broker, has just answered a command (or a test
    brought its broker back). A task asked for after an outage is then handed over at once, not left to its
    sweep for the rest of the pause."""
    global _broker_paused_until
    _broker_paused_until = 0.0
