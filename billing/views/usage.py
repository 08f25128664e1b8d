from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from billing.recording import usage_record
from billing.serializers.usage import UsageRecordBatchIn, UsageRecordOut
from config.accounts.api import ALL_SCOPES, OrgApiView
from config.core import clock


class UsageRecordApi(OrgApiView):
    write_scopes = ALL_SCOPES  # full, ingest-only and legal keys may record (spec §5)

    # A record holding what PostgreSQL cannot store fails alone (billing/record_validation.py), its neighbours
    # are recorded: the parser leaves that check of the values to the records' validation.
    checks_stored_values_per_record = True
    @extend_schema(operation_id="usage_record", request=UsageRecordBatchIn, responses=UsageRecordOut)
    def post(self, request):
        outcome = usage_record(book=self.book, body=request.data, now=clock.now())
        return Response({
            "processed": outcome.processed,
            "successful": len(outcome.success),
            "failed": len(outcome.failed),
            "results": {"success": outcome.success, "failed": outcome.failed},
        })
