"""What every resource is made of. A resource method is written once, as the request it makes (method, path,
query, body, the model its answer is parsed into, the list shape it pages through) or, when it takes several
requests, as a plan (`agentbilling._http.Plan`) of them; the transport it was given carries it out. The same
class therefore serves `Client` (a `SyncTransport`: methods return the answer) and `AsyncClient` (an
`AsyncTransport`: methods return a coroutine, `iter(...)` an async iterator).
"""
from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from agentbilling import _json
from agentbilling._http import Plan, Transport
from agentbilling._models import Model, parse
from agentbilling.pagination import ARRAY, MAX_PAGE_SIZE, fetch_page, window_params

MAX_RECORDS_PER_REQUEST = 100  # spec §8


def new_idempotency_key() -> str:
    """A fresh idempotency key: 128 random bits (the service takes up to 255 characters)."""
    return "ab-" + os.urandom(16).hex()


def path_id(value) -> str:
    """An id as one path segment."""
    return quote(str(value), safe="")


class Resource:
    def __init__(self, transport: Transport):
        self._transport = transport

    def _run(self, plan: Plan):
        return self._transport.run(plan)

    def _content(self, method: str, path: str, *, params=None, body: Any = None,
                 replay_safe: bool | None = None) -> Plan[bytes]:
        response = yield from self._transport.retried(method, path, params=params, body=body,
                                                      replay_safe=replay_safe)
        return response.content

    def _answer(self, method: str, path: str, *, params=None, body: Any = None, replay_safe: bool | None = None,
                model: type[Model] | None = Model) -> Plan[Any]:
        """The plan of one request whose JSON answer is parsed as `model` (None when the answer is empty)."""
        content = yield from self._content(method, path, params=params, body=body, replay_safe=replay_safe)
        return parse(model, _json.loads(content)) if content else None

    def _call(self, method: str, path: str, *, params=None, body: Any = None, replay_safe: bool | None = None,
              model: type[Model] | None = Model):
        return self._run(self._answer(method, path, params=params, body=body, replay_safe=replay_safe,
                                      model=model))

    def _page(self, shape: str, path: str, params: dict, *, model: type[Model] = Model):
        params = window_params(shape, {k: v for k, v in params.items() if v is not None}, page_size=None)
        return self._run(fetch_page(self._transport, shape, path, params, model))

    def _iter(self, shape: str, path: str, params: dict, *, model: type[Model] = Model):
        params = {k: v for k, v in params.items() if v is not None}
        params = window_params(shape, {**params, "limit": params.get("limit") or MAX_PAGE_SIZE}, page_size=None)
        return self._transport.walk(fetch_page(self._transport, shape, path, params, model))


class Crud(Resource):
    """create / get / update / list / iter on `/v1/<name>` with a bare-array list, answers parsed as `model`."""

    path = ""
    model: type[Model] = Model

    def create(self, **fields):
        return self._call("POST", self.path, body=fields, model=self.model)

    def get(self, id):
        return self._call("GET", f"{self.path}/{path_id(id)}", model=self.model)

    def update(self, id, **fields):
        return self._call("PATCH", f"{self.path}/{path_id(id)}", body=fields, model=self.model)

    def list(self, *, limit: int | None = None, offset: int | None = None, **filters):
        """One window (`limit` 1-100, default 100): `page.items`, `page.total` (X-Total-Count)."""
        return self._page(ARRAY, self.path, {**filters, "limit": limit, "offset": offset}, model=self.model)

    def iter(self, **filters):
        """Every row matching the filters, fetched 100 at a time."""
        return self._iter(ARRAY, self.path, filters, model=self.model)


class DeletableCrud(Crud):
    def delete(self, id) -> None:
        return self._call("DELETE", f"{self.path}/{path_id(id)}")
