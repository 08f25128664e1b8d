"""`/v1/portal-sessions`: one-time links to the hosted customer portal."""
from __future__ import annotations

from agentbilling.models import PortalSession
from agentbilling.pagination import ARRAY, Page
from agentbilling.resources._base import Resource, path_id


class PortalSessions(Resource):
    path = "/v1/portal-sessions"

    def create(self, *, customerExternalId: str | None = None, customerId=None, **fields) -> PortalSession:
        """A one-time link (`url`, `token`: only in this answer), valid for one hour."""
        body = dict(fields)
        if customerExternalId is not None:
            body["customerExternalId"] = customerExternalId
        if customerId is not None:
            body["customerId"] = str(customerId)
        return self._call("POST", self.path, body=body, model=PortalSession)

    def list(self, *, limit: int | None = None, offset: int | None = None, **filters) -> Page[PortalSession]:
        """Bare array (default 10 a window); filters `customerId`, `includeExpired`."""
        return self._page(ARRAY, self.path, {**filters, "limit": limit, "offset": offset}, model=PortalSession)

    def iter(self, **filters):
        return self._iter(ARRAY, self.path, filters, model=PortalSession)

    def get(self, id) -> PortalSession:
        return self._call("GET", f"{self.path}/{path_id(id)}", model=PortalSession)

    def revoke(self, id) -> None:
        return self._call("DELETE", f"{self.path}/{path_id(id)}")
