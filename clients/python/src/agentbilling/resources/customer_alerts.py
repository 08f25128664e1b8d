"""`/v1/customer-alerts`: spend watches on one customer."""
from __future__ import annotations

from agentbilling.models import CustomerAlert, Model
from agentbilling.resources._base import Resource, path_id


class CustomerAlerts(Resource):
    path = "/v1/customer-alerts"

    def list(self) -> list[CustomerAlert]:
        return self._call("GET", self.path, model=CustomerAlert)

    def create(self, **fields) -> CustomerAlert:
        return self._call("POST", self.path, body=fields, model=CustomerAlert)

    def update(self, id, **fields) -> CustomerAlert:
        return self._call("PATCH", f"{self.path}/{path_id(id)}", body=fields, model=CustomerAlert)

    def delete(self, id) -> Model:
        return self._call("DELETE", f"{self.path}/{path_id(id)}")
