"""Real parallel requests: callables released together by a barrier, and JSON POSTs to a live server."""
import json
import threading
import urllib.error
import urllib.request

from django.db import connection, connections


def in_another_connection(work) -> None:
    """Run `work` on a thread of its own (its own connection, committing), and wait for it."""
    failures = []

    def run():
        try:
            work()
        except BaseException as error:  # reported below
            failures.append(error)
        finally:
            connections.close_all()
    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert not failures, failures


def end_other_sessions() -> None:
    """End every other session on this connection's database (a thread's connection lives until the thread is
    collected: one left open makes dropping the test database fail, "being accessed by other users")."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                       "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    connections.close_all()


def in_parallel(calls: list) -> list:
    """Run every callable at the same moment (a barrier releases all threads together); their results in
    order. Each thread closes its own database connection, if it opened one."""
    barrier = threading.Barrier(len(calls))
    results: list = [None] * len(calls)

    def run(position: int, call):
        barrier.wait()
        try:
            results[position] = call()
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i, call)) for i, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def post(url: str, key: str, body: dict):
    """A callable that POSTs JSON and answers (status, parsed body)."""
    def send():
        request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                         headers={"x-api-key": key, "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as failure:
            return failure.code, json.loads(failure.read())
    return send
