"""The in-process runner of work that follows a request when there is no worker (core/background.py)."""
import threading
import time

from core.background import Coalescer


def test_items_added_to_a_key_within_the_delay_run_once_together_on_the_runner_thread():
    runs, done = [], threading.Event()

    def run(key, items):
        runs.append((key, sorted(items), threading.current_thread().name))
        if len(runs) == 2:
            done.set()

    coalescer = Coalescer("test-coalescer", run, delay=0.2)
    coalescer.add("book-1", ["a"])
    coalescer.add("book-1", ["b", "a"])
    coalescer.add("book-2", ["x"])
    assert runs == []  # nothing runs in the adding thread
    assert done.wait(10)
    assert sorted(runs) == [("book-1", ["a", "b"], "test-coalescer"), ("book-2", ["x"], "test-coalescer")]


def test_a_failing_run_is_logged_and_the_next_key_still_runs(caplog):
    ran = threading.Event()

    def run(key, items):
        if key == "bad":
            raise RuntimeError("boom")
        ran.set()

    coalescer = Coalescer("test-coalescer", run, delay=0)
    coalescer.add("bad", [1])
    coalescer.add("good", [2])
    assert ran.wait(10)
    assert "test-coalescer: the run for bad failed" in caplog.text


def test_flush_runs_what_is_pending_now_in_the_calling_thread():
    runs = []
    coalescer = Coalescer("test-coalescer", lambda key, items: runs.append((key, items)), delay=3600)
    coalescer.add("book-1", ["a"])
    coalescer.flush()
    assert runs == [("book-1", {"a"})]
    coalescer.flush()
    assert runs == [("book-1", {"a"})]  # taken once


def test_a_command_exiting_waits_for_the_run_the_thread_has_already_taken():
    # run_scheduled_jobs without Redis hands webhook retries to the thread and exits: the thread had taken the key,
    # flush found nothing pending, and the daemon thread died with the process before it sent anything.
    started, finished = threading.Event(), []

    def slow(key, items):
        started.set()
        time.sleep(0.3)
        finished.append(key)

    coalescer = Coalescer("test-slow", slow, delay=0)
    coalescer.add("retry", {1})
    assert started.wait(5)  # the thread has the key
    coalescer.flush()  # at a web worker's exit: no wait (its graceful stop has other buffers to write)
    assert finished == []
    coalescer.flush(wait_for_running=True)  # a command about to exit (run_scheduled_jobs)
    assert finished == ["retry"]


def test_a_once_while_waiting_call_the_broker_refused_leaves_no_mark_behind(monkeypatch):
    """The mark says a run waits and takes later callers' work too: with no task behind it (the broker refused the
    publish), later callers skipped publishing for the mark's whole minute."""
    from core import background
    from core.background import TaskRunner
    from core.redis_client import redis_client

    runner = TaskRunner("test-once", once_while_waiting=True)
    call = ("controls.tasks.evaluate_spend_caps_task", ("book-1",))
    published = []
    monkeypatch.setattr(background, "publish", lambda *args, **kwargs: published.append(args) and False)
    runner.dispatch(*call)
    assert published == [call] and not redis_client().exists(runner._mark(call))
    monkeypatch.setattr(background, "publish", lambda *args, **kwargs: published.append(args) or True)
    runner.dispatch(*call)
    runner.dispatch(*call)  # a run waits: this caller's work is its
    assert published == [call, call] and redis_client().exists(runner._mark(call))
    runner.taken(*call)
