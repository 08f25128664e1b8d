from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.response import Response

from billing.record_decoding import UsageBatchParser
from billing.recording import usage_record
from billing.serializers.usage import (USAGE_RECORD_ANSWER_EXAMPLE, USAGE_RECORD_REQUEST_EXAMPLE, UsageRecordBatchIn,
                                       UsageRecordOut)
from accounts.api import ALL_SCOPES, OrgApiView
from accounts.book_generations import generation_of
from core import clock


class UsageRecordApi(OrgApiView):
    write_scopes = ALL_SCOPES  # full, ingest-only and legal keys may record (spec §5)
    # A record holding what PostgreSQL cannot store fails alone (billing/record_validation.py), its neighbours
    # are recorded: the parser leaves that check of the values to the records' validation.
    checks_stored_values_per_record = True
    # The usual batch is decoded and validated in one pass in C (billing/record_decoding.py), the rules unchanged.
    parser_classes = [UsageBatchParser]

    @extend_schema(operation_id="usage_record", request=UsageRecordBatchIn, responses=UsageRecordOut, examples=[
        OpenApiExample("One record of each shape", value=USAGE_RECORD_REQUEST_EXAMPLE, request_only=True,
                       description="An LLM call, an event of two services, a model the catalog does not know and "
                                   "a record without `signalName`."),
        OpenApiExample("Two recorded, one stored without cost, one refused", value=USAGE_RECORD_ANSWER_EXAMPLE,
                       response_only=True, status_codes=["200"]),
    ])
    def post(self, request):
        """Record usage events.

        A batch of 1 to 100 records, each a billable event of a customer's agent naming the services it used: one
        (`model` and `modelProvider`, with token counts for an LLM or `quantity` units of a non-LLM service) or several
        (`services[]`); `quantity` is also the count of the signal it bills (default 1). Customers, agents and signals
        named for the first time are created. The answer is 200 even when records fail: each failure is in
        `results.failed[]` with its `code` and `stored`. `stored: true` (cost not resolvable yet, `unknown_model` or
        `unpriced_usage`) means the event is saved with cost null: do not send it again, map the model and it is priced;
        `stored: false` means nothing was saved: fix the record and send it again. With an `idempotencyKey`, sending a
        record again returns the original event (`replayed: true`) instead of a new one. A request-level problem (no
        `records`, more than 100, shapes mixed in one record) is a 400 and stores nothing."""
        outcome = usage_record(book=self.book, body=request.data, now=clock.now(),
                               generation=generation_of(self.api_key))
        return Response({
            "processed": outcome.processed,
            "successful": len(outcome.success),
            "failed": len(outcome.failed),
            "results": {"success": outcome.success, "failed": outcome.failed},
        })
