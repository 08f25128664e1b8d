"""Delivery that loses nothing and invents nothing: a receiver down then up, answering 500 then 200, slower than
the timeout; a worker killed between the commit and the delivery; a broker that does not answer; a change rolled
back; retries exhausted; an endpoint failing for three days disabled with its owners emailed. Retries are driven
by the scheduled sweep at a given `now`, never by sleeping."""
from datetime import datetime, timedelta

import pytest
from django.db import transaction
from kombu.exceptions import OperationalError

from core import background, clock
from webhooks import tasks
from webhooks.delivery import RETRY_DELAYS
from webhooks.services import MOST_ATTEMPTS
from webhooks.events import emit
from webhooks.models import WebhookDelivery, WebhookEvent
from tests.billing.support import ok
from tests.mail import mail_to
from tests.webhooks.support import create_endpoint, deliveries, sweep

pytestmark = pytest.mark.django_db

OWNER = "owner@acme-agents.example.com"  # the `api` fixture's member


@pytest.fixture
def endpoint(api, receiver):
    return create_endpoint(api, receiver.url)


def test_send(api, endpoint, django_capture_on_commit_callbacks) -> dict:
    with django_capture_on_commit_callbacks(execute=True):
        return ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)


test_send.__test__ = False  # a helper, not a test


def only_delivery(api, endpoint) -> dict:
    [delivery] = deliveries(api, endpoint["id"])
    return delivery


def test_a_receiver_down_then_up_gets_the_event_once_with_the_same_webhook_id(api, endpoint, receiver,
                                                                            django_capture_on_commit_callbacks):
    receiver.stop()
    sent = test_send(api, endpoint, django_capture_on_commit_callbacks)
    failed = only_delivery(api, endpoint)
    assert (failed["status"], failed["attempts"]) == ("pending", 1)
    assert failed["attemptLog"][0]["error"] == "Connection refused."
    first_at = clock.now()
    receiver.start()
    assert sweep(first_at + timedelta(seconds=4)) == "0 handed over"  # the 5 s back-off is not over
    sweep(first_at + timedelta(seconds=6))
    [request] = receiver.requests
    assert request.webhook_id == sent["eventId"] and request.verified(endpoint["secret"])["id"] == sent["eventId"]
    delivered = only_delivery(api, endpoint)
    assert (delivered["status"], delivered["attempts"], delivered["nextAttemptAt"]) == ("delivered", 2, None)
    sweep(first_at + timedelta(days=5))
    assert len(receiver.requests) == 1  # delivered: never sent again


def test_a_500_then_a_200_is_retried_with_the_same_webhook_id(api, endpoint, receiver,
                                                              django_capture_on_commit_callbacks):
    receiver.statuses = [500]
    sent = test_send(api, endpoint, django_capture_on_commit_callbacks)
    pending = only_delivery(api, endpoint)
    assert pending["status"] == "pending" and pending["attemptLog"][0]["responseStatus"] == 500
    assert pending["attemptLog"][0]["responseBody"] == "receiver error"
    sweep(clock.now() + timedelta(seconds=6))
    assert [request.webhook_id for request in receiver.requests] == [sent["eventId"]] * 2
    for request in receiver.requests:
        request.verified(endpoint["secret"])
    delivered = only_delivery(api, endpoint)
    assert delivered["status"] == "delivered"
    assert [attempt["responseStatus"] for attempt in delivered["attemptLog"]] == [200, 500]  # newest first
    assert ok(api.get(f"/v1/webhook-endpoints/{endpoint['id']}"))["health"] == "healthy"


def test_a_receiver_slower_than_the_timeout_is_retried(api, endpoint, receiver, settings,
                                                       django_capture_on_commit_callbacks):
    settings.WEBHOOKS_TIMEOUT_SECONDS = 0.5
    receiver.delay_seconds = 1.5
    test_send(api, endpoint, django_capture_on_commit_callbacks)
    timed_out = only_delivery(api, endpoint)
    assert (timed_out["status"], timed_out["attemptLog"][0]["error"]) == ("pending", "No answer within 0.5 s.")
    assert ok(api.get(f"/v1/webhook-endpoints/{endpoint['id']}"))["health"] == "failing"
    receiver.delay_seconds = 0
    sweep(clock.now() + timedelta(seconds=6))
    assert only_delivery(api, endpoint)["status"] == "delivered"
    assert len({request.webhook_id for request in receiver.requests}) == 1


