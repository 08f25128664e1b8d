"""A URL conf of probe views, one per policy shape, to test the auth layer on its own."""
from django.urls import path
from rest_framework.response import Response

from accounts.api import ALL_SCOPES, OrgApiView
from core.errors import Conflict
from config.urls import urlpatterns as project_patterns


class ProbeApi(OrgApiView):
    def get(self, request):
        return Response({"book": str(self.book.id), "environment": self.book.environment})

    def post(self, request):
        return Response({"ok": True, "received": request.data}, status=201)


class CapsLikeApi(ProbeApi):
    read_scopes = ALL_SCOPES
    write_roles = {"owner", "finance"}


class MattersLikeApi(ProbeApi):
    read_scopes = write_scopes = frozenset({"full", "legal"})
    read_roles = write_roles = {"owner", "admin", "finance", "legal"}


class RecordLikeApi(ProbeApi):
    write_scopes = ALL_SCOPES


class PortalLikeApi(ProbeApi):
    publishable_status = 401


class ConflictApi(ProbeApi):
    def get(self, request):
        raise Conflict("externalId already exists")


class CrashApi(ProbeApi):
    def get(self, request):
        raise RuntimeError("secret internals: password=hunter2")


urlpatterns = [
    path("v1/probe", ProbeApi.as_view()),
    path("v1/probe/caps", CapsLikeApi.as_view()),
    path("v1/probe/matters", MattersLikeApi.as_view()),
    path("v1/probe/record", RecordLikeApi.as_view()),
    path("v1/probe/portal", PortalLikeApi.as_view()),
    path("v1/probe/conflict", ConflictApi.as_view()),
    path("v1/probe/crash", CrashApi.as_view()),
    *project_patterns,
]
