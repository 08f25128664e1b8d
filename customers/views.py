from drf_spectacular.utils import OpenApiParameter, extend_schema

from config.accounts.api import OrgApiView
from config.core.pagination import array_response
from customers.selectors import usage_event_list
from customers.serializers import UsageEventOut


class UsageEventListApi(OrgApiView):
    @extend_schema(
        operation_id="events_list",
        parameters=[OpenApiParameter(name, str, description=text) for name, text in (
            ("customerId", "customer UUID"), ("customerExternalId", "customer external id"),
            ("agentId", "agent UUID"), ("agentCode", "agent code"), ("signalId", "signal UUID"),
            ("signalName", "signal name as recorded"), ("eventStatus", "PROCESSED or NEEDS_COST_BACKFILL"),
            ("environment", "production, staging, development or testing"), ("model", "model id"),
            ("idempotencyKey", "the record's idempotency key"),
            ("startDate", "ISO 8601; events at or after it"),
            ("endDate", "ISO 8601; a date includes that whole day, a timestamp is exclusive"),
            ("limit", "1-100, default 100"), ("offset", "default 0"))],
        responses=UsageEventOut(many=True),
    )
    def get(self, request):
        return array_response(usage_event_list(book=self.book, params=request.query_params), request.query_params,
                              UsageEventOut)
