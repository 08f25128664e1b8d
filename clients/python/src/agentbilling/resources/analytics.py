"""`/v1/analytics/...`: usage, cost, MRR and revenue reports (answers as `Model`s: dicts, numbers exact)."""
from __future__ import annotations

from agentbilling.models import Model
from agentbilling.resources._base import Resource


class Analytics(Resource):
    def usage(self, **query) -> Model:
        """`startDate`, `endDate`, `customerId`, `agentId`, `signalId`, `groupBy`, `breakdownBy`."""
        return self._call("GET", "/v1/analytics/usage", params=query)

    def cost(self, *, startDate, endDate, **query) -> Model:
        return self._call("GET", "/v1/analytics/cost", params={"startDate": startDate, "endDate": endDate, **query})

    def mrr(self, **query) -> Model:
        """`variant` (`canonical`, `runRate`, `committed`, `all`), `customerId`, `subscriptionId`."""
        return self._call("GET", "/v1/analytics/mrr", params=query)

    def revenue(self, **query) -> Model:
        return self._call("GET", "/v1/analytics/revenue", params=query)
