from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.authentication import SessionAuthentication
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.api import ALL_SCOPES, OrgApiView
from accounts.models import Membership, Role
from accounts.openapi import SessionSchema
from accounts.serializers import (
    InvitationAcceptedOut, InvitationCreateIn, InvitationOut, KeyInfoOut, UserMeOut, VerifyOut,
)
from accounts.services import invitation_accept, invitation_create
from core import clock
from core.errors import Forbidden, NotFound, Unauthorized
from core.openapi import ErrorOut
from core.serialization import parse


class VerifyApi(OrgApiView):
    allow_publishable = True
    read_scopes = ALL_SCOPES

    @extend_schema(summary="Verify a key", responses=VerifyOut,
                   description="Checks the key and names the organization it belongs to.")
    def get(self, request):
        organization = self.organization
        return Response(VerifyOut({"organization": organization, "verified": True,
                                   "created_at": organization.created_at,
                                   "updated_at": organization.updated_at}).data)


class MeKeyApi(OrgApiView):
    allow_publishable = True
    read_scopes = ALL_SCOPES

    @extend_schema(summary="Describe the calling key", responses=KeyInfoOut,
                   description="The calling key's type, environment, scope and role (never its secret).")
    def get(self, request):
        return Response(KeyInfoOut(self.api_key).data)


class SessionApiView(APIView):
    """Routes for a signed-in person (dashboard session); API keys are refused with 403."""

    authentication_classes = [SessionAuthentication]
    schema = SessionSchema()

    def initial(self, request, *args, **kwargs):
        if request.META.get("HTTP_X_API_KEY"):
            raise Forbidden("This endpoint needs a signed-in user session; API keys are not accepted.")
        super().initial(request, *args, **kwargs)
        if not request.user or not request.user.is_authenticated:
            raise Unauthorized("Sign in to use this endpoint.")


class UserMeApi(SessionApiView):
    @extend_schema(summary="The signed-in user", responses=UserMeOut,
                   description="The signed-in person and their memberships. Needs a dashboard session.")
    def get(self, request):
        return Response(UserMeOut(request.user).data)


class InvitationCreateApi(SessionApiView):
    @extend_schema(summary="Invite a member", request=InvitationCreateIn,
                   responses={201: InvitationOut, 502: OpenApiResponse(
                       ErrorOut, description="The mail server refused the invitation email (`code: email_not_sent`); "
                                             "nothing was saved (invite again).")},
                   description="Invites a person into an organization; the signed-in user must be its "
                               "owner or admin. Needs a dashboard session.")
    def post(self, request):
        data = parse(InvitationCreateIn, request.data)
        membership = (Membership.objects.select_related("organization")
                      .filter(user=request.user, organization_id=data["organization_id"]).first())
        if membership is None:
            raise NotFound("Organization not found")
        if membership.role not in (Role.OWNER, Role.ADMIN):
            raise Forbidden("Only an owner or admin can invite members.")
        invitation, _ = invitation_create(organization=membership.organization, email=data["email"],
                                          role=data["role"], invited_by=request.user, now=clock.now())
        return Response(InvitationOut(invitation).data, status=201)


class InvitationAcceptApi(SessionApiView):
    @extend_schema(summary="Accept an invitation", request=None,
                   parameters=[OpenApiParameter("token", str, OpenApiParameter.PATH,
                                                description="The token from the invitation email.")],
                   responses={201: InvitationAcceptedOut},
                   description="Makes the signed-in user a member with the invited role. Needs a dashboard "
                               "session.")
    def post(self, request, token):
        membership = invitation_accept(raw_token=token, user=request.user, now=clock.now())
        return Response(InvitationAcceptedOut({"accepted": True, "organization_id": membership.organization_id,
                                               "role": membership.role}).data, status=201)