def test_the_back_off_runs_from_the_end_of_a_timed_out_attempt(api, endpoint, receiver, settings,
                                                                django_capture_on_commit_callbacks):
    # A 2-second timeout: the 5-second wait counted from the attempt's start left 3 seconds after its failure was
    # on record (with a 10-second timeout, nextAttemptAt came before attemptedAt).
    settings.WEBHOOKS_TIMEOUT_SECONDS = 2
    receiver.delay_seconds = 3
    test_send(api, endpoint, django_capture_on_commit_callbacks)
    delivery = only_delivery(api, endpoint)
    attempted = datetime.fromisoformat(delivery["attemptLog"][0]["attemptedAt"].replace("Z", "+00:00"))
    due = datetime.fromisoformat(delivery["nextAttemptAt"].replace("Z", "+00:00"))
    assert due - attempted >= timedelta(seconds=4)  # 5 s from the end of the attempt, within its fraction of a second


def test_a_worker_killed_between_commit_and_delivery_leaves_it_to_the_sweep(api, endpoint, receiver):
    # The outbox is written and committed with the change; the on-commit hand-over never runs (the process died).
    sent = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    assert receiver.requests == [] and only_delivery(api, endpoint)["attempts"] == 0
    sweep(clock.now())
    [request] = receiver.requests
    assert request.verified(endpoint["secret"])["id"] == sent["eventId"]
    assert only_delivery(api, endpoint)["status"] == "delivered"


