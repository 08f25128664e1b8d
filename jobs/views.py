"""/v1/jobs/{id}: how far a long operation has come (jobs/services.py)."""
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from accounts.api import OrgApiView
from accounts.models import KeyScope
from core.scoping import get_owned
from jobs.models import Job
from jobs.serializers import JobOut


class JobDetailApi(OrgApiView):
    # The keys that may start these operations (full: map-model; full and legal: matter rules) may watch them;
    # an ingest-only key reaches recording, verify and spend controls only.
    read_scopes = frozenset({KeyScope.FULL, KeyScope.LEGAL})

    @extend_schema(operation_id="jobs_retrieve", responses=JobOut)
    def get(self, request, job_id):
        """Get a job.

        The status and progress of long work an operation started (a cost backfill after `POST
        /v1/events/map-model`, a rules sweep after `POST /v1/matter-rules/apply`, the pricing of unpriced events
        after a catalog refresh), by the `jobId` it answered. `status` goes `queued`, `running`, then `succeeded`
        (with `result`) or `failed` (with `error`); `done` of `total` items are examined, `percent` of the way.
        Poll it every few seconds; a job of another book is a 404."""
        return Response(JobOut(get_owned(Job, self.book, job_id)).data)
