"""A plan's pricing strategies: `/v1/pricing-plans/{planId}/pricing-strategies` (`client.plans.strategies`)."""
from __future__ import annotations

from typing import Sequence

from agentbilling.models import Model, PricingStrategy
from agentbilling.pagination import RESULTS, Page
from agentbilling.resources._base import Resource, path_id


class Strategies(Resource):
    @staticmethod
    def _path(plan_id) -> str:
        return f"/v1/pricing-plans/{path_id(plan_id)}/pricing-strategies"

    def create(self, plan_id, strategies: Sequence[dict]) -> list[PricingStrategy]:
        """Create several strategies at once (the API takes an array, even for one)."""
        return self._call("POST", self._path(plan_id), body=list(strategies), model=PricingStrategy)

    def list(self, plan_id, *, page: int | None = None, limit: int | None = None, **filters
             ) -> Page[PricingStrategy]:
        return self._page(RESULTS, self._path(plan_id), {**filters, "page": page, "limit": limit},
                          model=PricingStrategy)

    def iter(self, plan_id, **filters):
        return self._iter(RESULTS, self._path(plan_id), filters, model=PricingStrategy)

    def get(self, plan_id, strategy_id) -> PricingStrategy:
        return self._call("GET", f"{self._path(plan_id)}/{path_id(strategy_id)}", model=PricingStrategy)

    def update(self, plan_id, strategy_id, **fields) -> PricingStrategy:
        return self._call("PATCH", f"{self._path(plan_id)}/{path_id(strategy_id)}", body=fields,
                          model=PricingStrategy)

    def delete(self, plan_id, strategy_id) -> None:
        return self._call("DELETE", f"{self._path(plan_id)}/{path_id(strategy_id)}")

    def batch(self, plan_id, *, new: Sequence[dict] = (), update: Sequence[dict] = ()) -> Model:
        """Create and change several strategies in one request: `{strategies: {new, update}}`."""
        return self._call("PATCH", self._path(plan_id),
                          body={"strategies": {"new": list(new), "update": list(update)}})
