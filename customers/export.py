"""Usage export: every event a book's filters match, streamed as CSV or JSON Lines (`GET /v1/events/export`, the
console's "Export usage" action).

Memory stays flat whatever the ledger holds: events are read in pages of `EXPORT_PAGE` by keyset over
(usage_date, id), oldest first, each page one ordinary statement (no server-side cursor, so the export works
behind a transaction pooler where a cursor would not outlive its statement), and each page is written out
before the next is read. PostgreSQL renders every value as text (`::text`), so a row reaches Python as strings
and is written without building a model, a UUID, a Decimal or a datetime: the export runs at the speed of
the network, not of object construction. Values are the event listing's (`GET /v1/events`): quantity and cost
exact decimal strings without trailing zeros, instants in UTC with a `Z`, `metadata` and `services` as the JSON
stored (numbers with their digits)."""
import csv
import io
import zlib
from collections.abc import Iterator

import orjson
from django.db.models import Case, F, Func, Q, QuerySet, TextField, Value, When
from django.db.models.functions import Cast, Coalesce

from core.spreadsheet import spreadsheet_safe
from customers.selectors import usage_event_list

EXPORT_PAGE = 5000  # events per statement: large enough that a million take 200 round trips
EXPORT_TYPES = {"csv": "text/csv; charset=utf-8", "jsonl": "application/x-ndjson"}
GZIP_LEVEL = 6

_INSTANT = "YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\""


def _text(field: str):
    return Cast(F(field), output_field=TextField())


def _instant(field: str):
    """An instant as `2025-03-01T10:00:00.250000Z` (UTC, microseconds always written: the text sorts as time)."""
    return Func(F(field), template=f"to_char(%(expressions)s AT TIME ZONE 'UTC', '{_INSTANT}')",
                output_field=TextField())


def _exact(field: str):
    """A numeric as its exact decimal text without trailing zeros (`2.500000000000` -> `2.5`)."""
    return Cast(Func(F(field), function="trim_scale"), output_field=TextField())


# Kind of each column: how a JSON line writes it (str: a string; num: a JSON number; json: the stored JSON).
COLUMNS = (
    ("id", _text("id"), "str"),
    ("rawEventId", _text("raw_event_id"), "str"),
    ("usageDate", _instant("usage_date"), "str"),
    ("customerId", _text("customer_id"), "str"),
    ("customerExternalId", F("customer_external_id"), "str"),
    ("agentId", _text("agent_id"), "str"),
    ("agentCode", F("agent_code"), "str"),
    ("signalId", _text("signal_id"), "str"),
    ("signalName", F("signal_name"), "str"),
    ("model", F("model"), "str"),
    ("modelProvider", F("model_provider"), "str"),
    ("serviceId", _text("service_id"), "str"),
    ("inputTokens", _text("input_tokens"), "num"),
    ("outputTokens", _text("output_tokens"), "num"),
    ("cacheReadTokens", _text("cache_read_tokens"), "num"),
    ("cacheWriteTokens", _text("cache_write_tokens"), "num"),
    ("cacheWrite1hTokens", _text("cache_write_1h_tokens"), "num"),
    # As the listing says it: a single-service event's tier, standard when it names none; null for a multi-service
    # event, whose parts each say their own in `services`.
    ("serviceTier", Case(When(services__isnull=True, then=Coalesce(F("service_tier"), Value("standard")))), "str"),
    ("pricedAtStandardTier", _text("priced_at_standard_tier"), "json"),
    ("quantity", _exact("quantity"), "str"),
    ("usageCost", _exact("usage_cost"), "str"),
    ("eventStatus", F("event_status"), "str"),
    ("environment", F("environment"), "str"),
    ("idempotencyKey", F("idempotency_key"), "str"),
    ("services", _text("services"), "json"),
    ("metadata", _text("metadata"), "json"),
    ("createdAt", _instant("created_at"), "str"),
)
COLUMN_NAMES = tuple(name for name, _, _ in COLUMNS)
# The columns whose text a client chose (names, keys): in a file for a spreadsheet (the console's), one starting like
# a formula is quoted (core/spreadsheet.py). Ids, instants, numbers and JSON never start so.
_CLIENT_TEXT = [COLUMN_NAMES.index(name) for name in ("rawEventId", "customerExternalId", "agentCode", "signalName",
                                                      "model", "modelProvider", "idempotencyKey")]
