"""agentbilling: the Python client of the usage-billing service.

- `Client` / `AsyncClient`: the typed /v1 client, blocking or asyncio, one module per resource
  (`agentbilling.resources`: customers, agents, signals, plans and strategies, subscriptions, invoices, credit
  balances, analytics, portal sessions, the catalog, matters, spend controls ...), answers as typed models
  (`agentbilling.models`).
- `Recorder` / `AsyncRecorder`: buffered, batched, retried usage recording for the hot path.
- `billing_context` / `billing_outcome`: who the instrumented model calls are for.
- `agentbilling.integrations.openai.instrument_openai`, `.anthropic.instrument_anthropic`,
  `.litellm.BillingCallback`: one event per model call, priced by the service's catalog.
- `agentbilling.webhooks.verify(body, headers, secret)`: a webhook delivery checked and parsed into a typed event.
"""
from agentbilling._http import RetryPolicy
from agentbilling._client import AsyncClient, Client
from agentbilling.context import (BillingContext, ModelCall, billing_context, billing_outcome,
                                  current_billing_context, reset_billing_context, set_billing_context)
from agentbilling.errors import (AgentBillingError, APIConnectionError, APIError, AuthenticationError,
                                 BadRequestError, ConflictError, KeyRevokedError, MissingAPIKeyError, NotFoundError,
                                 PermissionDeniedError, RateLimitError, ServerError, ServiceUnavailableError,
                                 UnprocessableEntityError)
from agentbilling.instrumentation import default_recorder, init, set_default_recorder
from agentbilling.models import Model
from agentbilling.pagination import Page
from agentbilling.resources._base import new_idempotency_key
from agentbilling.recorder import AsyncRecorder, RecordFailure, Recorder, RecorderStats, build_record
from agentbilling import webhooks  # noqa: E402 - agentbilling.webhooks.verify

__version__ = "0.1.0"

__all__ = [
    "AgentBillingError", "APIConnectionError", "APIError", "AsyncClient", "AsyncRecorder", "AuthenticationError",
    "BadRequestError", "BillingContext", "Client", "ConflictError", "KeyRevokedError", "MissingAPIKeyError",
    "Model", "ModelCall",
    "NotFoundError", "Page", "PermissionDeniedError", "RateLimitError", "RecordFailure", "Recorder",
    "RecorderStats", "RetryPolicy", "ServerError", "ServiceUnavailableError", "UnprocessableEntityError",
    "billing_context", "billing_outcome", "build_record", "current_billing_context", "default_recorder", "init",
    "new_idempotency_key", "reset_billing_context", "set_billing_context", "set_default_recorder",
]
