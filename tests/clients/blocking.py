"""Drives an `AsyncClient` from the synchronous scenario tests, so that each scenario runs on both clients: every
coroutine the async client returns is run to completion on one event loop of the adapter's own, and every
async iterator becomes a plain iterator. What runs is the async client's own path (its transport, httpx's
AsyncClient); only the waiting is done here."""
import asyncio
import inspect
from contextlib import contextmanager

from agentbilling import AsyncClient, Client, Page
from agentbilling.resources._base import Resource


class Blocking:
    def __init__(self, target, loop: asyncio.AbstractEventLoop):
        self._target, self._loop = target, loop

    def __getattr__(self, name):
        return self._settle(getattr(self._target, name))

    def _settle(self, value):
        if inspect.iscoroutine(value):
            return self._settle(self._loop.run_until_complete(value))
        if hasattr(value, "__anext__"):
            return self._drain(value)
        if isinstance(value, Resource):
            return Blocking(value, self._loop)
        if isinstance(value, Page):
            return BlockingPage(value, self._loop)
        if callable(value) and not isinstance(value, type):
            return lambda *args, **kwargs: self._settle(value(*args, **kwargs))
        return value

    def _drain(self, iterator):
        while True:
            try:
                yield self._loop.run_until_complete(iterator.__anext__())
            except StopAsyncIteration:
                return


class BlockingPage(Blocking):
    def __iter__(self):
        return iter(self._target.items)

    def __len__(self):
        return len(self._target)

    def __getitem__(self, index):
        return self._target[index]


@contextmanager
def open_client(kind: str, api_key: str, **options):
    """A `Client` (kind "sync") or an `AsyncClient` behind `Blocking` (kind "async"), closed on exit."""
    if kind == "sync":
        with Client(api_key, **options) as client:
            yield client
        return
    loop = asyncio.new_event_loop()
    client = AsyncClient(api_key, **options)
    try:
        yield Blocking(client, loop)
    finally:
        loop.run_until_complete(client.aclose())
        loop.close()
