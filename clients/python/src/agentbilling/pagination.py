"""The four list shapes of the API (spec §4, contract "Lists the spec calls arrays"), behind one `Page`.

| shape | endpoints | window | total |
|---|---|---|---|
| bare array | customers, agents, signals, subscriptions, events, portal sessions, changelog | `limit`/`offset` | `X-Total-Count` header |
| `{results, page, limit, totalPages, totalResults}` | plans, strategies, matters, matter rules, unassigned events | `page`/`limit` | `totalResults` |
| `{data, pagination: {page, limit, total, totalPages}}` | services catalog | `page`/`limit` | `pagination.total` |
| `{data, hasMore}` | invoices | `limit`/`offset` | not given |

`Page.auto_paging_iter()` (and the resources' `iter(...)`) walk every page, 100 rows at a time.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Generic, Iterator, TypeVar

from agentbilling import _json
from agentbilling._http import Plan, ready
from agentbilling._models import parse

T = TypeVar("T")

ARRAY, RESULTS, DATA_PAGINATION, HAS_MORE = "array", "results", "data_pagination", "has_more"
MAX_PAGE_SIZE = 100


@dataclass
class Page(Generic[T]):
    """One window of a list: `items`, the `total` count when the shape gives one, whether more rows follow,
    and the whole answer in `raw` (some lists carry more, e.g. `totalCost` of unassigned events).

    The same class serves both clients: from `Client`, `next_page()` returns the next page and
    `auto_paging_iter()` an iterator; from `AsyncClient`, `await page.next_page()` and
    `async for item in page.auto_paging_iter()`."""

    items: list[T]
    total: int | None
    has_more: bool
    raw: Any = None
    _transport: Any = field(default=None, repr=False)
    _fetch_next: Callable[[], Plan["Page[T]"]] | None = field(default=None, repr=False)

    def __iter__(self) -> Iterator[T]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]

    def next_plan(self) -> Plan["Page[T] | None"]:
        return self._fetch_next() if self.has_more and self._fetch_next else ready(None)

    def next_page(self):
        """The following page, or None after the last (a coroutine from `AsyncClient`)."""
        return self._transport.run(self.next_plan())

    def auto_paging_iter(self):
        """Every item from this page on, fetching the following pages as needed (an async iterator from
        `AsyncClient`)."""
        return self._transport.walk(ready(self))


def fetch_page(transport, shape: str, path: str, params: dict, model=None) -> Plan[Page]:
    """The plan that fetches one window and parses its items as `model`s."""
    response = yield from transport.retried("GET", path, params=params)
    body = _json.loads(response.content)
    items, total, has_more, next_params = parse_page(shape, body, response.headers, params)
    fetch_next = partial(fetch_page, transport, shape, path, next_params, model) if next_params else None
    return Page(items=parse(model, items), total=total, has_more=has_more, raw=body, _transport=transport,
                _fetch_next=fetch_next)


def window_params(shape: str, params: dict, *, page_size: int | None) -> dict:
    """The first window's parameters (the caller's `limit`/`offset`/`page` are kept)."""
    params = dict(params)
    if page_size is not None:
        params.setdefault("limit", page_size)
    if shape in (RESULTS, DATA_PAGINATION):
        params.setdefault("page", 1)
    else:
        params.setdefault("offset", 0)
    return params


def parse_page(shape: str, body: Any, headers, params: dict) -> tuple[list, int | None, bool, dict | None]:
    """(items, total, has_more, the next window's params or None)."""
    if shape == ARRAY:
        items = list(body)
        offset = int(params.get("offset") or 0)
        header = headers.get("x-total-count")
        total = int(header) if header is not None else None
        limit = int(params["limit"]) if params.get("limit") else None
        if total is not None:
            has_more = offset + len(items) < total and bool(items)
        else:
            has_more = limit is not None and len(items) == limit
        return items, total, has_more, {**params, "offset": offset + len(items)} if has_more else None
    if shape == HAS_MORE:
        items = list(body["data"])
        offset = int(params.get("offset") or 0)
        has_more = bool(body.get("hasMore")) and bool(items)
        return items, None, has_more, {**params, "offset": offset + len(items)} if has_more else None
    if shape == RESULTS:
        items = list(body["results"])
        page, total_pages = int(body.get("page") or params.get("page") or 1), int(body.get("totalPages") or 0)
        has_more = page < total_pages and bool(items)
        return items, body.get("totalResults"), has_more, {**params, "page": page + 1} if has_more else None
    if shape == DATA_PAGINATION:
        items = list(body["data"])
        meta = body.get("pagination") or {}
        page, total_pages = int(meta.get("page") or params.get("page") or 1), int(meta.get("totalPages") or 0)
        has_more = page < total_pages and bool(items)
        return items, meta.get("total"), has_more, {**params, "page": page + 1} if has_more else None
    raise ValueError(f"unknown list shape {shape!r}")
