"""`/v1/control/...`: spend caps, spend, device coverage and the pre-call check."""
from __future__ import annotations

from agentbilling.models import Model, SpendCap
from agentbilling.resources._base import Resource, path_id


class SpendControls(Resource):
    def caps(self) -> list[SpendCap]:
        return self._call("GET", "/v1/control/caps", model=SpendCap)

    def create_cap(self, **fields) -> SpendCap:
        return self._call("POST", "/v1/control/caps", body=fields, model=SpendCap)

    def update_cap(self, id, **fields) -> SpendCap:
        return self._call("PATCH", f"/v1/control/caps/{path_id(id)}", body=fields, model=SpendCap)

    def delete_cap(self, id) -> Model:
        return self._call("DELETE", f"/v1/control/caps/{path_id(id)}")

    def spend(self, *, period: str, customerExternalId: str | None = None) -> Model:
        return self._call("GET", "/v1/control/spend", params={"period": period,
                                                              "customerExternalId": customerExternalId})

    def coverage(self) -> Model:
        return self._call("GET", "/v1/control/coverage")

    def heartbeat(self, *, customerExternalId: str, deviceId: str, armed: bool) -> Model:
        return self._call("POST", "/v1/control/devices/heartbeat", replay_safe=True, body={
            "customerExternalId": customerExternalId, "deviceId": deviceId, "armed": armed})

    def check(self, *, customerExternalId: str) -> Model:
        return self._call("GET", "/v1/control/check", params={"customerExternalId": customerExternalId})
