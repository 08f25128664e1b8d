"""The typed client for the /v1 surface.

    from agentbilling import Client
    client = Client(api_key="svc_sk_test_...", base_url="http://127.0.0.1:8000")
    customer = client.customers.create(name="Acme", externalId="cust-42")
    for event in client.events.iter(customerExternalId="cust-42"):
        ...

Request fields are passed as keyword arguments named as the API names them (camelCase, spec §2) and sent as
they are; answers are the API's JSON objects (`dict`s typed in `agentbilling.types`), numbers with a
fraction as `Decimal`. Errors raise `agentbilling.errors.APIError` subclasses carrying `status`, `message`
and `code`. Reads are retried on 429, 5xx and connection errors (500 once); writes only where nothing ran
(429, `503 auth_unavailable`); usage records always, since each carries an idempotency key.

For the hot path use `agentbilling.Recorder` (buffered, batched, retried in the background), not
`client.usage.record` in a loop.
"""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Any, Iterator, Sequence
from urllib.parse import quote

import httpx

from agentbilling import _json
from agentbilling._http import RetryPolicy, SyncTransport
from agentbilling.pagination import (ARRAY, DATA_PAGINATION, HAS_MORE, MAX_PAGE_SIZE, RESULTS, Page, parse_page,
                                     window_params)

if TYPE_CHECKING:
    from agentbilling.types import (Agent, CatalogService, CreditBalance, CreditTopup, Customer, Invoice,
                                    InvoiceRow, PortalSession, PricingPlan, PricingStrategy, Signal,
                                    Subscription, UsageRecord, UsageRecordResponse)

MAX_RECORDS_PER_REQUEST = 100  # spec §8


def new_idempotency_key() -> str:
    """A fresh idempotency key: 128 random bits (the service takes up to 255 characters)."""
    return "ab-" + os.urandom(16).hex()


def _id(value) -> str:
    return quote(str(value), safe="")


class _Resource:
    def __init__(self, client: "Client"):
        self._client = client

    def _call(self, method: str, path: str, *, params=None, body: Any = None, replay_safe: bool | None = None):
        response = self._client._transport.request(method, path, params=params, body=body, replay_safe=replay_safe)
        return _json.loads(response.content) if response.content else None

    def _page(self, shape: str, path: str, params: dict, *, page_size: int | None = None) -> Page:
        params = window_params(shape, {k: v for k, v in params.items() if v is not None}, page_size=page_size)
        response = self._client._transport.request("GET", path, params=params)
        body = _json.loads(response.content)
        items, total, has_more, next_params = parse_page(shape, body, response.headers, params)
        fetch_next = (lambda: self._page(shape, path, next_params)) if next_params else None
        return Page(items=items, total=total, has_more=has_more, raw=body, _fetch_next=fetch_next)

    def _iter(self, shape: str, path: str, params: dict) -> Iterator:
        params = {**params, "limit": params.get("limit") or MAX_PAGE_SIZE}
        return self._page(shape, path, params).auto_paging_iter()


class _Crud(_Resource):
    """create / get / update / list / iter on `/v1/<name>` with a bare-array list."""

    path = ""

    def create(self, **fields) -> dict:
        return self._call("POST", self.path, body=fields)

    def get(self, id) -> dict:
        return self._call("GET", f"{self.path}/{_id(id)}")

    def update(self, id, **fields) -> dict:
        return self._call("PATCH", f"{self.path}/{_id(id)}", body=fields)

    def list(self, *, limit: int | None = None, offset: int | None = None, **filters) -> Page:
        """One window (`limit` 1-100, default 100): `page.items`, `page.total` (X-Total-Count)."""
        return self._page(ARRAY, self.path, {**filters, "limit": limit, "offset": offset})

    def iter(self, **filters) -> Iterator[dict]:
        """Every row matching the filters, fetched 100 at a time."""
        return self._iter(ARRAY, self.path, filters)


class _DeletableCrud(_Crud):
    def delete(self, id) -> None:
        self._call("DELETE", f"{self.path}/{_id(id)}")


