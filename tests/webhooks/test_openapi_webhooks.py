"""The OpenAPI document describes every event type (the root's `x-webhooks`, OpenAPI 3.0's place for them), each
body's `data` referring to a component the document defines."""
import pytest

from webhooks.models import EventType

pytestmark = pytest.mark.django_db


def refs(node) -> list[str]:
    if isinstance(node, dict):
        return [node["$ref"]] if "$ref" in node else [ref for value in node.values() for ref in refs(value)]
    if isinstance(node, list):
        return [ref for value in node for ref in refs(value)]
    return []


def test_every_event_type_is_described_with_its_headers_and_body(client):
    schema = client.get("/v1/openapi.json").json()
    webhooks = schema["x-webhooks"]
    assert set(webhooks) == set(EventType.values)
    paid = webhooks["invoice.paid"]["post"]
    assert [parameter["name"] for parameter in paid["parameters"]] == ["webhook-id", "webhook-timestamp",
                                                                       "webhook-signature"]
    body = paid["requestBody"]["content"]["application/json"]["schema"]
    assert body["properties"]["data"] == {"$ref": "#/components/schemas/InvoiceOut"}
    assert body["required"] == ["id", "type", "createdAt", "data"]
    for ref in refs(webhooks):
        assert ref.rsplit("/", 1)[1] in schema["components"]["schemas"], ref
