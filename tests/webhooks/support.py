from datetime import datetime, timedelta

from django.core.management import call_command

from config.webhooks.delivery import webhook_deliveries_sweep
from tests.billing.support import ok


def create_endpoint(api, url, **fields) -> dict:
    return ok(api.post("/v1/webhook-endpoints", {"url": url, **fields}), 201)


def deliveries(api, endpoint_id, **params) -> list[dict]:
    return ok(api.get(f"/v1/webhook-endpoints/{endpoint_id}/deliveries", params))["data"]


def sweep(now: datetime) -> str:
    """The scheduled job that sends due deliveries, as run_scheduled_jobs runs it at `now`."""
    return webhook_deliveries_sweep(now=now)


def later(seconds: float) -> datetime:
    from config.core import clock
    return clock.now() + timedelta(seconds=seconds)