class Usage(_Resource):
    def record(self, records: Sequence["UsageRecord"], *, add_idempotency_keys: bool = True) -> "UsageRecordResponse":
        """`POST /v1/usage/record`, in requests of up to 100 records; the answers are merged into one (each
        entry's `index` is its position in `records`). Records without an `idempotencyKey` get one (unless
        `add_idempotency_keys=False`), so that a retried request stores nothing twice."""
        records = [dict(record) for record in records]
        if add_idempotency_keys:
            for record in records:
                if not record.get("idempotencyKey"):
                    record["idempotencyKey"] = new_idempotency_key()
        merged: dict = {"processed": 0, "successful": 0, "failed": 0, "results": {"success": [], "failed": []}}
        for start in range(0, len(records), MAX_RECORDS_PER_REQUEST):
            answer = self._call("POST", "/v1/usage/record",
                                body={"records": records[start:start + MAX_RECORDS_PER_REQUEST]},
                                replay_safe=add_idempotency_keys)
            for name in ("processed", "successful", "failed"):
                merged[name] += answer[name]
            for outcome in ("success", "failed"):
                for entry in answer["results"][outcome]:
                    merged["results"][outcome].append({**entry, "index": entry.get("index", 0) + start})
        return merged  # type: ignore[return-value]


class Events(_Resource):
    def list(self, *, limit: int | None = None, offset: int | None = None, **filters) -> Page:
        """Usage events, newest first; filters such as `customerExternalId`, `agentCode`, `signalName`,
        `eventStatus`, `idempotencyKey`, `startDate`, `endDate`. `usageCost` and `quantity` are strings."""
        return self._page(ARRAY, "/v1/events", {**filters, "limit": limit, "offset": offset})

    def iter(self, **filters) -> Iterator[dict]:
        return self._iter(ARRAY, "/v1/events", filters)

    def map_model(self, *, model: str, modelProvider: str, serviceId) -> dict:
        """Point an unknown model name at a catalog entry; events stored with cost null are backfilled."""
        return self._call("POST", "/v1/events/map-model",
                          body={"model": model, "modelProvider": modelProvider, "serviceId": str(serviceId)})


class Customers(_DeletableCrud):
    path = "/v1/customers"

    def create(self, *, name: str, **fields) -> "Customer":
        return self._call("POST", self.path, body={"name": name, **fields})

    def revenue(self, id, *, startDate=None, endDate=None) -> dict:
        """RevenueMetrics of one customer (default window: the last 30 days, UTC)."""
        return self._call("GET", f"{self.path}/{_id(id)}/revenue",
                          params={"startDate": startDate, "endDate": endDate})


class Agents(_DeletableCrud):
    path = "/v1/agents"

    def create(self, *, name: str, agentCode: str, **fields) -> "Agent":
        return self._call("POST", self.path, body={"name": name, "agentCode": agentCode, **fields})


class Signals(_DeletableCrud):
    path = "/v1/signals"

    def create(self, *, name: str, agentId, **fields) -> "Signal":
        return self._call("POST", self.path, body={"name": name, "agentId": str(agentId), **fields})

    def bulk_create(self, *, agentId, signals: Sequence[dict]) -> list["Signal"]:
        return self._call("POST", f"{self.path}/bulk", body={"agentId": str(agentId), "signals": list(signals)})


class Strategies(_Resource):
    """A plan's pricing strategies: `/v1/pricing-plans/{planId}/pricing-strategies`."""

    @staticmethod
    def _path(plan_id) -> str:
        return f"/v1/pricing-plans/{_id(plan_id)}/pricing-strategies"

    def create(self, plan_id, strategies: Sequence["PricingStrategy"]) -> list["PricingStrategy"]:
        """Create several strategies at once (the API takes an array, even for one)."""
        return self._call("POST", self._path(plan_id), body=list(strategies))

    def list(self, plan_id, *, page: int | None = None, limit: int | None = None, **filters) -> Page:
        return self._page(RESULTS, self._path(plan_id), {**filters, "page": page, "limit": limit})

    def iter(self, plan_id, **filters) -> Iterator["PricingStrategy"]:
        return self._iter(RESULTS, self._path(plan_id), filters)

    def get(self, plan_id, strategy_id) -> "PricingStrategy":
        return self._call("GET", f"{self._path(plan_id)}/{_id(strategy_id)}")

    def update(self, plan_id, strategy_id, **fields) -> "PricingStrategy":
        return self._call("PATCH", f"{self._path(plan_id)}/{_id(strategy_id)}", body=fields)

    def delete(self, plan_id, strategy_id) -> None:
        self._call("DELETE", f"{self._path(plan_id)}/{_id(strategy_id)}")

    def batch(self, plan_id, *, new: Sequence[dict] = (), update: Sequence[dict] = ()) -> dict:
        """Create and change several strategies in one request: `{strategies: {new, update}}`."""
        return self._call("PATCH", self._path(plan_id),
                          body={"strategies": {"new": list(new), "update": list(update)}})


