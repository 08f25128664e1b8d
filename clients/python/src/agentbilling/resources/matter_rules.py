"""`/v1/matter-rules`: rules that attribute events to matters, and the sweep that applies them."""
from __future__ import annotations

from agentbilling.models import MatterRule, Model
from agentbilling.pagination import RESULTS, Page
from agentbilling.resources._base import Resource, path_id


class MatterRules(Resource):
    path = "/v1/matter-rules"

    def create(self, *, matterId, **fields) -> MatterRule:
        return self._call("POST", self.path, body={"matterId": str(matterId), **fields}, model=MatterRule)

    def update(self, id, **fields) -> MatterRule:
        return self._call("PATCH", f"{self.path}/{path_id(id)}", body=fields, model=MatterRule)

    def delete(self, id) -> Model:
        return self._call("DELETE", f"{self.path}/{path_id(id)}")

    def list(self, *, page: int | None = None, limit: int | None = None) -> Page[MatterRule]:
        return self._page(RESULTS, self.path, {"page": page, "limit": limit}, model=MatterRule)

    def iter(self):
        return self._iter(RESULTS, self.path, {}, model=MatterRule)

    def apply(self) -> Model:
        """Sweep the unassigned events through the rules (the rest of a long sweep: the answer's `jobId`)."""
        return self._call("POST", f"{self.path}/apply", body={})
