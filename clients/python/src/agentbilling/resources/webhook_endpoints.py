"""`/v1/webhook-endpoints`: create answers the `secret` once; verify deliveries with
`agentbilling.webhooks.verify`."""
from __future__ import annotations

from agentbilling.models import Model, WebhookEndpoint
from agentbilling.resources._base import Resource, path_id


class WebhookEndpoints(Resource):
    path = "/v1/webhook-endpoints"

    def list(self) -> list[WebhookEndpoint]:
        return self._call("GET", self.path, model=WebhookEndpoint)

    def create(self, **fields) -> WebhookEndpoint:
        return self._call("POST", self.path, body=fields, model=WebhookEndpoint)

    def get(self, id) -> WebhookEndpoint:
        return self._call("GET", f"{self.path}/{path_id(id)}", model=WebhookEndpoint)

    def update(self, id, **fields) -> WebhookEndpoint:
        return self._call("PATCH", f"{self.path}/{path_id(id)}", body=fields, model=WebhookEndpoint)

    def delete(self, id) -> Model:
        return self._call("DELETE", f"{self.path}/{path_id(id)}")

    def rotate_secret(self, id) -> WebhookEndpoint:
        return self._call("POST", f"{self.path}/{path_id(id)}/rotate-secret", model=WebhookEndpoint)

    def test(self, id) -> Model:
        return self._call("POST", f"{self.path}/{path_id(id)}/test")

    def deliveries(self, id, **params) -> Model:
        return self._call("GET", f"{self.path}/{path_id(id)}/deliveries", params=params)

    def resend(self, id, delivery_id) -> Model:
        return self._call("POST", f"{self.path}/{path_id(id)}/deliveries/{path_id(delivery_id)}/resend")

    def replay(self, id, since) -> Model:
        return self._call("POST", f"{self.path}/{path_id(id)}/replay", body={"since": since})
