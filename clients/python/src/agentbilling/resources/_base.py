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
from agentbilling.pagination import ARRAY, MAX_PAGE_SIZE, RESULTS, Page, fetch_page, window_params

MAX_RECORDS_PER_REQUEST = 100  # spec §8


def new_idempotency_key() -> str:
    """A fresh idempotency key: 128 random bits (the service takes up to 255 characters)."""
    return "ab-" + os.urandom(16).hex()


def path_id(value) -> str:
    """An id as one path segment."""
    return quote(str(value), safe="")


def _present(params: dict) -> dict:
    """The parameters given a value (None leaves one out)."""
    return {name: value for name, value in params.items() if value is not None}


class Resource:
    """One part of the API on one transport; its calls return what `transport.run` returns for their plan."""

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
        params = window_params(shape, _present(params), page_size=None)
        return self._run(fetch_page(self._transport, shape, path, params, model))

    def _iter(self, shape: str, path: str, params: dict, *, model: type[Model] = Model):
        params = _present(params)
        params = window_params(shape, {**params, "limit": params.get("limit") or MAX_PAGE_SIZE}, page_size=None)
        return self._transport.walk(fetch_page(self._transport, shape, path, params, model))


class Collection(Resource):
    """A resource at `path` whose answers are `model`s. The operations most collections share are the mixins
    below, one method each: a resource lists the ones the API gives it and writes only what is its own."""

    path = ""
    model: type[Model] = Model
    row_model: type[Model] | None = None  # the rows of `list` and `iter`, when they are not `model`s

    def _rows(self) -> type[Model]:
        return self.row_model or self.model

    def _member(self, id) -> str:
        return f"{self.path}/{path_id(id)}"


class Create(Collection):
    def create(self, **fields):
        return self._call("POST", self.path, body=fields, model=self.model)


class Get(Collection):
    def get(self, id):
        return self._call("GET", self._member(id), model=self.model)


class Update(Collection):
    def update(self, id, **fields):
        return self._call("PATCH", self._member(id), body=fields, model=self.model)


class Delete(Collection):
    def delete(self, id):
        """The answer of the deletion (None when the service answers 204)."""
        return self._call("DELETE", self._member(id))


class ListAll(Collection):
    def list(self):
        """Every row: this list is not paged."""
        return self._call("GET", self.path, model=self.model)


class Listing(Collection):
    """A paged list at `path` in one of the four shapes (`agentbilling.pagination`); `list` names the window's
    parameters of the shape (`OffsetList`, `PageList`)."""

    shape = ARRAY

    def _window(self, filters: dict, **window) -> Page:
        return self._page(self.shape, self.path, {**filters, **window}, model=self._rows())

    def iter(self, **filters):
        """Every row matching the filters, fetched 100 at a time."""
        return self._iter(self.shape, self.path, filters, model=self._rows())


class OffsetList(Listing):
    """Windows by `limit`/`offset`: a bare array (X-Total-Count) or `{data, hasMore}`."""

    def list(self, *, limit: int | None = None, offset: int | None = None, **filters) -> Page:
        """One window (`limit` 1-100): `page.items`, `page.total` when the list gives one."""
        return self._window(filters, limit=limit, offset=offset)


class PageList(Listing):
    """Windows by `page`/`limit`: `{results, ...totalResults}` or `{data, pagination}`."""

    shape = RESULTS

    def list(self, *, page: int | None = None, limit: int | None = None, **filters) -> Page:
        """One page (`page` from 1, `limit` 1-100): `page.items`, `page.total`."""
        return self._window(filters, page=page, limit=limit)
