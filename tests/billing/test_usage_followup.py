"""The coalesced follow-up of recorded usage (billing/followup.py): one task per book for many batches,
which catches the analytics rollup up and settles the credit pools of the customers the batches named."""
from billing.followup import usage_followup_schedule, usage_followup_take
from billing.tasks import usage_followup_task
from customers.models import RollupBacklog
from tests.billing.analytics_support import models, rec, record, scanned, stored  # noqa: F401


def test_batches_of_a_book_arm_one_follow_up_until_the_task_takes_their_customers(book, other_book, monkeypatch):
    published = []
    monkeypatch.setattr(usage_followup_task, "apply_async", lambda args, countdown: published.append(args))
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c1"])
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c2", "c1"])
    usage_followup_schedule(book_id=str(other_book.pk), customer_ids=["x"])
    assert published == [(str(book.pk),), (str(other_book.pk),)]  # one per book, however many batches
    assert usage_followup_take(book_id=str(book.pk)) == ["c1", "c2"]
    assert usage_followup_take(book_id=str(book.pk)) == []
    usage_followup_schedule(book_id=str(book.pk), customer_ids=["c3"])  # after the take: armed again
    assert published[-1] == (str(book.pk),) and len(published) == 3
    assert usage_followup_take(book_id=str(book.pk)) == ["c3"]
    assert usage_followup_take(book_id=str(other_book.pk)) == ["x"]


def test_a_committed_batch_is_in_the_rollup_once_its_follow_up_ran(api, book, models, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # Celery is eager in the suite: the task runs here
        record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"),
               rec("beta", "writer", "pages", "2025-04-01T11:00:00Z"))
    assert not RollupBacklog.objects.filter(book=book).exists()
    assert usage_followup_take(book_id=str(book.pk)) == []  # the task took the customers and disarmed
    assert stored(book) == scanned(book)


def test_the_follow_up_task_is_idempotent(api, book, models):
    record(api, rec("acme", "writer", "pages", "2025-04-01T10:00:00Z"))
    assert usage_followup_task(str(book.pk)) == 1
    assert usage_followup_task(str(book.pk)) == 0
    assert stored(book) == scanned(book)
