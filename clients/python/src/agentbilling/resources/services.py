"""`/v1/services`: the read-only services catalog."""
from __future__ import annotations

from agentbilling.models import CatalogService
from agentbilling.pagination import DATA_PAGINATION, Page
from agentbilling.resources._base import Resource, path_id


class Services(Resource):
    path = "/v1/services"

    def list(self, *, page: int | None = None, limit: int | None = None, **filters) -> Page[CatalogService]:
        """`{data, pagination}`; filters `provider`, `serviceType`, `isApi`, `search`."""
        return self._page(DATA_PAGINATION, self.path, {**filters, "page": page, "limit": limit},
                          model=CatalogService)

    def iter(self, **filters):
        return self._iter(DATA_PAGINATION, self.path, filters, model=CatalogService)

    def get(self, id) -> CatalogService:
        return self._call("GET", f"{self.path}/{path_id(id)}", model=CatalogService)