_KEYSET = ("x_usage_date", "x_id")  # the page's last (usage_date, id), as text, for the next page


def usage_event_export_pages(*, book, params, page_size: int | None = None) -> Iterator[list[tuple]]:
    """The matching events as rows of text (None for SQL NULL) in `COLUMNS` order, oldest first, a page at a
    time. The filters are those of `GET /v1/events` (a bad value is a 400, raised on this call, before the first
    page); `limit` and `offset` are not filters and play no part."""
    return events_pages(usage_event_list(book=book, params=params), page_size=page_size)


def events_pages(events: QuerySet, *, page_size: int | None = None) -> Iterator[list[tuple]]:
    """The events of `events` (a scoped ledger queryset: the API's filters, or the console's selection) as rows of
    text, oldest first, page by page over (usage_date, id)."""
    page_size = page_size or EXPORT_PAGE
    names = [f"x_{index}" for index in range(len(COLUMNS))]
    annotated = events.order_by().annotate(
        **{name: expression for name, (_, expression, _) in zip(names, COLUMNS)},
        x_usage_date=Cast(F("usage_date"), output_field=TextField()), x_id=Cast(F("id"), output_field=TextField()))

    def pages():
        after = None
        while True:
            page = annotated
            if after is not None:
                day, event_id = after
                # `usage_date >= day` alone is what the (book, usage_date) index and partition pruning use
                page = page.filter(usage_date__gte=day).filter(Q(usage_date__gt=day)
                                                               | Q(usage_date=day, id__gt=event_id))
            rows = list(page.order_by("usage_date", "id").values_list(*names, *_KEYSET)[:page_size])
            if not rows:
                return
            yield [row[:-2] for row in rows]
            if len(rows) < page_size:
                return
            after = rows[-1][-2:]
    return pages()


def _spreadsheet_rows(rows: list[tuple]) -> list[list]:
    rows = [list(row) for row in rows]
    for row in rows:
        for position in _CLIENT_TEXT:
            if row[position] is not None:
                row[position] = spreadsheet_safe(row[position])
    return rows


def _csv_chunks(pages, *, spreadsheet: bool = False) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMN_NAMES)
    for rows in pages:
        writer.writerows(_spreadsheet_rows(rows) if spreadsheet else rows)  # None is written as an empty cell
        yield buffer.getvalue().encode()
        buffer.seek(0)
        buffer.truncate()
    if buffer.tell():
        yield buffer.getvalue().encode()


def _jsonl_value(kind: str, text: str | None):
    if text is None:
        return None
    if kind == "str":
        return text
    return orjson.Fragment(text.encode())  # a number's or a JSON document's text, exactly as stored


def _jsonl_chunks(pages) -> Iterator[bytes]:
    kinds = [kind for _, _, kind in COLUMNS]
    for rows in pages:
        yield b"".join(orjson.dumps({name: _jsonl_value(kind, value)
                                     for name, kind, value in zip(COLUMN_NAMES, kinds, row)}) + b"\n"
                       for row in rows)


def _gzipped(chunks: Iterator[bytes]) -> Iterator[bytes]:
    compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, 16 + zlib.MAX_WBITS)  # 16+: a gzip member
    for chunk in chunks:
        compressed = compressor.compress(chunk)
        if compressed:
            yield compressed
    yield compressor.flush()


def export_bytes(pages: Iterator[list[tuple]], *, export_format: str, gzip: bool,
                 spreadsheet: bool = False) -> Iterator[bytes]:
    """The export's bytes, chunk by chunk (one per page of events). `spreadsheet`: a CSV for people to open (the
    console's), its client-chosen text quoted where a spreadsheet would run it; the API's file is data, as stored."""
    chunks = _csv_chunks(pages, spreadsheet=spreadsheet) if export_format == "csv" else _jsonl_chunks(pages)
    return _gzipped(chunks) if gzip else chunks


def usage_event_export(*, book, params, export_format: str, gzip: bool) -> Iterator[bytes]:
    """`GET /v1/events/export`: the bytes of the book's events the filters match. Filters are checked on this
    call, before the response starts."""
    return export_bytes(usage_event_export_pages(book=book, params=params), export_format=export_format, gzip=gzip)
