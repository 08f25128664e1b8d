"""`/v1/webhook-endpoints`: create answers the `secret` once; verify deliveries with
`agentbilling.webhooks.verify`."""
from __future__ import annotations

from agentbilling.models import Model, WebhookEndpoint
from agentbilling.resources._base import Create, Delete, Get, ListAll, Update, path_id


class WebhookEndpoints(ListAll, Create, Get, Update, Delete):
    path = "/v1/webhook-endpoints"
    model = WebhookEndpoint

    def rotate_secret(self, id) -> WebhookEndpoint:
        return self._call("POST", f"{self._member(id)}/rotate-secret", model=WebhookEndpoint)

    def test(self, id) -> Model:
        return self._call("POST", f"{self._member(id)}/test")

    def deliveries(self, id, **params) -> Model:
        return self._call("GET", f"{self._member(id)}/deliveries", params=params)

    def resend(self, id, delivery_id) -> Model:
        return self._call("POST", f"{self._member(id)}/deliveries/{path_id(delivery_id)}/resend")

    def replay(self, id, since) -> Model:
        return self._call("POST", f"{self._member(id)}/replay", body={"since": since})
