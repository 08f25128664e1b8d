"""The catch-up (hash-joined catalog, backlog drained by hashing) raced on purpose against recording through the
per-process identity and price caches, with a customer deleted mid-way: afterwards every derived figure equals
the ledger. Transactional: the batches commit, so the caches fill and the catch-ups see them as production does."""
import threading

import pytest
from django.db import connections

from customers.models import Customer, RollupBacklog, UsageEvent
from customers.rollup import analytics_rollup_catch_up
from tests.analytics.support import models, rec, record, scanned, stored  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)

BATCHES = 12


def test_catch_ups_racing_cached_recording_and_a_deletion_leave_the_rollup_equal_to_the_ledger(
        client_for, book, models):
    clients = [client_for(email=f"writer{n}@example.com") for n in range(2)]
    record(clients[0], rec("doomed", "writer", "pages", "2025-04-01T09:00:00Z"))  # cached by the first batches
    done = threading.Event()
    failures: list[BaseException] = []

    def guarded(work):
        def run():
            try:
                work()
            except BaseException as error:  # reported by the main thread
                failures.append(error)
            finally:
                connections.close_all()
        return run

    def write(n: int):
        for batch in range(BATCHES):
            names = ["steady", "doomed"] if batch % 2 else ["steady"]
            record(clients[n], *(rec(name, "writer", "pages", f"2025-04-{1 + batch % 28:02d}T1{n}:00:00Z",
                                     model="beta-llm" if batch % 3 else "alpha-llm") for name in names))

    def catch_up():
        while not done.is_set():
            analytics_rollup_catch_up(book_id=book.pk)

    def delete():
        doomed = Customer.objects.get(external_id="doomed", deleted_at__isnull=True)
        assert clients[1].delete(f"/v1/customers/{doomed.pk}").status_code in (200, 204)

    writers = [threading.Thread(target=guarded(lambda n=n: write(n))) for n in range(2)]
    catcher = threading.Thread(target=guarded(catch_up))
    deleter = threading.Thread(target=guarded(delete))
    for thread in (*writers, catcher):
        thread.start()
    deleter.start()
    for thread in (*writers, deleter):
        thread.join()
    done.set()
    catcher.join()
    assert not failures, failures

    assert stored(book) == scanned(book)  # every grain of the rollup equals a scan of the ledger
    assert not RollupBacklog.objects.filter(book=book).exists()
    live_ids = set(Customer.objects.filter(book=book).values_list("pk", flat=True))
    assert set(UsageEvent.objects.filter(book=book).values_list("customer_id", flat=True)) <= live_ids
    assert UsageEvent.objects.filter(book=book).count() == 1 + 2 * (BATCHES + BATCHES // 2)
