"""`/v1/signals`."""
from __future__ import annotations

from typing import Sequence

from agentbilling.models import Signal
from agentbilling.resources._base import Delete, Get, OffsetList, Update


class Signals(Get, Update, Delete, OffsetList):
    path = "/v1/signals"
    model = Signal

    def create(self, *, name: str, agentId, **fields) -> Signal:
        return self._call("POST", self.path, body={"name": name, "agentId": str(agentId), **fields}, model=Signal)

    def bulk_create(self, *, agentId, signals: Sequence[dict]) -> list[Signal]:
        return self._call("POST", f"{self.path}/bulk", body={"agentId": str(agentId), "signals": list(signals)},
                          model=Signal)
