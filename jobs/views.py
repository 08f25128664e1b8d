"""/v1/jobs/{id}: how far a long operation has come (jobs/services.py)."""
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from accounts.api import SCOPE_MESSAGES, OrgApiView
from accounts.models import KeyScope
from core.errors import Forbidden
from core.scoping import get_owned
from jobs.models import Job, JobKind
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
        job = get_owned(Job, self.book, job_id)
        # A legal key reaches matters, not usage events or pricing (spec 5.5): of the jobs, only a rules sweep.
        if self.api_key.scope == KeyScope.LEGAL and job.kind != JobKind.MATTER_RULES_APPLY:
            raise Forbidden(SCOPE_MESSAGES[KeyScope.LEGAL])
        return Response(JobOut(job).data)
