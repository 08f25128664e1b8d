"""`/v1/portal-sessions`: one-time links to the hosted customer portal."""
from __future__ import annotations

from agentbilling.models import PortalSession
from agentbilling.resources._base import Get, OffsetList


class PortalSessions(Get, OffsetList):
    """`list` is a bare array (default 10 a window); filters `customerId`, `includeExpired`."""

    path = "/v1/portal-sessions"
    model = PortalSession

    def create(self, *, customerExternalId: str | None = None, customerId=None, **fields) -> PortalSession:
        """A one-time link (`url`, `token`: only in this answer), valid for one hour."""
        body = dict(fields)
        if customerExternalId is not None:
            body["customerExternalId"] = customerExternalId
        if customerId is not None:
            body["customerId"] = str(customerId)
        return self._call("POST", self.path, body=body, model=PortalSession)

    def revoke(self, id) -> None:
        return self._call("DELETE", self._member(id))
