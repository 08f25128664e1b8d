from celery import shared_task

from core import clock
from config.schedule import job_named


@shared_task(name="console.run_scheduled_job", acks_late=True)
def run_scheduled_job_task(job_name: str, now_iso: str | None = None) -> None:
    job_named(job_name).run(now=clock.parse_instant(now_iso, field="now") if now_iso else clock.now())
