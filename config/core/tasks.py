from celery import shared_task

from config.core import clock


@shared_task(name="core.run_scheduled_job", acks_late=True)
def run_scheduled_job_task(job_name: str, now_iso: str | None = None) -> None:
    from config.schedule import job_named

    job_named(job_name).run(now=clock.parse_instant(now_iso, field="now") if now_iso else clock.now())