class Plans(_Resource):
    path = "/v1/pricing-plans"

    def __init__(self, client: "Client"):
        super().__init__(client)
        self.strategies = Strategies(client)

    def create(self, *, name: str, **fields) -> "PricingPlan":
        return self._call("POST", self.path, body={"name": name, **fields})

    def get(self, id) -> "PricingPlan":
        return self._call("GET", f"{self.path}/{_id(id)}")

    def update(self, id, **fields) -> "PricingPlan":
        return self._call("PATCH", f"{self.path}/{_id(id)}", body=fields)

    def delete(self, id) -> None:
        self._call("DELETE", f"{self.path}/{_id(id)}")

    def list(self, *, page: int | None = None, limit: int | None = None, **filters) -> Page:
        """`{results, page, limit, totalPages, totalResults}`; filters `agentId`, `isActive`."""
        return self._page(RESULTS, self.path, {**filters, "page": page, "limit": limit})

    def iter(self, **filters) -> Iterator["PricingPlan"]:
        return self._iter(RESULTS, self.path, filters)

    def link_agent(self, id, agent_id) -> "PricingPlan":
        return self._call("POST", f"{self.path}/{_id(id)}/agents", body={"agentId": str(agent_id)})

    def unlink_agent(self, id, agent_id) -> None:
        self._call("DELETE", f"{self.path}/{_id(id)}/agents/{_id(agent_id)}")

    def copy(self, id, **fields) -> "PricingPlan":
        """Copy with its strategies and agent links; optional `newName`, `discount` (percent off every rate)."""
        return self._call("POST", f"{self.path}/{_id(id)}/copy", body=fields)


class Subscriptions(_Crud):
    path = "/v1/subscriptions"

    def create(self, *, name: str, planId, agentId, customerId, startDate, **fields) -> "Subscription":
        return self._call("POST", self.path, body={
            "name": name, "planId": str(planId), "agentId": str(agentId), "customerId": str(customerId),
            "startDate": startDate, **fields})

    def update_invoice_dates(self, id, **fields) -> "Subscription":
        return self._call("PATCH", f"{self.path}/{_id(id)}/invoice-dates", body=fields)

    def change_plan(self, id, *, planId, **fields) -> "Subscription":
        """End the subscription at `effectiveAt` (default now) and start one on `planId` there; returns the new
        one. Optional `effectiveAt`, `seatsCount`, `name`. Again before it takes effect: replaces the change."""
        return self._call("POST", f"{self.path}/{_id(id)}/change-plan", body={"planId": str(planId), **fields})

    def withdraw_plan_change(self, id) -> "Subscription":
        """Withdraw the subscription's scheduled plan change; returns the subscription, running on as before."""
        return self._call("DELETE", f"{self.path}/{_id(id)}/change-plan")

    def changelog(self, id, **filters) -> Iterator[dict]:
        """Every changelog entry, newest first."""
        return self._iter(ARRAY, f"{self.path}/{_id(id)}/changelog", filters)

    def revenue(self, id, *, startDate=None, endDate=None) -> dict:
        return self._call("GET", f"{self.path}/{_id(id)}/revenue",
                          params={"startDate": startDate, "endDate": endDate})


