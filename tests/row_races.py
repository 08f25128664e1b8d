"""An update racing the delete of its row, made deterministic: the test's own request stops inside its transaction
at a model signal sent for the row (`pre_save`, `pre_delete`, connected for the block only), while another request
runs on a thread of its own (its own connection, committing). Tests using it need
`pytest.mark.django_db(transaction=True)`: the two connections must see each other's commits."""
import threading
import time
from contextlib import contextmanager

from django.db import connection, connections

from tests.conftest import KeyClient


def lock_waiters(seconds: float = 30) -> int:
    """Sessions of the test database waiting on a lock, polled until there is one or `seconds` pass. Asked from
    inside a transaction, which sees one snapshot of the activity statistics until it is cleared."""
    deadline, waiting = time.monotonic() + seconds, 0
    while time.monotonic() < deadline and not waiting:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                           "AND wait_event_type = 'Lock'")
            waiting = cursor.fetchone()[0]
        time.sleep(0.02)
    return waiting


@contextmanager
def at_signal(signal, model, pk, action):
    """`action()` runs once, the first time `signal` is sent for the `model` row `pk`; yields a list that holds
    True once it ran."""
    fired: list[bool] = []

    def handler(sender, instance, **kwargs):
        if str(instance.pk) == str(pk) and not fired:
            fired.append(True)
            action()
    signal.connect(handler, sender=model, weak=False)
    try:
        yield fired
    finally:
        signal.disconnect(handler, sender=model)


class Meanwhile:
    """One request, `send(client)`, on a thread of its own with a client of the same key as `api`."""

    def __init__(self, api: KeyClient, send):
        self.client, self.send = KeyClient(api.raw_key), send
        self.answers, self.failures = [], []
        self.thread = threading.Thread(target=self._run)

    def _run(self):
        try:
            self.answers.append(self.send(self.client))
        except BaseException as error:  # reported by answer()
            self.failures.append(error)
        finally:
            connections.close_all()

    def start_and_wait_for_a_lock(self) -> int:
        """Start the request and return how many sessions wait on a lock once it does (0 after 30 s: none)."""
        self.thread.start()
        return lock_waiters()

    def start_and_finish(self) -> None:
        self.thread.start()
        self.thread.join()

    def answer(self):
        self.thread.join()
        assert not self.failures, self.failures
        return self.answers[0]


def patch_during_delete(api: KeyClient, url: str, body: dict, *, model, pk, delete_status: int, signal=None):
    """PATCH `url` with `body` on a thread of its own while the test's DELETE of the same row holds it (the DELETE
    stopped at `signal` for the row, `pre_delete` unless given); checks the DELETE's answer and that the PATCH
    waited on a lock, and returns the PATCH's answer."""
    from django.db.models.signals import pre_delete

    patch = Meanwhile(api, lambda client: client.patch(url, body))
    waiting = []
    with at_signal(signal or pre_delete, model, pk, lambda: waiting.append(patch.start_and_wait_for_a_lock())):
        assert api.delete(url).status_code == delete_status
    answer = patch.answer()
    assert waiting == [1]
    return answer