def test_a_broker_that_does_not_answer_never_fails_the_request(api, endpoint, receiver, monkeypatch,
                                                               django_capture_on_commit_callbacks):
    def broker_down(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    monkeypatch.setattr(tasks.webhook_delivery_attempt_task, "apply_async", broker_down)  # as publish() hands over
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test")
    assert resp.status_code == 202 and receiver.requests == []
    monkeypatch.undo()
    background.broker_pause_end()  # the broker is back and the pause after its failure is over
    sweep(clock.now())
    assert len(receiver.requests) == 1 and only_delivery(api, endpoint)["status"] == "delivered"


def test_a_replay_while_the_broker_is_down_tries_it_once_and_leaves_the_rest_to_the_sweep(
        api, receiver, book, monkeypatch, django_capture_on_commit_callbacks):
    """Each failed hand-over costs the request a wait for the broker; a replay of thousands of events must not pay
    it for each one (it would outlast the web worker's timeout and end in a 502 after its commit)."""
    with transaction.atomic():
        for number in range(30):
            emit(book, "invoice.created", {"id": f"inv_{number}"}, now=clock.now() - timedelta(minutes=30 - number))
    endpoint = create_endpoint(api, receiver.url)
    tried = []

    def broker_down(*args, **kwargs):
        tried.append(args)
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
    monkeypatch.setattr(tasks.webhook_delivery_attempt_task, "apply_async", broker_down)
    since = (clock.now() - timedelta(hours=1)).isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        answer = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/replay", {"since": since}), 202)
    assert answer == {"replayed": 30}
    assert len(tried) == 1 and receiver.requests == []
    monkeypatch.undo()
    background.broker_pause_end()
    sweep(clock.now())
    assert sorted(request.verified(endpoint["secret"])["data"]["id"] for request in receiver.requests) == sorted(
        f"inv_{number}" for number in range(30))


def test_a_change_rolled_back_sends_nothing(api, endpoint, receiver, book, django_capture_on_commit_callbacks):
    with pytest.raises(RuntimeError), django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            emit(book, "invoice.paid", {"id": "inv_1", "status": "paid"})
            raise RuntimeError("the change fails after its event was written")
    assert not WebhookEvent.objects.exists() and not WebhookDelivery.objects.exists()
    sweep(clock.now() + timedelta(days=1))
    assert receiver.requests == []


def test_an_attempt_handed_over_twice_is_sent_once(api, endpoint, receiver):
    ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    delivery_id = only_delivery(api, endpoint)["id"]
    now = clock.now()
    tasks.webhook_delivery_attempt_task(delivery_id, now.isoformat())
    tasks.webhook_delivery_attempt_task(delivery_id, now.isoformat())
    sweep(now)
    assert len(receiver.requests) == 1


def test_retries_follow_the_back_off_then_the_delivery_fails_and_the_endpoint_is_disabled(
        api, endpoint, receiver, django_capture_on_commit_callbacks):
    receiver.stop()
    sent = test_send(api, endpoint, django_capture_on_commit_callbacks)
    at = clock.now()
    for delay in RETRY_DELAYS:
        assert sweep(at + delay - timedelta(seconds=1)) == "0 handed over"
        at += delay
        with django_capture_on_commit_callbacks(execute=True):
            assert sweep(at) == "1 handed over"
    failed = only_delivery(api, endpoint)
    assert (failed["status"], failed["attempts"], failed["nextAttemptAt"]) == ("failed", 10, None)
    assert at - clock.now() >= timedelta(days=3)
    disabled = ok(api.get(f"/v1/webhook-endpoints/{endpoint['id']}"))
    assert (disabled["enabled"], disabled["health"]) == (False, "disabled")
    [mail] = mail_to(OWNER)
    assert endpoint["url"] in mail.subject and "disabled" in mail.subject
    # Enabled again, it is healthy; a resend delivers with the original webhook-id.
    receiver.start()
    assert ok(api.patch(f"/v1/webhook-endpoints/{endpoint['id']}", {"enabled": True}))["health"] == "healthy"
    with django_capture_on_commit_callbacks(execute=True):
        resent = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries/{failed['id']}/resend"), 202)
    assert resent["eventId"] == sent["eventId"]
    [request] = receiver.requests
    assert request.webhook_id == sent["eventId"]
    assert only_delivery(api, endpoint)["status"] == "delivered"


def test_an_outage_of_this_service_does_not_count_against_a_failing_endpoint(api, endpoint, receiver,
                                                                              django_capture_on_commit_callbacks):
    """The endpoint failed once, then this service's worker and broker were down for four days (no attempt at all):
    the first failure after is the start of a new streak, not the fourth day of the old one."""
    receiver.stop()
    test_send(api, endpoint, django_capture_on_commit_callbacks)
    failing = ok(api.get(f"/v1/webhook-endpoints/{endpoint['id']}"))
    assert failing["health"] == "failing"
    back = clock.now() + timedelta(days=4)
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep(back) == "1 handed over"  # the retry due four days ago, failing again
    after = ok(api.get(f"/v1/webhook-endpoints/{endpoint['id']}"))
    assert (after["enabled"], after["health"]) == (True, "failing")
    assert datetime.fromisoformat(after["failingSince"].replace("Z", "+00:00")) == back
    assert only_delivery(api, endpoint)["status"] == "pending" and mail_to(OWNER) == []


def test_a_delivery_attempted_the_most_times_is_not_resent(api, endpoint, receiver,
                                                           django_capture_on_commit_callbacks):
    """Attempts are counted in a small integer: resends stop at the most, a 409 rather than a count that overflows
    in the worker and leaves the delivery due for ever."""
    test_send(api, endpoint, django_capture_on_commit_callbacks)
    delivery = only_delivery(api, endpoint)
    WebhookDelivery.objects.filter(pk=delivery["id"]).update(attempts=MOST_ATTEMPTS)
    resp = api.post(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries/{delivery['id']}/resend")
    assert resp.status_code == 409 and resp.json()["code"] == "delivery_attempts_exhausted"
    with django_capture_on_commit_callbacks(execute=True):
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/replay", {"since": "2000-01-01T00:00:00Z"}), 202)
    assert WebhookDelivery.objects.get(pk=delivery["id"]).attempts == MOST_ATTEMPTS  # a replay leaves it too
    assert len(receiver.requests) == 1


def test_an_endpoint_disabled_by_its_operator_gets_no_new_events(api, endpoint, receiver, book,
                                                                django_capture_on_commit_callbacks):
    ok(api.patch(f"/v1/webhook-endpoints/{endpoint['id']}", {"enabled": False}))
    with django_capture_on_commit_callbacks(execute=True):
        with transaction.atomic():
            emit(book, "invoice.paid", {"id": "inv_1"})
    assert receiver.requests == [] and deliveries(api, endpoint["id"]) == []


def test_replay_delivers_every_event_since_an_instant_oldest_first(api, receiver, book,
                                                                   django_capture_on_commit_callbacks):
    with transaction.atomic():
        before = emit(book, "invoice.created", {"id": "inv_0"}, now=clock.now() - timedelta(hours=2))
        first = emit(book, "invoice.created", {"id": "inv_1"}, now=clock.now() - timedelta(minutes=30))
        second = emit(book, "invoice.paid", {"id": "inv_1"}, now=clock.now() - timedelta(minutes=20))
    endpoint = create_endpoint(api, receiver.url)  # created after the events
    since = (clock.now() - timedelta(hours=1)).isoformat()
    with django_capture_on_commit_callbacks(execute=True):
        answer = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/replay", {"since": since}), 202)
    assert answer == {"replayed": 2}
    bodies = [request.verified(endpoint["secret"]) for request in receiver.requests]
    assert [(body["type"], body["data"]["id"]) for body in bodies] == [("invoice.created", "inv_1"),
                                                                       ("invoice.paid", "inv_1")]
    assert {body["id"] for body in bodies} == {f"evt_{first.pk.hex}", f"evt_{second.pk.hex}"}
    assert f"evt_{before.pk.hex}" not in {body["id"] for body in bodies}
    with django_capture_on_commit_callbacks(execute=True):  # again: the same ids, sent once more
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/replay", {"since": since}), 202)
    assert [request.webhook_id for request in receiver.requests[2:]] == [body["id"] for body in bodies]


def test_replay_needs_a_valid_since(api, endpoint):
    resp = api.post(f"/v1/webhook-endpoints/{endpoint['id']}/replay", {"since": "yesterday-ish"})
    assert resp.status_code == 400 and "since" in " ".join(resp.json()["message"])


def test_the_delivery_log_filters_by_status(api, endpoint, receiver, django_capture_on_commit_callbacks):
    receiver.statuses = [500]
    test_send(api, endpoint, django_capture_on_commit_callbacks)
    test_send(api, endpoint, django_capture_on_commit_callbacks)
    assert [row["status"] for row in deliveries(api, endpoint["id"], status="pending")] == ["pending"]
    assert [row["status"] for row in deliveries(api, endpoint["id"], status="delivered")] == ["delivered"]
    assert api.get(f"/v1/webhook-endpoints/{endpoint['id']}/deliveries", {"status": "lost"}).status_code == 400


def test_recording_usage_with_endpoints_configured_never_touches_the_webhook_tables(api, receiver):
    """Usage events are not webhooks: a recorded batch issues the same statements with or without endpoints."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    create_endpoint(api, receiver.url)
    records = [{"customerExternalId": f"c{i}", "agentCode": "a", "signalName": "s", "model": "gpt-4o-mini",
                "modelProvider": "openai", "inputTokens": 10, "outputTokens": 5} for i in range(20)]
    api.post("/v1/usage/record", {"records": records})  # identities provisioned first
    with CaptureQueriesContext(connection) as queries:
        resp = api.post("/v1/usage/record", {"records": records})
    assert resp.status_code == 200
    assert [query["sql"] for query in queries if "webhooks_" in query["sql"]] == []
    assert receiver.requests == [] and not WebhookEvent.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_a_thread_of_the_web_process_delivers_after_the_answer(api, receiver, settings):
    """The zero-setup configuration: no REDIS_URL, so no broker; the answer comes first, the delivery after it."""
    import time

    from core.redis_client import redis_client
    from webhooks.dispatch import runner
    settings.REDIS_URL = ""
    redis_client.cache_clear()
    try:
        endpoint = create_endpoint(api, receiver.url)
        sent = ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
        deadline = time.monotonic() + 30
        while not receiver.requests:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert receiver.requests[0].verified(endpoint["secret"])["id"] == sent["eventId"]
        runner.in_process.flush(wait_for_running=True)  # the thread may still be writing the outcome
        assert only_delivery(api, endpoint)["status"] == "delivered"
    finally:
        redis_client.cache_clear()


def test_housekeeping_deletes_old_events_with_their_log_but_keeps_pending_ones(api, endpoint, receiver, book):
    from webhooks.delivery import webhook_events_housekeeping
    ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)  # pending: its hand-over never ran
    with transaction.atomic():
        old = emit(book, "invoice.paid", {"id": "inv_old"}, now=clock.now() - timedelta(days=31))
    WebhookDelivery.objects.filter(event=old).update(status="delivered", next_attempt_at=None)
    webhook_events_housekeeping(now=clock.now())
    assert not WebhookEvent.objects.filter(pk=old.pk).exists()
    assert WebhookEvent.objects.count() == 1
    webhook_events_housekeeping(now=clock.now() + timedelta(days=40))
    assert WebhookEvent.objects.count() == 1  # still pending: kept until delivered or failed


@pytest.mark.django_db(transaction=True)
def test_deleting_an_endpoint_while_a_change_creates_its_deliveries_fails_neither(api, receiver, book):
    """The change's transaction has created a delivery to the endpoint and not yet committed when the endpoint is
    deleted: the delete waits for it and takes its delivery along. Before, the delete went first and the change's
    commit failed (its delivery named a deleted endpoint), a 500 for a refund Stripe had already made."""
    import threading

    from django.db import connections

    from tests.reliability.test_concurrency import lock_waiters
    from webhooks.services import webhook_endpoint_delete
    endpoint = create_endpoint(api, receiver.url)
    emitted, release, outcome = threading.Event(), threading.Event(), {}

    def change():
        try:
            with transaction.atomic():
                emit(book, "invoice.paid", {"id": "inv_1"})
                emitted.set()
                release.wait(10)
            outcome["change"] = "committed"
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test reads
            outcome["change"] = repr(exc)
        finally:
            connections.close_all()

    def delete():
        try:
            webhook_endpoint_delete(book=book, endpoint_id=endpoint["id"])
            outcome["delete"] = "committed"
        except Exception as exc:  # noqa: BLE001
            outcome["delete"] = repr(exc)
        finally:
            connections.close_all()

    changing = threading.Thread(target=change)
    changing.start()
    assert emitted.wait(10)
    deleting = threading.Thread(target=delete)
    deleting.start()
    waited = lock_waiters(3)
    release.set()
    changing.join(10)
    deleting.join(10)
    assert outcome == {"change": "committed", "delete": "committed"}
    assert waited == 1  # the delete waited for the change
    assert not WebhookDelivery.objects.filter(endpoint_id=endpoint["id"]).exists()
    assert WebhookEvent.objects.filter(type="invoice.paid").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_test_send_to_an_endpoint_being_deleted_answers_404(api, receiver, book):
    """The delete holds the endpoint when the test send reads it: the send waits, then finds no endpoint (it found
    it before, created nothing for it after the delete committed, and answered 500)."""
    import threading

    from django.db import connections

    from tests.reliability.test_concurrency import lock_waiters
    from webhooks.models import WebhookEndpoint
    endpoint = create_endpoint(api, receiver.url)
    locked, release = threading.Event(), threading.Event()

    def delete():
        try:
            with transaction.atomic():
                row = WebhookEndpoint.objects.select_for_update().get(pk=endpoint["id"])
                locked.set()
                release.wait(10)
                row.delete()
        finally:
            connections.close_all()

    deleting = threading.Thread(target=delete)
    deleting.start()
    assert locked.wait(10)
    answers = []

    def send():
        try:
            answers.append(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"))
        finally:
            connections.close_all()

    sending = threading.Thread(target=send)
    sending.start()
    assert lock_waiters(3) == 1
    release.set()
    deleting.join(10)
    sending.join(10)
    assert answers[0].status_code == 404, answers[0].content


def test_a_failure_recorded_after_a_later_attempt_succeeded_leaves_the_endpoint_healthy(
        api, endpoint, django_capture_on_commit_callbacks):
    """Attempt 1 is claimed at t0 and its receiver stalls it to the timeout; attempt 2, claimed at t0 + 2 s, is
    delivered first. Attempt 1's failure, written at t0 + 10 s, set the endpoint failing since t0: health
    'failing' though the latest attempt succeeded, and disabled at the next failure three quiet days on."""
    from webhooks import targets
    from webhooks.delivery import _record
    from webhooks.models import WebhookEndpoint

    with django_capture_on_commit_callbacks(execute=False):  # two deliveries, no attempt yet
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
        ok(api.post(f"/v1/webhook-endpoints/{endpoint['id']}/test"), 202)
    first, second = WebhookDelivery.objects.select_related("endpoint").order_by("created_at", "id")
    first.attempts = second.attempts = 1
    t0 = clock.now()
    _record(second, now=t0 + timedelta(seconds=2), answer=targets.Answer(200, "", 12), error="")
    _record(first, now=t0, answer=None, error="Timed out.")
    assert WebhookEndpoint.objects.get(pk=endpoint["id"]).failing_since is None
    assert ok(api.get(f"/v1/webhook-endpoints/{endpoint['id']}"))["health"] == "healthy"
