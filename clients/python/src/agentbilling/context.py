"""Who a model call is for, set once around the work instead of passed to every call.

    with billing_context(customerExternalId="cust-42", agentCode="support-bot", signalName="llm_calls"):
        ...  # every instrumented model call in here is recorded for cust-42 / support-bot / llm_calls

The context lives in a `contextvars.ContextVar`: it follows the code into `await`s and into asyncio tasks
created inside the block, and stays out of other threads and requests (a thread pool needs
`contextvars.copy_context().run`, as `asyncio.to_thread` does). Nested blocks override the names they give
and merge `metadata`.

Spec §1, signal naming: fire ONE event per business outcome. Two ways to follow it:
- `billing_context(...)`: each model call is its own cost event under the signal you name there (for
  example `llm_calls`, a signal no pricing strategy bills: its events carry cost and margin, not revenue);
  you record the outcome yourself with `Recorder.record(signalName="tickets_resolved", ...)`.
- `billing_outcome("tickets_resolved")`: the model calls made inside the block are folded into ONE event of
  that signal, each call an entry of `services[]`, recorded when the block ends (quantity 1 by default, or
  `quantity_on_error` when the block raises: the cost is kept, nothing is billed).
"""
from __future__ import annotations

import logging
import threading
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, Iterator, Mapping

logger = logging.getLogger("agentbilling")


@dataclass(frozen=True)
class ModelCall:
    """The usage of one model call, as the service prices it (`inputTokens` excludes cache reads)."""

    model: str
    modelProvider: str
    inputTokens: int = 0
    outputTokens: int = 0
    cacheReadTokens: int = 0
    cacheWriteTokens: int = 0  # 5-minute cache writes
    cacheWrite1hTokens: int = 0  # 1-hour cache writes (Anthropic bills them at 2x the input rate)
    serviceTier: str = "standard"  # standard, batch, flex or priority: the tier the provider says it served

    def as_service(self) -> dict:
        service = {"model": self.model, "modelProvider": self.modelProvider, "inputTokens": self.inputTokens,
                   "outputTokens": self.outputTokens, "cacheReadTokens": self.cacheReadTokens,
                   "cacheWriteTokens": self.cacheWriteTokens}
        if self.cacheWrite1hTokens:
            service["cacheWrite1hTokens"] = self.cacheWrite1hTokens
        if self.serviceTier != "standard":
            service["serviceTier"] = self.serviceTier
        return service


class Outcome:
    """An open business outcome collecting the model calls that produce it (see `billing_outcome`)."""

    def __init__(self, signalName: str, quantity):
        self.signalName = signalName
        self.quantity = quantity  # may be changed inside the block (e.g. the number of pages produced)
        self.calls: list[ModelCall] = []
        self.skipped = False
        self.recorder = None  # the recorder the first instrumented call would have used
        self._lock = threading.Lock()

    def add(self, call: ModelCall, recorder=None) -> None:
        with self._lock:
            self.calls.append(call)
            if self.recorder is None:
                self.recorder = recorder

    def skip(self) -> None:
        """Record nothing for this outcome (its calls' cost is lost: prefer quantity 0)."""
        self.skipped = True


@dataclass(frozen=True)
class BillingContext:
    customerExternalId: str | None = None
    agentCode: str | None = None
    signalName: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    environment: str | None = None
    recorder: Any = None  # the recorder for calls in this context (default: the package's default recorder)
    outcome: Outcome | None = None


_current: ContextVar[BillingContext | None] = ContextVar("agentbilling_context", default=None)


def current_billing_context() -> BillingContext | None:
    return _current.get()


def _merged(customerExternalId=None, agentCode=None, signalName=None, metadata=None, environment=None,
            recorder=None, outcome: Outcome | None = None) -> BillingContext:
    outer = _current.get() or BillingContext()
    changes: dict[str, Any] = {name: value for name, value in (
        ("customerExternalId", customerExternalId), ("agentCode", agentCode), ("signalName", signalName),
        ("environment", environment), ("recorder", recorder), ("outcome", outcome)) if value is not None}
    if metadata:
        changes["metadata"] = {**outer.metadata, **metadata}
    return replace(outer, **changes)


def set_billing_context(*, customerExternalId: str | None = None, agentCode: str | None = None,
                        signalName: str | None = None, metadata: Mapping[str, Any] | None = None,
                        environment: str | None = None, recorder: Any = None) -> Token:
    """Set the context for the rest of the current task or thread (for frameworks where a `with` block does
    not fit, e.g. a request middleware); undo with `reset_billing_context(token)`."""
    return _current.set(_merged(customerExternalId, agentCode, signalName, metadata, environment, recorder))


def reset_billing_context(token: Token) -> None:
    _current.reset(token)


@contextmanager
def billing_context(*, customerExternalId: str | None = None, agentCode: str | None = None,
                    signalName: str | None = None, metadata: Mapping[str, Any] | None = None,
                    environment: str | None = None, recorder: Any = None) -> Iterator[BillingContext]:
    """Model calls inside the block are recorded for this customer, agent and signal (one event each)."""
    token = set_billing_context(customerExternalId=customerExternalId, agentCode=agentCode, signalName=signalName,
                                metadata=metadata, environment=environment, recorder=recorder)
    try:
        yield _current.get()
    finally:
        _current.reset(token)


@contextmanager
def billing_outcome(signalName: str, *, quantity: int | Decimal = 1, quantity_on_error: int | Decimal | None = 0,
                    customerExternalId: str | None = None, agentCode: str | None = None,
                    metadata: Mapping[str, Any] | None = None, environment: str | None = None,
                    recorder: Any = None) -> Iterator[Outcome]:
    """One business outcome: the instrumented model calls inside the block become the `services[]` of ONE
    event of `signalName`, recorded when the block ends with `outcome.quantity` (default 1). When the block
    raises, the event is recorded with `quantity_on_error` (default 0: the cost is kept, nothing billed;
    None: no event). A block without model calls records nothing."""
    outcome = Outcome(signalName, quantity)
    token = _current.set(_merged(customerExternalId, agentCode, None, metadata, environment, recorder, outcome))
    context = _current.get()
    failed = False
    try:
        yield outcome
    except BaseException:
        failed = True
        raise
    finally:
        _current.reset(token)
        if failed:
            if quantity_on_error is None:
                outcome.skipped = True
            else:
                outcome.quantity = quantity_on_error
        _record_outcome(outcome, context)


def _record_outcome(outcome: Outcome, context: BillingContext) -> None:
    from agentbilling.instrumentation import recorder_for

    if outcome.skipped or not outcome.calls:
        return
    if not (context.customerExternalId and context.agentCode):
        logger.warning("agentbilling: outcome %r has no customerExternalId or agentCode in its context; "
                       "not recorded", outcome.signalName)
        return
    try:
        recorder_for(context, outcome.recorder).record(
            customerExternalId=context.customerExternalId, agentCode=context.agentCode,
            signalName=outcome.signalName, quantity=outcome.quantity,
            services=[call.as_service() for call in outcome.calls], metadata=dict(context.metadata) or None,
            environment=context.environment)
    except Exception:
        logger.exception("agentbilling: could not record outcome %r", outcome.signalName)
