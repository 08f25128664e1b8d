"""`/v1/customers`."""
from __future__ import annotations

from agentbilling.models import Customer, Model
from agentbilling.resources._base import Delete, Get, OffsetList, Update


class Customers(Get, Update, Delete, OffsetList):
    path = "/v1/customers"
    model = Customer

    def create(self, *, name: str, **fields) -> Customer:
        return self._call("POST", self.path, body={"name": name, **fields}, model=Customer)

    def revenue(self, id, *, startDate=None, endDate=None) -> Model:
        """RevenueMetrics of one customer (default window: the last 30 days, UTC)."""
        return self._call("GET", f"{self._member(id)}/revenue", params={"startDate": startDate, "endDate": endDate})
