"""Every periodic job, listed once. Celery beat and `manage.py run_scheduled_jobs --now` both run these
(console: the composition root, which may name a job of any app).

Each job is a plain function `job(*, now)` that is safe to run twice (it acts only on what is due).
Order matters for `run_scheduled_jobs`: statuses first, then billing, then alerts.
"""
import logging
from dataclasses import dataclass

from django.utils.module_loading import import_string

from core.jobs import BooksFailed

logger = logging.getLogger("billing.jobs")


@dataclass(frozen=True)
class ScheduledJob:
    name: str
    function_path: str
    every_seconds: int

    def run(self, *, now):
        return import_string(self.function_path)(now=now)


SCHEDULED_JOBS: list[ScheduledJob] = [
    # Statuses and billing periods first: invoicing and alerts read the current period.
    ScheduledJob("subscriptions_advance", "billing.services.subscriptions.subscriptions_advance", 300),
    # Right after the rollover: settles the periods that just ended, opens the new ones, sends pool alerts.
    ScheduledJob("credit-pool-alerts", "billing.services.credit_pools.credit_pool_alerts_evaluate_all", 300),
    # Drafts of ended periods are issued before overdue marking and the alerts read them.
    ScheduledJob("invoices_finalize_due", "billing.services.invoices.invoices_finalize_due", 300),
    ScheduledJob("invoices_mark_overdue", "billing.services.invoices.invoices_mark_overdue", 300),
    ScheduledJob("customer-alerts", "controls.services.customer_alerts.customer_alerts_evaluate_all", 300),
    ScheduledJob("spend-cap-alerts", "controls.services.spend_caps.spend_caps_evaluate_all", 300),
    # Analytics rollup: events whose follow-up task was lost (billing/followup.py); reads catch up anyway.
    ScheduledJob("usage-rollup-catch-up", "customers.rollup.analytics_rollup_catch_up_all", 60),
    # The ledger's monthly partitions: this month and the next ones, and back-filled months' rows moved.
    ScheduledJob("ledger-partitions", "customers.partitions.ledger_partitions_maintain", 3600),
    # Housekeeping: the browser sessions of opened portal links (and expired console logins).
    ScheduledJob("browser-sessions-clear", "portal.services.browser_sessions_clear_expired", 3600),
    # Every figure derived from the ledger recomputed and compared; drift logged and shown on the dashboard.
    ScheduledJob("ledger-verify", "console.verification.ledger_verify_all", 6 * 3600),
    # Webhook deliveries due: retries whose time has come, and attempts lost with a worker or a broker message.
    ScheduledJob("webhook-deliveries", "webhooks.delivery.webhook_deliveries_sweep", 10),
    ScheduledJob("webhook-events-housekeeping", "webhooks.delivery.webhook_events_housekeeping", 3600),
    # Jobs whose runner was lost are started again; finished ones are deleted after JOBS_KEEP_DAYS.
    ScheduledJob("jobs-housekeeping", "jobs.services.jobs_housekeeping", 300),
]


@dataclass(frozen=True)
class JobOutcome:
    result: object = None  # what the job answered (for the books that failed too: what it did for the others)
    failed_books: tuple = ()  # the books it failed for (each logged with its traceback by the job)
    failed: bool = False  # it failed before reaching the books (logged here)


def scheduled_job_run(job: ScheduledJob, *, now) -> JobOutcome:
    """Run one periodic job as of `now`; a failure is logged, never raised, so the jobs after it still run."""
    try:
        return JobOutcome(job.run(now=now))
    except BooksFailed as exc:
        return JobOutcome(exc.result, tuple(exc.book_ids))
    except Exception:
        logger.exception("scheduled job %s failed", job.name)
        return JobOutcome(failed=True)


def job_named(name: str) -> ScheduledJob:
    for job in SCHEDULED_JOBS:
        if job.name == name:
            return job
    raise KeyError(name)


# A run not started this long after beat queued it is dropped by the worker: three of its intervals, at least five
# minutes. Long enough that a busy queue delays a job rather than starving it, short enough that a worker back
# after an hour finds a few runs of each job, not 360 webhook sweeps (a job acts only on what is due, so the newest
# run does all that the dropped ones would have).
def run_expiry_seconds(job: ScheduledJob) -> float:
    return float(max(3 * job.every_seconds, 300))


def beat_schedule() -> dict:
    return {job.name: {"task": "console.run_scheduled_job", "schedule": float(job.every_seconds), "args": [job.name],
                       "options": {"expires": run_expiry_seconds(job)}}
            for job in SCHEDULED_JOBS}
