from celery import shared_task

from accounts.models import Book
from jobs.services import job_run
from matters.services import matter_rules_apply_rest


@shared_task(name="matters.apply_rules", acks_late=True)
def matter_rules_apply_task(book_id: str, job_id: str, assigned_before: int = 0) -> None:
    """The rest of a rules sweep that a request began, as the job `job_id` (safe to run twice: each event is
    attributed at most once, a finished job is left alone)."""
    book = Book.objects.filter(pk=book_id).first()
    if book is not None:
        job_run(job_id, matter_rules_apply_rest(book=book, assigned_before=int(assigned_before)))
