"""The list shapes of the API, each defined once.

- bare array + `X-Total-Count` with `limit`/`offset` (customers, agents, signals, subscriptions, events)
- `{results, page, limit, totalPages, totalResults}` (plans, strategies, matters, matter rules)
- `{data, pagination: {page, limit, total, totalPages}}` (services)
- `{data, hasMore}` (invoices)
"""
from dataclasses import dataclass
from math import ceil

from rest_framework.response import Response

from core.errors import BadRequest

# Far beyond any real list, and far below what the database's OFFSET (bigint) holds.
MAX_OFFSET = 1_000_000_000
MAX_PAGE = 10_000_000


def _int_param(params, name: str, default: int, minimum: int, maximum: int | None) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        value = None
    if value is None or value < minimum or (maximum is not None and value > maximum):
        bounds = f"between {minimum} and {maximum}" if maximum is not None else f"at least {minimum}"
        raise BadRequest([f"{name}: Must be a whole number {bounds}."])
    return value


@dataclass(frozen=True)
class OffsetWindow:
    limit: int
    offset: int

    @classmethod
    def from_params(cls, params, *, default_limit: int = 100, max_limit: int = 100) -> "OffsetWindow":
        return cls(_int_param(params, "limit", default_limit, 1, max_limit),
                   _int_param(params, "offset", 0, 0, MAX_OFFSET))


@dataclass(frozen=True)
class PageWindow:
    page: int
    limit: int

    @classmethod
    def from_params(cls, params, *, default_limit: int = 10, max_limit: int = 100) -> "PageWindow":
        return cls(_int_param(params, "page", 1, 1, MAX_PAGE), _int_param(params, "limit", default_limit, 1, max_limit))

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.limit


def array_response(queryset, params, serializer_class, *, context=None, default_limit: int = 100) -> Response:
    """A bare JSON array of one window, the total count in `X-Total-Count`."""
    window = OffsetWindow.from_params(params, default_limit=default_limit)
    total = queryset.count()
    rows = queryset[window.offset:window.offset + window.limit]
    data = serializer_class(rows, many=True, context=context or {}).data
    return Response(data, headers={"X-Total-Count": str(total)})


def page_response(queryset, params, serializer_class, *, default_limit: int = 10, context=None,
                  extra: dict | None = None) -> Response:
    """`{results, page, limit, totalPages, totalResults}` (+ any `extra` totals)."""
    window = PageWindow.from_params(params, default_limit=default_limit)
    total = queryset.count()
    rows = queryset[window.offset:window.offset + window.limit]
    body = {
        "results": serializer_class(rows, many=True, context=context or {}).data,
        "page": window.page,
        "limit": window.limit,
        "totalPages": ceil(total / window.limit) if total else 0,
        "totalResults": total,
    }
    body.update(extra or {})
    return Response(body)


def data_page_response(queryset, params, serializer_class, *, default_limit: int = 50) -> Response:
    """`{data, pagination: {page, limit, total, totalPages}}`."""
    window = PageWindow.from_params(params, default_limit=default_limit)
    total = queryset.count()
    rows = queryset[window.offset:window.offset + window.limit]
    return Response({
        "data": serializer_class(rows, many=True).data,
        "pagination": {"page": window.page, "limit": window.limit, "total": total,
                       "totalPages": ceil(total / window.limit) if total else 0},
    })


def has_more_response(queryset, params, serializer_class, *, default_limit: int = 100) -> Response:
    """`{data, hasMore}`: one extra row is read to know whether another window exists."""
    window = OffsetWindow.from_params(params, default_limit=default_limit)
    rows = list(queryset[window.offset:window.offset + window.limit + 1])
    return Response({"data": serializer_class(rows[:window.limit], many=True).data,
                     "hasMore": len(rows) > window.limit})
