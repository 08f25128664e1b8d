"""`/v1/pricing-plans`, with their strategies under `plans.strategies`."""
from __future__ import annotations

from agentbilling._http import Transport
from agentbilling.models import PricingPlan
from agentbilling.pagination import RESULTS, Page
from agentbilling.resources._base import Resource, path_id
from agentbilling.resources.strategies import Strategies


class Plans(Resource):
    path = "/v1/pricing-plans"

    def __init__(self, transport: Transport):
        super().__init__(transport)
        self.strategies = Strategies(transport)

    def create(self, *, name: str, **fields) -> PricingPlan:
        return self._call("POST", self.path, body={"name": name, **fields}, model=PricingPlan)

    def get(self, id) -> PricingPlan:
        return self._call("GET", f"{self.path}/{path_id(id)}", model=PricingPlan)

    def update(self, id, **fields) -> PricingPlan:
        return self._call("PATCH", f"{self.path}/{path_id(id)}", body=fields, model=PricingPlan)

    def delete(self, id) -> None:
        return self._call("DELETE", f"{self.path}/{path_id(id)}")

    def list(self, *, page: int | None = None, limit: int | None = None, **filters) -> Page[PricingPlan]:
        """`{results, page, limit, totalPages, totalResults}`; filters `agentId`, `isActive`."""
        return self._page(RESULTS, self.path, {**filters, "page": page, "limit": limit}, model=PricingPlan)

    def iter(self, **filters):
        return self._iter(RESULTS, self.path, filters, model=PricingPlan)

    def link_agent(self, id, agent_id) -> PricingPlan:
        return self._call("POST", f"{self.path}/{path_id(id)}/agents", body={"agentId": str(agent_id)},
                          model=PricingPlan)

    def unlink_agent(self, id, agent_id) -> None:
        return self._call("DELETE", f"{self.path}/{path_id(id)}/agents/{path_id(agent_id)}")

    def copy(self, id, **fields) -> PricingPlan:
        """Copy with its strategies and agent links; optional `newName`, `discount` (percent off every rate)."""
        return self._call("POST", f"{self.path}/{path_id(id)}/copy", body=fields, model=PricingPlan)
