"""/v1/customers, /v1/agents and /v1/signals: parse, call one service or selector, render."""
from types import SimpleNamespace

import orjson
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.response import Response
from rest_framework.settings import api_settings

from accounts.api import MONEY_ROLES, OrgApiView
from core import clock
from core.openapi import ErrorOut
from core.pagination import array_response
from core.serialization import parse
from customers import selectors, services
from core.scoping import get_owned
from catalog.models import PriceOverride
from customers.backfill import model_map
from customers.export import EXPORT_TYPES, usage_event_export
from customers.price_overrides import price_override_create, price_override_delete, price_override_list
from customers.serializers import (AgentOut, AgentWriteIn, CustomerOut, CustomerWriteIn, ModelMapIn, ModelMapOut,
                                   PriceOverrideChangeOut, PriceOverrideIn, PriceOverrideOut, SignalBulkCreateIn,
                                   SignalCreateIn, SignalOut, SignalUpdateIn, UsageEventOut, UsageExportQueryIn)


def query(name: str, description: str, type_=OpenApiTypes.STR, enum=None) -> OpenApiParameter:
    return OpenApiParameter(name, type_, OpenApiParameter.QUERY, description=description, enum=enum)


PAGING = [
    query("limit", "Rows per page, 1-100 (default 100).", OpenApiTypes.INT),
    query("offset", "Rows to skip (default 0). The total is in the X-Total-Count header.", OpenApiTypes.INT),
]
CREATED_WINDOW = [
    query("createdAfter", "Created at or after this ISO 8601 instant.", OpenApiTypes.DATETIME),
    query("createdBefore", "Created before this ISO 8601 instant.", OpenApiTypes.DATETIME),
]
# Deleting a record that others still reference is a 409.
NO_CONTENT = {204: OpenApiResponse(description="Deleted."), 409: ErrorOut}


class CustomerListCreateApi(OrgApiView):
    @extend_schema(parameters=[
        query("status", "Only customers with this status.", enum=["active", "inactive", "suspended"]),
        query("externalId", "Only the customer with this externalId."),
        query("email", "Only customers with this email (case-insensitive)."),
        query("search", "Case-insensitive substring of name, externalId or email."),
        *CREATED_WINDOW, *PAGING,
    ], responses=CustomerOut(many=True))
    def get(self, request):
        """List customers.

        Customers of the key's book that are not deleted, newest first, filtered by the query parameters. A bare array
        of one window (`limit`, `offset`); the total is in the `X-Total-Count` header."""
        return array_response(selectors.customer_list(book=self.book, params=request.query_params),
                              request.query_params, CustomerOut)

    @extend_schema(request=CustomerWriteIn, responses={201: CustomerOut, 409: ErrorOut})
    def post(self, request):
        """Create a customer.

        Only `name` is required. `externalId` is your own id for the customer (usage records name customers by it); 409
        when a customer that is not deleted already has it."""
        data = parse(CustomerWriteIn, request.data)
        customer = services.customer_create(book=self.book, data=data)
        return Response(CustomerOut(customer).data, status=201)


class CustomerDetailApi(OrgApiView):
    @extend_schema(responses=CustomerOut)
    def get(self, request, customer_id):
        """Get a customer.

        One customer of the key's book; a deleted customer reads as 404."""
        return Response(CustomerOut(selectors.customer_get(book=self.book, customer_id=customer_id)).data)

    @extend_schema(request=CustomerWriteIn(partial=True), responses={200: CustomerOut, 409: ErrorOut})
    def patch(self, request, customer_id):
        """Update a customer.

        Any field of the create request, all optional; 409 when the new `externalId` belongs to another customer."""
        data = parse(CustomerWriteIn, request.data, partial=True)
        customer = services.customer_update(book=self.book, customer_id=customer_id, data=data)
        return Response(CustomerOut(customer).data)

    @extend_schema(responses=NO_CONTENT)
    def delete(self, request, customer_id):
        """Delete a customer.

        Soft delete: the customer is no longer listed, reads as 404 and frees its `externalId`; its events, invoices and
        history keep pointing at it. 409 while any of its subscriptions is upcoming or active."""
        services.customer_delete(book=self.book, customer_id=customer_id, now=clock.now())
        return Response(status=204)