class Invoices(_Resource):
    path = "/v1/invoices"

    def list(self, *, limit: int | None = None, offset: int | None = None, **filters) -> Page["InvoiceRow"]:
        """`{data, hasMore}`; filters `customerExternalId`, `status`, `startDate`, `endDate`."""
        return self._page(HAS_MORE, self.path, {**filters, "limit": limit, "offset": offset})

    def iter(self, **filters) -> Iterator["InvoiceRow"]:
        return self._iter(HAS_MORE, self.path, filters)

    def get(self, id) -> "Invoice":
        return self._call("GET", f"{self.path}/{_id(id)}")

    def update(self, id, **fields) -> "Invoice":
        return self._call("PATCH", f"{self.path}/{_id(id)}", body=fields)

    def generate(self, *, customerId, subscriptionId, billingPeriodStart=None, billingPeriodEnd=None,
                 **fields) -> "Invoice":
        """The draft of a period (default: the current one); generating again refreshes the draft."""
        body = {"customerId": str(customerId), "subscriptionId": str(subscriptionId), **fields}
        if billingPeriodStart is not None:
            body["billingPeriodStart"] = billingPeriodStart
        if billingPeriodEnd is not None:
            body["billingPeriodEnd"] = billingPeriodEnd
        return self._call("POST", f"{self.path}/generate", body=body)

    def send(self, id, **fields) -> dict:
        """Email it (finalizing a draft); optional `recipientEmail`, `subject`, `message`."""
        return self._call("POST", f"{self.path}/{_id(id)}/send", body=fields)

    def void(self, id, **fields) -> "Invoice":
        return self._call("POST", f"{self.path}/{_id(id)}/void", body=fields)

    def pdf(self, id) -> bytes:
        """The invoice as PDF bytes."""
        response = self._client._transport.request("GET", f"{self.path}/{_id(id)}/pdf")
        return response.content

    def refund(self, id, payment_id, **fields) -> dict:
        """Refund a payment; optional `amount` (default: everything not yet refunded), `reason`."""
        return self._call("POST", f"{self.path}/{_id(id)}/payments/{_id(payment_id)}/refund", body=fields)


class CreditBalances(_Resource):
    def list(self, *, customerId=None, agentId=None, belowPercent=None) -> dict:
        """`{balances: [...], asOf}`, emptiest pool first (answers may be up to 30 s old)."""
        return self._call("GET", "/v1/credit-balances",
                          params={"customerId": customerId, "agentId": agentId, "belowPercent": belowPercent})

    def get(self, subscription_id) -> "CreditBalance":
        return self._call("GET", f"/v1/subscriptions/{_id(subscription_id)}/credit-balance")

    def topup(self, subscription_id, *, units, idempotencyKey: str | None = None, note: str | None = None
              ) -> "CreditTopup":
        """Add units to the pool. Without `idempotencyKey` one is made, so the client's own retries are
        replays; pass your own to make retries across processes safe (`created: false` on a replay)."""
        body = {"units": units, "idempotencyKey": idempotencyKey or new_idempotency_key()}
        if note is not None:
            body["note"] = note
        return self._call("POST", f"/v1/subscriptions/{_id(subscription_id)}/credit-topup", body=body,
                          replay_safe=True)

    def pause_alerts(self, subscription_id, *, paused: bool) -> dict:
        return self._call("POST", f"/v1/subscriptions/{_id(subscription_id)}/credit-alerts-pause",
                          body={"paused": paused}, replay_safe=True)


class Analytics(_Resource):
    def usage(self, **query) -> dict:
        """`startDate`, `endDate`, `customerId`, `agentId`, `signalId`, `groupBy`, `breakdownBy`."""
        return self._call("GET", "/v1/analytics/usage", params=query)

    def cost(self, *, startDate, endDate, **query) -> dict:
        return self._call("GET", "/v1/analytics/cost", params={"startDate": startDate, "endDate": endDate, **query})

    def mrr(self, **query) -> dict:
        """`variant` (`canonical`, `runRate`, `committed`, `all`), `customerId`, `subscriptionId`."""
        return self._call("GET", "/v1/analytics/mrr", params=query)

    def revenue(self, **query) -> dict:
        return self._call("GET", "/v1/analytics/revenue", params=query)


class PortalSessions(_Resource):
    path = "/v1/portal-sessions"

    def create(self, *, customerExternalId: str | None = None, customerId=None, **fields) -> "PortalSession":
        """A one-time link (`url`, `token`: only in this answer), valid for one hour."""
        body = dict(fields)
        if customerExternalId is not None:
            body["customerExternalId"] = customerExternalId
        if customerId is not None:
            body["customerId"] = str(customerId)
        return self._call("POST", self.path, body=body)

    def list(self, *, limit: int | None = None, offset: int | None = None, **filters) -> Page["PortalSession"]:
        """Bare array (default 10 a window); filters `customerId`, `includeExpired`."""
        return self._page(ARRAY, self.path, {**filters, "limit": limit, "offset": offset})

    def iter(self, **filters) -> Iterator["PortalSession"]:
        return self._iter(ARRAY, self.path, filters)

    def get(self, id) -> "PortalSession":
        return self._call("GET", f"{self.path}/{_id(id)}")

    def revoke(self, id) -> None:
        self._call("DELETE", f"{self.path}/{_id(id)}")


