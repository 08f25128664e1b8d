"""`Client` and `AsyncClient`: the same resources on a blocking or an asyncio transport.

    from agentbilling import AsyncClient, Client

    with Client(api_key="svc_sk_test_...", base_url="http://127.0.0.1:8000") as client:
        customer = client.customers.create(name="Acme", externalId="cust-42")
        for event in client.events.iter(customerExternalId="cust-42"):
            ...

    async with AsyncClient(api_key="svc_sk_test_...") as client:
        customer = await client.customers.create(name="Acme", externalId="cust-42")
        async for event in client.events.iter(customerExternalId="cust-42"):
            ...

Request fields are passed as keyword arguments named as the API names them (camelCase, spec §2) and sent as
they are; answers are typed models (`agentbilling.models`): the API's JSON object itself, a dict, with typed
snake_case attributes, money and quantities `Decimal`. Errors raise `agentbilling.errors.APIError` subclasses
carrying `status`, `message` and `code`. Reads are retried on 429, 5xx and connection errors (500 once);
writes only where nothing ran (429, `503 auth_unavailable`); usage records always, since each carries an
idempotency key.

For the hot path use `agentbilling.Recorder` (buffered, batched, retried in the background), not
`client.usage.record` in a loop.
"""
from __future__ import annotations

import httpx

from agentbilling._http import AsyncTransport, RetryPolicy, SyncTransport, Transport
from agentbilling.models import KeyInfo, Verification
from agentbilling.resources import (RESOURCES, Agents, Analytics, CreditBalances, CustomerAlerts, Customers, Events,
                                    Invoices, Jobs, Keys, MatterRules, Matters, Plans, PortalSessions, Services,
                                    Signals, SpendControls, Subscriptions, Usage, WebhookEndpoints)


class _Resources:
    """What both clients are: the resources, each on the client's transport (`_transport_class`)."""

    _transport_class: type[Transport]
    usage: Usage
    events: Events
    customers: Customers
    agents: Agents
    signals: Signals
    plans: Plans
    subscriptions: Subscriptions
    invoices: Invoices
    credit_balances: CreditBalances
    analytics: Analytics
    portal_sessions: PortalSessions
    services: Services
    matters: Matters
    matter_rules: MatterRules
    jobs: Jobs
    spend_controls: SpendControls
    customer_alerts: CustomerAlerts
    webhook_endpoints: WebhookEndpoints

    def __init__(self, api_key: str | None = None, *, base_url: str | None = None, timeout: float = 30.0,
                 max_retries: int = 2, retry_policy: RetryPolicy | None = None,
                 http_client: httpx.Client | httpx.AsyncClient | None = None):
        self._transport = self._transport_class(api_key, base_url, timeout=timeout,
                                                policy=retry_policy or RetryPolicy(max_retries=max_retries),
                                                http_client=http_client)
        self._keys = Keys(self._transport)
        for name, resource in RESOURCES.items():
            setattr(self, name, resource(self._transport))

    @property
    def api_key(self) -> str:
        return self._transport.api_key

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    def verify(self) -> Verification:
        """`GET /v1/verify`: the key's organization (works with either key type)."""
        return self._keys.verify()

    def me_key(self) -> KeyInfo:
        return self._keys.me()


class Client(_Resources):
    """A synchronous client for one key. `api_key` defaults to `$AGENTBILLING_API_KEY`, `base_url` to
    `$AGENTBILLING_BASE_URL` or http://127.0.0.1:8000; `http_client` an `httpx.Client` of your own. Use as a
    context manager or call `close()`."""

    _transport_class = SyncTransport

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class AsyncClient(_Resources):
    """The asyncio client: the same resources and arguments as `Client` (`http_client` an `httpx.AsyncClient`);
    every call is a coroutine, `iter(...)` and `page.auto_paging_iter()` async iterators. Use as an async
    context manager or `await aclose()`."""

    _transport_class = AsyncTransport

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()
