"""`/v1/matters`: matters and the attribution of events to them."""
from __future__ import annotations

from agentbilling.models import Matter, Model
from agentbilling.pagination import RESULTS, Page
from agentbilling.resources._base import Delete, PageList, Update


class Matters(Update, Delete, PageList):
    path = "/v1/matters"
    model = Matter

    def create(self, *, matterNumber: str, name: str, clientName: str, **fields) -> Matter:
        return self._call("POST", self.path, model=Matter, body={"matterNumber": matterNumber, "name": name,
                                                                 "clientName": clientName, **fields})

    def get(self, id) -> Model:
        """The matter with its events and totals."""
        return self._call("GET", self._member(id))

    def unassigned(self, *, page: int | None = None, limit: int | None = None) -> Page[Model]:
        """Unassigned event rows; `page.raw` also has `totalCost` and `eventsMissingCost`."""
        return self._page(RESULTS, f"{self.path}/unassigned", {"page": page, "limit": limit})

    def assign(self, *, eventId, matterId) -> Model:
        return self._call("POST", f"{self.path}/assign",
                          body={"eventId": str(eventId), "matterId": None if matterId is None else str(matterId)})