class AgentListCreateApi(OrgApiView):
    @extend_schema(parameters=[
        query("isActive", "true or false.", OpenApiTypes.BOOL),
        query("agentCode", "Only the agent with this agentCode."),
        query("search", "Case-insensitive substring of name, agentCode or description."),
        *CREATED_WINDOW, *PAGING,
    ], responses=AgentOut(many=True))
    def get(self, request):
        """List agents.

        Agents of the key's book, newest first, filtered by the query parameters. A bare array of one window (`limit`,
        `offset`); the total is in the `X-Total-Count` header."""
        return array_response(selectors.agent_list(book=self.book, params=request.query_params),
                              request.query_params, AgentOut)

    @extend_schema(request=AgentWriteIn, responses={201: AgentOut, 409: ErrorOut})
    def post(self, request):
        """Create an agent.

        `name` and `agentCode` are required; `agentCode` is unique in the book (409) and is how usage records name the
        agent. `context` is stored and returned verbatim."""
        agent = services.agent_create(book=self.book, data=parse(AgentWriteIn, request.data))
        return Response(AgentOut(agent).data, status=201)


class AgentDetailApi(OrgApiView):
    @extend_schema(responses=AgentOut)
    def get(self, request, agent_id):
        """Get an agent.

        One agent of the key's book."""
        return Response(AgentOut(selectors.agent_get(book=self.book, agent_id=agent_id)).data)

    @extend_schema(request=AgentWriteIn(partial=True), responses={200: AgentOut, 409: ErrorOut})
    def patch(self, request, agent_id):
        """Update an agent.

        Any field of the create request, all optional; 409 when the new `agentCode` belongs to another agent."""
        data = parse(AgentWriteIn, request.data, partial=True)
        return Response(AgentOut(services.agent_update(book=self.book, agent_id=agent_id, data=data)).data)

    @extend_schema(responses=NO_CONTENT)
    def delete(self, request, agent_id):
        """Delete an agent.

        Permanent delete. 409 while signals or pricing plans are attached to the agent; its usage events stay, keeping
        the `agentCode` they were recorded with."""
        services.agent_delete(book=self.book, agent_id=agent_id)
        return Response(status=204)


class SignalListCreateApi(OrgApiView):
    @extend_schema(parameters=[
        query("agentId", "Only signals of this agent.", OpenApiTypes.UUID),
        query("type", "Only signals of this type.", enum=["usage", "volume"]),
        query("shortName", "Only signals with this shortName."),
        query("search", "Case-insensitive substring of name or shortName."),
        *CREATED_WINDOW, *PAGING,
    ], responses=SignalOut(many=True))
    def get(self, request):
        """List signals.

        Signals (the billable things an agent reports) of the key's book, newest first, filtered by the query
        parameters. A bare array of one window (`limit`, `offset`); the total is in the `X-Total-Count` header."""
        return array_response(selectors.signal_list(book=self.book, params=request.query_params),
                              request.query_params, SignalOut)

    @extend_schema(request=SignalCreateIn, responses={201: SignalOut, 409: ErrorOut})
    def post(self, request):
        """Create a signal.

        A signal of one of your agents (`agentId`, 404 when unknown). `shortName` defaults to `name`; both are unique
        per agent (409)."""
        signal = services.signal_create(book=self.book, data=parse(SignalCreateIn, request.data))
        return Response(SignalOut(signal).data, status=201)


class SignalBulkCreateApi(OrgApiView):
    @extend_schema(request=SignalBulkCreateIn, responses={201: SignalOut(many=True), 409: ErrorOut})
    def post(self, request):
        """Create several signals of one agent.

        All or nothing: a name or shortName repeated inside the request is a 400 and a clash with an existing signal a
        409, each naming the item (`signals[2].shortName: ...`)."""
        data = parse(SignalBulkCreateIn, request.data)
        signals = services.signal_bulk_create(book=self.book, agent_id=data["agent_id"], items=data["signals"])
        return Response(SignalOut(signals, many=True).data, status=201)


class SignalDetailApi(OrgApiView):
    @extend_schema(responses=SignalOut)
    def get(self, request, signal_id):
        """Get a signal.

        One signal of the key's book."""
        return Response(SignalOut(selectors.signal_get(book=self.book, signal_id=signal_id)).data)

    @extend_schema(request=SignalUpdateIn(partial=True), responses={200: SignalOut, 409: ErrorOut})
    def patch(self, request, signal_id):
        """Update a signal.

        Renames or retypes it; `shortName` is not derived again from a new name (events match on it). A signal's agent
        never changes: another `agentId` is a 400."""
        data = parse(SignalUpdateIn, request.data, partial=True)
        return Response(SignalOut(services.signal_update(book=self.book, signal_id=signal_id, data=data)).data)

    @extend_schema(responses=NO_CONTENT)
    def delete(self, request, signal_id):
        """Delete a signal.

        Permanent delete; its usage events stay and keep their `signalName`. 409 while a pricing strategy prices the
        signal."""
        services.signal_delete(book=self.book, signal_id=signal_id)
        return Response(status=204)