class Services(_Resource):
    """The read-only services catalog."""

    def list(self, *, page: int | None = None, limit: int | None = None, **filters) -> Page["CatalogService"]:
        """`{data, pagination}`; filters `provider`, `serviceType`, `isApi`, `search`."""
        return self._page(DATA_PAGINATION, "/v1/services", {**filters, "page": page, "limit": limit})

    def iter(self, **filters) -> Iterator["CatalogService"]:
        return self._iter(DATA_PAGINATION, "/v1/services", filters)

    def get(self, id) -> "CatalogService":
        return self._call("GET", f"/v1/services/{_id(id)}")


class Matters(_Resource):
    path = "/v1/matters"

    def create(self, *, matterNumber: str, name: str, clientName: str, **fields) -> dict:
        return self._call("POST", self.path, body={"matterNumber": matterNumber, "name": name,
                                                   "clientName": clientName, **fields})

    def get(self, id) -> dict:
        return self._call("GET", f"{self.path}/{_id(id)}")

    def update(self, id, **fields) -> dict:
        return self._call("PATCH", f"{self.path}/{_id(id)}", body=fields)

    def delete(self, id) -> dict:
        return self._call("DELETE", f"{self.path}/{_id(id)}")

    def list(self, *, page: int | None = None, limit: int | None = None) -> Page:
        return self._page(RESULTS, self.path, {"page": page, "limit": limit})

    def iter(self) -> Iterator[dict]:
        return self._iter(RESULTS, self.path, {})

    def unassigned(self, *, page: int | None = None, limit: int | None = None) -> Page:
        """Unassigned event rows; `page.raw` also has `totalCost` and `eventsMissingCost`."""
        return self._page(RESULTS, f"{self.path}/unassigned", {"page": page, "limit": limit})

    def assign(self, *, eventId, matterId) -> dict:
        return self._call("POST", f"{self.path}/assign",
                          body={"eventId": str(eventId), "matterId": None if matterId is None else str(matterId)})


class MatterRules(_Resource):
    path = "/v1/matter-rules"

    def create(self, *, matterId, **fields) -> dict:
        return self._call("POST", self.path, body={"matterId": str(matterId), **fields})

    def update(self, id, **fields) -> dict:
        return self._call("PATCH", f"{self.path}/{_id(id)}", body=fields)

    def delete(self, id) -> dict:
        return self._call("DELETE", f"{self.path}/{_id(id)}")

    def list(self, *, page: int | None = None, limit: int | None = None) -> Page:
        return self._page(RESULTS, self.path, {"page": page, "limit": limit})

    def iter(self) -> Iterator[dict]:
        return self._iter(RESULTS, self.path, {})

    def apply(self) -> dict:
        return self._call("POST", f"{self.path}/apply", body={})


