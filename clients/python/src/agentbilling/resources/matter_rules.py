"""`/v1/matter-rules`: rules that attribute events to matters, and the sweep that applies them."""
from __future__ import annotations

from agentbilling.models import MatterRule, Model
from agentbilling.resources._base import Delete, PageList, Update


class MatterRules(Update, Delete, PageList):
    path = "/v1/matter-rules"
    model = MatterRule

    def create(self, *, matterId, **fields) -> MatterRule:
        return self._call("POST", self.path, body={"matterId": str(matterId), **fields}, model=MatterRule)

    def apply(self) -> Model:
        """Sweep the unassigned events through the rules (the rest of a long sweep: the answer's `jobId`)."""
        return self._call("POST", f"{self.path}/apply", body={})