EVENT_FILTERS = [*(query(name, text) for name, text in (
    ("customerId", "Customer UUID."), ("customerExternalId", "Customer external id."),
    ("agentId", "Agent UUID."), ("agentCode", "Agent code."), ("signalId", "Signal UUID."),
    ("signalName", "Signal name as recorded."), ("eventStatus", "PROCESSED or NEEDS_COST_BACKFILL."),
    ("environment", "production, staging, development or testing."), ("model", "Model id."),
    ("idempotencyKey", "The record's idempotency key."),
    ("startDate", "ISO 8601; events at or after it."),
    ("endDate", "ISO 8601; a date includes that whole day, a timestamp is exclusive.")))]


class _ExportRenderer(BaseRenderer):
    """Lets a client ask for the export's own media type (`Accept: text/csv`); an error is still JSON."""

    charset = None

    def render(self, data, accepted_media_type=None, renderer_context=None):
        return data if isinstance(data, bytes) else orjson.dumps(data)


class _CsvRenderer(_ExportRenderer):
    media_type, format = "text/csv", "csv"


class _JsonLinesRenderer(_ExportRenderer):
    media_type, format = "application/x-ndjson", "jsonl"


class _ExportNegotiation(DefaultContentNegotiation):
    """`format` is the export's own parameter (csv or jsonl), not DRF's renderer override (which would answer an
    unknown one with a bare 404)."""

    settings = SimpleNamespace(URL_FORMAT_OVERRIDE=None)


def _accepts_gzip(header: str) -> bool:
    """Whether `Accept-Encoding` takes gzip (`gzip`, `gzip;q=0.5`; not `gzip;q=0`)."""
    for item in header.split(","):
        coding, _, quality = item.strip().partition(";")
        if coding.strip().lower() in ("gzip", "x-gzip"):
            weight = quality.strip().removeprefix("q=")
            return not weight or weight.strip() not in ("0", "0.0", "0.00", "0.000")
    return False


class UsageEventExportApi(OrgApiView):
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, _CsvRenderer, _JsonLinesRenderer]
    content_negotiation_class = _ExportNegotiation

    @extend_schema(
        operation_id="events_export",
        parameters=[*EVENT_FILTERS,
                    query("format", "`csv` (default, with a header row) or `jsonl` (one JSON object a line).",
                          enum=["csv", "jsonl"]),
                    query("gzip", "`true`: the body is a gzip file (`.csv.gz`, `application/gzip`). Without it, "
                          "`Accept-Encoding: gzip` compresses the transfer (`Content-Encoding: gzip`).",
                          OpenApiTypes.BOOL)],
        responses={(200, "text/csv"): OpenApiTypes.BINARY, (200, "application/x-ndjson"): OpenApiTypes.BINARY,
                   (200, "application/gzip"): OpenApiTypes.BINARY},
    )
    def get(self, request):
        """Export usage events.

        Every event the filters match (those of `GET /v1/events`; no `limit`), oldest first, with its cost and every
        attribute the listing shows, streamed as it is read: `format=csv` (a header row, `metadata` and `services` as
        JSON text, empty cells for null) or `format=jsonl` (one object a line, the listing's fields and values). The
        answer is never held in memory and needs no server-side cursor, so a ledger of millions of events exports
        through a transaction pooler. `gzip=true` answers a gzip file (`usage-events.csv.gz`); otherwise a client
        sending `Accept-Encoding: gzip` gets the transfer compressed. A bad filter is a 400 before any row is sent."""
        options = parse(UsageExportQueryIn, request.query_params)
        as_file = options["gzip"]
        compressed = as_file or _accepts_gzip(request.headers.get("Accept-Encoding", ""))
        body = usage_event_export(book=self.book, params=request.query_params, export_format=options["format"],
                                  gzip=compressed)
        name = f"usage-events.{options['format']}" + (".gz" if as_file else "")
        response = StreamingHttpResponse(body, content_type="application/gzip" if as_file
                                         else EXPORT_TYPES[options["format"]])
        if compressed and not as_file:
            response["Content-Encoding"] = "gzip"
        response["Vary"] = "Accept-Encoding"
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        response["Cache-Control"] = "no-store"
        return response