class Jobs(_Resource):
    """Work the service goes on with after answering (the cost backfill of `events.map_model`, the rest of a
    `matter_rules.apply` sweep): those answers carry a `jobId`."""
    path = "/v1/jobs"
    FINISHED = ("succeeded", "failed")

    def get(self, id) -> dict:
        return self._call("GET", f"{self.path}/{_id(id)}")

    def wait(self, id, *, timeout: float = 300.0, interval: float = 1.0) -> dict:
        """The job once it has finished (`status` succeeded or failed: check it); `TimeoutError` when it is still
        queued or running after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            job = self.get(id)
            if job["status"] in self.FINISHED:
                return job
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"job {id} is still {job['status']} ({job.get('percent')}%) after {timeout} s")
            time.sleep(min(interval, left))


class SpendControls(_Resource):
    def caps(self) -> list[dict]:
        return self._call("GET", "/v1/control/caps")

    def create_cap(self, **fields) -> dict:
        return self._call("POST", "/v1/control/caps", body=fields)

    def update_cap(self, id, **fields) -> dict:
        return self._call("PATCH", f"/v1/control/caps/{_id(id)}", body=fields)

    def delete_cap(self, id) -> dict:
        return self._call("DELETE", f"/v1/control/caps/{_id(id)}")

    def spend(self, *, period: str, customerExternalId: str | None = None) -> dict:
        return self._call("GET", "/v1/control/spend", params={"period": period,
                                                              "customerExternalId": customerExternalId})

    def coverage(self) -> dict:
        return self._call("GET", "/v1/control/coverage")

    def heartbeat(self, *, customerExternalId: str, deviceId: str, armed: bool) -> dict:
        return self._call("POST", "/v1/control/devices/heartbeat", replay_safe=True, body={
            "customerExternalId": customerExternalId, "deviceId": deviceId, "armed": armed})

    def check(self, *, customerExternalId: str) -> dict:
        return self._call("GET", "/v1/control/check", params={"customerExternalId": customerExternalId})


class CustomerAlerts(_Resource):
    path = "/v1/customer-alerts"

    def list(self) -> list[dict]:
        return self._call("GET", self.path)

    def create(self, **fields) -> dict:
        return self._call("POST", self.path, body=fields)

    def update(self, id, **fields) -> dict:
        return self._call("PATCH", f"{self.path}/{_id(id)}", body=fields)

    def delete(self, id) -> dict:
        return self._call("DELETE", f"{self.path}/{_id(id)}")


class WebhookEndpoints(_Resource):
    """`/v1/webhook-endpoints`: create answers the `secret` once; verify deliveries with
    `agentbilling.webhooks.verify`."""

    path = "/v1/webhook-endpoints"

    def list(self) -> list[dict]:
        return self._call("GET", self.path)

    def create(self, **fields) -> dict:
        return self._call("POST", self.path, body=fields)

    def get(self, id) -> dict:
        return self._call("GET", f"{self.path}/{_id(id)}")

    def update(self, id, **fields) -> dict:
        return self._call("PATCH", f"{self.path}/{_id(id)}", body=fields)

    def delete(self, id) -> dict:
        return self._call("DELETE", f"{self.path}/{_id(id)}")

    def rotate_secret(self, id) -> dict:
        return self._call("POST", f"{self.path}/{_id(id)}/rotate-secret")

    def test(self, id) -> dict:
        return self._call("POST", f"{self.path}/{_id(id)}/test")

    def deliveries(self, id, **params) -> dict:
        return self._call("GET", f"{self.path}/{_id(id)}/deliveries", params=params)

    def resend(self, id, delivery_id) -> dict:
        return self._call("POST", f"{self.path}/{_id(id)}/deliveries/{_id(delivery_id)}/resend")

    def replay(self, id, since) -> dict:
        return self._call("POST", f"{self.path}/{_id(id)}/replay", body={"since": since})


class Client:
    """A synchronous client for one key. `api_key` defaults to `$AGENTBILLING_API_KEY`, `base_url` to
    `$AGENTBILLING_BASE_URL` or http://127.0.0.1:8000. Use as a context manager or call `close()`."""

    def __init__(self, api_key: str | None = None, *, base_url: str | None = None, timeout: float = 30.0,
                 max_retries: int = 2, retry_policy: RetryPolicy | None = None,
                 http_client: httpx.Client | None = None):
        policy = retry_policy or RetryPolicy(max_retries=max_retries)
        self._transport = SyncTransport(api_key, base_url, timeout=timeout, policy=policy, http_client=http_client)
        self.usage = Usage(self)
        self.events = Events(self)
        self.customers = Customers(self)
        self.agents = Agents(self)
        self.signals = Signals(self)
        self.plans = Plans(self)
        self.subscriptions = Subscriptions(self)
        self.invoices = Invoices(self)
        self.credit_balances = CreditBalances(self)
        self.analytics = Analytics(self)
        self.portal_sessions = PortalSessions(self)
        self.services = Services(self)
        self.matters = Matters(self)
        self.matter_rules = MatterRules(self)
        self.jobs = Jobs(self)
        self.spend_controls = SpendControls(self)
        self.customer_alerts = CustomerAlerts(self)
        self.webhook_endpoints = WebhookEndpoints(self)

    @property
    def api_key(self) -> str:
        return self._transport.api_key

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def verify(self) -> dict:
        """`GET /v1/verify`: the key's organization (works with either key type)."""
        return _Resource(self)._call("GET", "/v1/verify")

    def me_key(self) -> dict:
        return _Resource(self)._call("GET", "/v1/me/key")

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
