from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.response import Response

from catalog.selectors import service_get, service_list
from catalog.serializers import ServiceOut, ServicePageOut
from accounts.api import OrgApiView
from core.pagination import data_page_response

LIST_PARAMETERS = [
    OpenApiParameter("provider", OpenApiTypes.STR, description="Provider, case-insensitive (e.g. openai)."),
    OpenApiParameter("serviceType", OpenApiTypes.STR, description="Category label (chat, embedding, web_search...)."),
    OpenApiParameter("isApi", OpenApiTypes.STR, enum=["true", "false"],
                     description="true: non-LLM services only; false: LLM (token-priced) only."),
    OpenApiParameter("search", OpenApiTypes.STR, description="Case-insensitive match in canonicalName or displayName."),
    OpenApiParameter("page", OpenApiTypes.INT, description="1-based page, default 1."),
    OpenApiParameter("limit", OpenApiTypes.INT, description="Page size 1-100, default 50."),
]


class ServiceListApi(OrgApiView):
    """The global services catalog (not organization-scoped); inactive entries are hidden."""

    @extend_schema(operation_id="services_list", parameters=LIST_PARAMETERS, responses=ServicePageOut)
    def get(self, request):
        """List catalog services."""
        return data_page_response(service_list(params=request.query_params), request.query_params, ServiceOut)


class ServiceDetailApi(OrgApiView):
    """One active catalog entry; a missing or deactivated id is a 404."""

    @extend_schema(operation_id="services_get", responses=ServiceOut)
    def get(self, request, service_id):
        """Get a catalog service."""
        return Response(ServiceOut(service_get(service_id=service_id)).data)
