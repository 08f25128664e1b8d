from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from config.accounts.api import OrgApiView
from config.core.pagination import array_response
from config.core.serialization import parse
from customers.backfill import model_map
from customers.selectors import usage_event_list
from customers.serializers import ModelMapIn, ModelMapOut, UsageEventOut


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


class ModelMapApi(OrgApiView):
    @extend_schema(operation_id="events_map_model", request=ModelMapIn,
                   responses={200: ModelMapOut, 201: ModelMapOut})
    def post(self, request):
        data = parse(ModelMapIn, request.data)
        mapping = model_map(book=self.book, **data)
        return Response(ModelMapOut(mapping).data, status=201 if mapping.created else 200)
