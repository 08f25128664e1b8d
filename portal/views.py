"""/v1/portal-sessions: parse, call one service or selector, render. Publishable keys get 401 (spec §4, §5.7)."""
from django.utils.cache import add_never_cache_headers
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from accounts.api import OrgApiView
from core import clock
from core.openapi import ErrorOut
from core.pagination import array_response
from core.serialization import parse
from portal import selectors, services
from portal.serializers import (PortalSessionCreateIn, PortalSessionCreateOut, PortalSessionDetailOut,
                                PortalSessionOut, PortalSessionQueryIn)

DEFAULT_LIMIT = 10  # spec §8


class PortalSessionApi(OrgApiView):
    publishable_status = 401


class PortalSessionListCreateApi(PortalSessionApi):
    @extend_schema(request=PortalSessionCreateIn, responses={201: PortalSessionCreateOut, 404: ErrorOut},
                   description="A one-time link to the customer's hosted portal, valid for one hour. `url` and "
                               "`token` are in this answer only.")
    def post(self, request):
        """Create a portal link for a customer."""
        data = parse(PortalSessionCreateIn, request.data)
        session, token = services.portal_session_create(book=self.book, now=clock.now(),
                                                        created_by=self.created_by, **data)
        response = Response(PortalSessionCreateOut(session, context={"token": token}).data, status=201)
        add_never_cache_headers(response)  # it carries the link's token: no cache may keep it (no-store)
        return response

    @extend_schema(parameters=[
        PortalSessionQueryIn,
        OpenApiParameter("limit", OpenApiTypes.INT, description="Rows, 1-100 (default 10)."),
        OpenApiParameter("offset", OpenApiTypes.INT, description="Rows to skip (default 0). The total is in "
                                                                  "the X-Total-Count header."),
    ], responses=PortalSessionOut(many=True))
    def get(self, request):
        """List portal sessions.

        Links created for the book's customers, newest first; by default only those that can still be opened
        (`includeExpired=true` adds used, expired and revoked ones). A bare array of one window (`limit`, `offset`,
        default 10); the total is in the `X-Total-Count` header."""
        now = clock.now()
        query = parse(PortalSessionQueryIn, request.query_params)
        sessions = selectors.portal_session_list(book=self.book, now=now, **query)
        return array_response(sessions, request.query_params, PortalSessionOut, context={"now": now},
                              default_limit=DEFAULT_LIMIT)


class PortalSessionDetailApi(PortalSessionApi):
    @extend_schema(responses=PortalSessionDetailOut)
    def get(self, request, session_id):
        """Get a portal session.

        One link with its customer and state (`usedAt`, `revokedAt` once set); its token and url are shown only when it
        is created."""
        session = selectors.portal_session_get(book=self.book, session_id=session_id)
        return Response(PortalSessionDetailOut(session, context={"now": clock.now()}).data)

    @extend_schema(responses={204: OpenApiResponse(description="Revoked: the link and its portal stop working.")})
    def delete(self, request, session_id):
        """Revoke a portal session.

        The link and the portal it opened stop working at once."""
        services.portal_session_revoke(book=self.book, session_id=session_id, now=clock.now())
        return Response(status=204)
