"""The one wrapper both SDK integrations put around a client method: sync and async alike, the billing
context read when the call starts, the result handed to the integration's `handle`."""
import functools
import inspect

from agentbilling.context import current_billing_context


def wrap_call(create, handle):
    """`create` wrapped so that `handle(result, context, requested model, streamed)` sees every call."""
    if inspect.iscoroutinefunction(create):
        @functools.wraps(create)
        async def async_wrapper(*args, **kwargs):
            context = current_billing_context()
            result = await create(*args, **kwargs)
            return handle(result, context, kwargs.get("model"), bool(kwargs.get("stream")))
        async_wrapper._agentbilling_original = create
        return async_wrapper

    @functools.wraps(create)
    def wrapper(*args, **kwargs):
        context = current_billing_context()
        result = create(*args, **kwargs)
        if inspect.isawaitable(result):  # an async client's method behind a plain decorator
            async def finish():
                return handle(await result, context, kwargs.get("model"), bool(kwargs.get("stream")))
            return finish()
        return handle(result, context, kwargs.get("model"), bool(kwargs.get("stream")))
    wrapper._agentbilling_original = create
    return wrapper
