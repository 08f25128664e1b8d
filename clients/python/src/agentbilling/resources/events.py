"""`/v1/events`: the usage ledger, read."""
from __future__ import annotations

from agentbilling.models import Model, UsageEvent
from agentbilling.resources._base import OffsetList


class Events(OffsetList):
    """Usage events, newest first (`list`, `iter`); filters such as `customerExternalId`, `agentCode`,
    `signalName`, `eventStatus`, `idempotencyKey`, `startDate`, `endDate`. `usageCost` and `quantity` are
    decimal strings in the answer, `Decimal` as attributes."""

    path = "/v1/events"
    model = UsageEvent

    def map_model(self, *, model: str, modelProvider: str, serviceId) -> Model:
        """Point an unknown model name at a catalog entry; events stored with cost null are backfilled (the
        answer's `jobId`: `client.jobs.wait`)."""
        return self._call("POST", f"{self.path}/map-model",
                          body={"model": model, "modelProvider": modelProvider, "serviceId": str(serviceId)})
