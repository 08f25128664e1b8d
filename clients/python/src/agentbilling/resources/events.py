"""`/v1/events`: the usage ledger, read."""
from __future__ import annotations

from agentbilling.models import Model, UsageEvent
from agentbilling.pagination import ARRAY, Page
from agentbilling.resources._base import Resource


class Events(Resource):
    path = "/v1/events"

    def list(self, *, limit: int | None = None, offset: int | None = None, **filters) -> Page[UsageEvent]:
        """Usage events, newest first; filters such as `customerExternalId`, `agentCode`, `signalName`,
        `eventStatus`, `idempotencyKey`, `startDate`, `endDate`. `usageCost` and `quantity` are decimal strings
        in the answer, `Decimal` as attributes."""
        return self._page(ARRAY, self.path, {**filters, "limit": limit, "offset": offset}, model=UsageEvent)

    def iter(self, **filters):
        return self._iter(ARRAY, self.path, filters, model=UsageEvent)

    def map_model(self, *, model: str, modelProvider: str, serviceId) -> Model:
        """Point an unknown model name at a catalog entry; events stored with cost null are backfilled (the
        answer's `jobId`: `client.jobs.wait`)."""
        return self._call("POST", f"{self.path}/map-model",
                          body={"model": model, "modelProvider": modelProvider, "serviceId": str(serviceId)})
