"""`/v1/pricing-plans`, with their strategies under `plans.strategies`."""
from __future__ import annotations

from agentbilling._http import Transport
from agentbilling.models import PricingPlan
from agentbilling.resources._base import Delete, Get, PageList, Update, path_id
from agentbilling.resources.strategies import Strategies


class Plans(Get, Update, Delete, PageList):
    """`list` answers `{results, page, limit, totalPages, totalResults}`; filters `agentId`, `isActive`."""

    path = "/v1/pricing-plans"
    model = PricingPlan

    def __init__(self, transport: Transport):
        super().__init__(transport)
        self.strategies = Strategies(transport)

    def create(self, *, name: str, **fields) -> PricingPlan:
        return self._call("POST", self.path, body={"name": name, **fields}, model=PricingPlan)

    def link_agent(self, id, agent_id) -> PricingPlan:
        return self._call("POST", f"{self._member(id)}/agents", body={"agentId": str(agent_id)}, model=PricingPlan)

    def unlink_agent(self, id, agent_id) -> None:
        return self._call("DELETE", f"{self._member(id)}/agents/{path_id(agent_id)}")

    def copy(self, id, **fields) -> PricingPlan:
        """Copy with its strategies and agent links; optional `newName`, `discount` (percent off every rate)."""
        return self._call("POST", f"{self._member(id)}/copy", body=fields, model=PricingPlan)
