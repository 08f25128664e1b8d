"""The console's Jobs page: long work of the operator's books and how far it has come (read only: the operations
and commands that start jobs write them). A job's page reloads itself until the job is finished."""
from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from accounts.admin_scoping import BookScopedAdmin, ReadOnlyAdminMixin
from jobs.models import Job


def job_link(job: Job, text: str | None = None) -> SafeString:
    """A link to the job's console page, for the message of an action that started it."""
    return format_html('<a href="{}">{}</a>', reverse("admin:jobs_job_change", args=[job.pk]),
                       text or f"follow the job ({job.get_kind_display().lower()})")


@admin.register(Job)
class JobAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    # `changed` beside `done`: a repricing that examined 4 events and priced none says so (their models are still
    # missing; each event's page says why).
    list_display = ["created_at", "kind", "status", "progress", "done", "total", "changed", "error", "started_at",
                    "finished_at", "book"]
    list_filter = ["status", "kind"]
    # A job's id (as an API answer or a console message names it), its failure, who started it.
    search_fields = ["id", "error", "created_by"]
    date_hierarchy = "created_at"
    list_select_related = ["book__organization"]
    exclude = ["task_path", "task_args", "resume_after"]  # the runner's own bookkeeping
    change_form_template = "admin/jobs/job/change_form.html"

    @admin.display(description="Progress")
    def progress(self, job: Job):
        percent = job.percent
        if percent is None:
            return f"{job.done:,} so far"
        return format_html('<progress max="100" value="{}"></progress> {}%', percent, percent)

    def get_readonly_fields(self, request, obj=None):
        return [*super().get_readonly_fields(request, obj), "progress"]
