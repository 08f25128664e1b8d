from datetime import datetime

from webhooks.delivery import webhook_deliveries_sweep
from tests.billing.support import ok


def create_endpoint(api, url, **fields) -> dict:
    return ok(api.post("/v1/webhook-endpoints", {"url": url, **fields}), 201)


def deliveries(api, endpoint_id, **params) -> list[dict]:
    return ok(api.get(f"/v1/webhook-endpoints/{endpoint_id}/deliveries", params))["data"]


def sweep(now: datetime) -> str:
    """The scheduled job that sends due deliveries, as run_scheduled_jobs runs it at `now`."""
    return webhook_deliveries_sweep(now=now)
