"""A long piece of work of one book (a cost backfill, a reprice, a rules sweep) as a person can watch it: its
status and how far it has come (jobs/services.py writes it)."""
from django.db import models
from django.db.models import Q

from core.exact_json import ExactJSONField
from core.models import OrgOwned
from core.progress import percent_of


class JobKind(models.TextChoices):
    COST_BACKFILL = "cost_backfill", "Cost backfill of a mapped model"
    COST_REPRICE = "cost_reprice", "Pricing unpriced events with the current catalog"
    COST_OVERRIDE_REPRICE = "cost_override_reprice", "Pricing events again after a price override changed"
    MATTER_RULES_APPLY = "matter_rules_apply", "Applying the matter routing rules"


class JobStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


FINISHED = (JobStatus.SUCCEEDED, JobStatus.FAILED)


class Job(OrgOwned):
    kind = models.CharField(max_length=32, choices=JobKind.choices)
    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    done = models.BigIntegerField(default=0, help_text="Items examined so far.")
    total = models.BigIntegerField(null=True, blank=True, help_text="Items to examine; empty until known.")
    result = ExactJSONField(null=True, blank=True, help_text="What the work changed, once it succeeded.")
    error = models.TextField(blank=True)
    # What runs it: the dotted path of a Celery task and its arguments (the job's id among them), so a job whose
    # runner was lost can be started again (`jobs_housekeeping`).
    task_path = models.CharField(max_length=200, blank=True)
    task_args = ExactJSONField(default=list, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Times a runner took it up.")
    # Where a run taken up again goes on (core/progress.py): the last id walked and the items changed so far,
    # written with each chunk in the chunk's transaction.
    resume_after = models.UUIDField(null=True, blank=True, help_text="The last item walked, in id order.")
    changed = models.BigIntegerField(default=0, help_text="Items the work changed so far.")
    created_by = models.CharField(max_length=64, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["book", "-created_at"], name="job_book_created"),
            # The housekeeping sweep: unfinished jobs, by when they last moved.
            models.Index(fields=["updated_at"], name="job_unfinished_updated",
                         condition=Q(status__in=["queued", "running"])),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(done__gte=0), name="job_done_not_negative"),
        ]

    def __str__(self):
        return f"{self.get_kind_display()} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def percent(self) -> int | None:
        """0-100; 100 once succeeded; None while the total is unknown."""
        if self.status == JobStatus.SUCCEEDED:
            return 100
        return percent_of(self.done, self.total)


class PeriodicRun(models.Model):
    """When a periodic job (config/schedule.py) is next due, for schedulers that share no broker: the web processes of
    the zero-setup default each run one (config/in_process_schedule.py). A process runs a job only after moving its due
    time on, in one statement (`jobs.periodic.periodic_run_claim`), so one process of the deployment runs each run.
    Celery beat, with a broker, keeps its own schedule and does not read this table."""

    name = models.CharField(max_length=100, primary_key=True)
    due_at = models.DateTimeField(help_text="The next run is due at this instant.")
    claimed_at = models.DateTimeField(help_text="When a process last took a run of the job.")

    def __str__(self):
        return f"{self.name} due {self.due_at:%Y-%m-%d %H:%M:%S}"