class UsageEventListApi(OrgApiView):
    @extend_schema(
        operation_id="events_list",
        parameters=[*EVENT_FILTERS, *PAGING],
        responses=UsageEventOut(many=True),
    )
    def get(self, request):
        """List usage events.

        Recorded usage events, newest first, filtered by the query parameters; `usageCost` and `quantity` are decimal
        strings and `usageCost` is null while the event waits for a cost (`NEEDS_COST_BACKFILL`). A bare array of one
        window (`limit`, `offset`); the total is in the `X-Total-Count` header."""
        return array_response(selectors.usage_event_list(book=self.book, params=request.query_params), request.query_params,
                              UsageEventOut)


class ModelMapApi(OrgApiView):
    @extend_schema(operation_id="events_map_model", request=ModelMapIn,
                   responses={200: ModelMapOut, 201: ModelMapOut})
    def post(self, request):
        """Map an unknown model onto a catalog entry.

        Redirects a model name the catalog does not know (as events send it, with its provider) to an existing active
        catalog entry, then prices the events stored with cost null under that name: inline when few wait, otherwise in
        the background (`backfill.scheduled: true`), whose progress `GET /v1/jobs/{jobId}` reads. 201 when the mapping
        is new, 200 when it replaced an earlier one. Mapping never creates rates; a name the catalog already knows is a
        400, an unknown `serviceId` a 404."""
        data = parse(ModelMapIn, request.data)
        mapping = model_map(book=self.book, created_by=self.created_by, **data)
        return Response(ModelMapOut(mapping).data, status=201 if mapping.created else 200)


def _change_answer(change, status: int) -> Response:
    override = change.override
    override.change = change
    return Response(PriceOverrideChangeOut(override).data, status=status)


class PriceOverrideListApi(OrgApiView):
    read_roles = MONEY_ROLES  # contract.md "Price overrides": owner, admin and finance
    write_roles = MONEY_ROLES

    @extend_schema(operation_id="price_overrides_list", parameters=PAGING, responses=PriceOverrideOut(many=True))
    def get(self, request):
        """List price overrides.

        The book's own prices, newest `effectiveFrom` first (those of every date last), with who set each and when. A bare array of one window
        (`limit`, `offset`); the total is in the `X-Total-Count` header."""
        return array_response(price_override_list(book=self.book), request.query_params, PriceOverrideOut)

    @extend_schema(operation_id="price_overrides_create", request=PriceOverrideIn,
                   responses={201: PriceOverrideChangeOut, 409: ErrorOut})
    def post(self, request):
        """Create a price override.

        The book's own rates for a catalog service (`serviceId`), rates for a model the catalog lacks (`model`,
        `modelProvider`), or a percentage off a provider's list prices (`modelProvider`, `discountPercent`). Events
        dated at or after `effectiveFrom` are priced with it, events of every date when it is left out (the most
        specific wins: service, then model, then provider discount; of one target, the latest in effect); the events
        it touches are priced again as a job (`jobId`): inline when few, otherwise in the background. Cost only:
        invoices never change. A second override of the same target from the same instant (or a second one without
        `effectiveFrom`) is a 409."""
        data = parse(PriceOverrideIn, request.data)
        return _change_answer(price_override_create(book=self.book, data=data, created_by=self.created_by), 201)


class PriceOverrideDetailApi(OrgApiView):
    read_roles = MONEY_ROLES
    write_roles = MONEY_ROLES

    @extend_schema(operation_id="price_overrides_get", responses=PriceOverrideOut)
    def get(self, request, override_id):
        """Get a price override.

        One of the book's price overrides: what it prices (a catalog service, a model the catalog lacks, or a
        provider's list prices with a discount), its rates, `effectiveFrom`, note, and who set it and when."""
        return Response(PriceOverrideOut(get_owned(PriceOverride, self.book, override_id)).data)

    @extend_schema(operation_id="price_overrides_delete", responses={200: PriceOverrideChangeOut})
    def delete(self, request, override_id):
        """Delete a price override.

        The events it priced are priced again without it (the next override in effect, or the catalog) as a job
        (`jobId`); the answer is the deleted override."""
        return _change_answer(price_override_delete(book=self.book, override_id=override_id,
                                                    created_by=self.created_by), 200)
