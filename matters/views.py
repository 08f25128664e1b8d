"""/v1/matters… and /v1/matter-rules… (spec §4 "Matters"): owner, admin, finance or legal users' secret
keys and the legal key only (spec §5.3, §5.5)."""
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response

from accounts.api import OrgApiView
from accounts.models import KeyScope, Role
from core import clock
from core.openapi import ErrorOut
from core.pagination import PageWindow, page_response
from core.serialization import parse
from matters import selectors, services
from matters.audit_csv import audit_csv_response
from matters.serializers import (MatterAssignIn, MatterAssignOut, MatterAuditQueryIn, MatterAuditSummaryOut,
                                 MatterDeletedOut, MatterDetailOut, MatterEventRowOut, MatterIn, MatterOut,
                                 MatterPageOut, MatterRuleDeletedOut, MatterRuleIn, MatterRuleOut,
                                 MatterRulePageOut, MatterRulesAppliedOut, MatterWithCostOut, UnassignedPageOut,
                                 UnassignedTotalsOut)

PAGE_PARAMETERS = [
    OpenApiParameter("page", int, description="1-based page number (default 1)."),
    OpenApiParameter("limit", int, description="Rows per page, 1-100 (default 10)."),
]


class MattersApiView(OrgApiView):
    read_scopes = write_scopes = frozenset({KeyScope.FULL, KeyScope.LEGAL})
    read_roles = write_roles = frozenset({Role.OWNER, Role.ADMIN, Role.FINANCE, Role.LEGAL})


class MatterListCreateApi(MattersApiView):
    @extend_schema(operation_id="matters_list", parameters=PAGE_PARAMETERS, responses=MatterPageOut)
    def get(self, request):
        """List matters.

        Matters of the key's book with the cost of the events filed under each, as one page `{results, page, limit,
        totalPages, totalResults}`."""
        return page_response(selectors.matter_list(book=self.book), request.query_params, MatterWithCostOut)

    @extend_schema(request=MatterIn, responses={201: MatterOut, 409: OpenApiResponse(description="matterNumber taken")})
    def post(self, request):
        """Create a matter.

        A client matter that usage events are filed under: by the tag `metadata.matterId` equal to its `matterNumber`
        when recorded, by routing rules, or by hand. `matterNumber` is unique in the book (409)."""
        data = parse(MatterIn, request.data)
        matter = services.matter_create(book=self.book, **data)
        return Response(MatterOut(matter).data, status=201)


class MatterDetailApi(MattersApiView):
    @extend_schema(responses=MatterDetailOut)
    def get(self, request, matter_id):
        """Get a matter.

        One matter with its cost totals and its most recent events (at most `eventsCap`)."""
        return Response(MatterDetailOut(selectors.matter_detail(book=self.book, matter_id=matter_id)).data)

    @extend_schema(request=MatterIn, responses={200: MatterOut, 409: OpenApiResponse(description="matterNumber taken")})
    def patch(self, request, matter_id):
        """Update a matter.

        Only the fields sent change; `responsibleUserId: null` clears it. 409 when the new `matterNumber` is taken."""
        changes = parse(MatterIn, request.data, partial=True)
        matter = services.matter_update(book=self.book, matter_id=matter_id, changes=changes)
        return Response(MatterOut(matter).data)

    @extend_schema(responses={200: MatterDeletedOut})
    def delete(self, request, matter_id):
        """Delete a matter.

        Its events return to Unassigned (kept as history, so applying the rules leaves them alone) and its routing rules
        are deleted; the answer counts both."""
        events_returned, rules_deleted = services.matter_delete(book=self.book, matter_id=matter_id)
        return Response(MatterDeletedOut({"deleted": True, "eventsReturnedToUnassigned": events_returned,
                                          "routingRulesDeleted": rules_deleted}).data)


class UnassignedEventListApi(MattersApiView):
    @extend_schema(operation_id="matters_unassigned_list", parameters=PAGE_PARAMETERS, responses=UnassignedPageOut)
    def get(self, request):
        """List unassigned events.

        Events filed under no matter, as one page `{results, page, limit, totalPages, totalResults}`, with `totalCost`
        and `eventsMissingCost` over every unassigned event, not just the page."""
        page = selectors.unassigned_page(book=self.book, window=PageWindow.from_params(request.query_params))
        totals = UnassignedTotalsOut(page.totals).data
        return page_response(page, request.query_params, MatterEventRowOut, extra=totals)


class MatterAssignApi(MattersApiView):
    @extend_schema(request=MatterAssignIn, responses={201: MatterAssignOut})
    def post(self, request):
        """File an event under a matter.

        Manual attribution, or unassignment with `matterId: null`. It wins over tags and rules and is never overwritten
        by them; an unassignment is remembered, so applying the rules skips the event."""
        data = parse(MatterAssignIn, request.data)
        attribution = services.matter_assign(book=self.book, **data, assigned_by=self.created_by)
        return Response(MatterAssignOut({"assigned": True, "event_id": attribution.event_id,
                                         "matter_id": attribution.matter_id, "source": attribution.source}).data,
                        status=201)


class FormatParameterIsOurs(DefaultContentNegotiation):
    """Answers JSON (the view returns the CSV itself): `format` is the audit's own query parameter here,
    not DRF's renderer override."""

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class MatterAuditApi(MattersApiView):
    content_negotiation_class = FormatParameterIsOurs

    @extend_schema(
        parameters=[
            OpenApiParameter("startDate", str, description="First day (YYYY-MM-DD, UTC, inclusive); "
                                                           "default the first day of the current UTC month."),
            OpenApiParameter("endDate", str, description="Last day (YYYY-MM-DD, UTC, inclusive); "
                                                         "default the last day of the current UTC month."),
            OpenApiParameter("view", str, enum=["summary"], description="Only `summary` (default)."),
            OpenApiParameter("format", str, enum=["json", "csv"], description="`csv` answers text/csv "
                                                                              "with the same rows and a total."),
        ],
        responses={(200, "application/json"): MatterAuditSummaryOut, (200, "text/csv"): OpenApiTypes.STR,
                   422: ErrorOut},
    )
    def get(self, request):
        """Matter cost audit.

        Cost per matter over a window of whole UTC days (default: the current month), with the unassigned remainder;
        `format=csv` answers the same rows and a total as `text/csv`. 422 when `endDate` is before `startDate`."""
        query = parse(MatterAuditQueryIn, request.query_params)
        summary = selectors.matters_audit_summary(book=self.book, now=clock.now(), start_date=query.get("start_date"),
                                                  end_date=query.get("end_date"))
        if query["format"] == "csv":
            return audit_csv_response(summary)
        return Response(MatterAuditSummaryOut(summary).data)


class MatterRuleListCreateApi(MattersApiView):
    @extend_schema(operation_id="matter_rules_list", parameters=PAGE_PARAMETERS, responses=MatterRulePageOut)
    def get(self, request):
        """List routing rules.

        The book's routing rules, as one page `{results, page, limit, totalPages, totalResults}`."""
        return page_response(selectors.matter_rule_list(book=self.book), request.query_params, MatterRuleOut)

    @extend_schema(request=MatterRuleIn, responses={201: MatterRuleOut})
    def post(self, request):
        """Create a routing rule.

        Files new events under `matterId` when they match every matcher it sets (`agentCode`, `customerExternalId`,
        `signalPattern`: a case-insensitive substring); at least one matcher is required (400). Rules are tried by
        `priority`, lowest first."""
        data = parse(MatterRuleIn, request.data)
        rule = services.matter_rule_create(book=self.book, **data)
        return Response(MatterRuleOut(rule).data, status=201)


class MatterRuleDetailApi(MattersApiView):
    @extend_schema(request=MatterRuleIn, responses=MatterRuleOut)
    def patch(self, request, rule_id):
        """Update a routing rule.

        Only the fields sent change; a matcher sent as null is cleared, but one must remain (400). Events already
        attributed keep their matter."""
        changes = parse(MatterRuleIn, request.data, partial=True)
        rule = services.matter_rule_update(book=self.book, rule_id=rule_id, changes=changes)
        return Response(MatterRuleOut(rule).data)

    @extend_schema(responses={200: MatterRuleDeletedOut})
    def delete(self, request, rule_id):
        """Delete a routing rule.

        Events it already attributed keep their matter."""
        services.matter_rule_delete(book=self.book, rule_id=rule_id)
        return Response({"deleted": True})


class MatterRulesApplyApi(MattersApiView):
    @extend_schema(request=None, responses={201: MatterRulesAppliedOut})
    def post(self, request):
        """Apply the routing rules to unassigned events.

        Sweeps the events that have no matter and no attribution history through the rules and answers how many were
        assigned. A call works through a bounded number of events; when it stops before the end, the rest of the sweep
        goes on in the background, and `GET /v1/jobs/{jobId}` follows it to its end (calling again is safe too: each
        event is attributed at most once)."""
        assigned, job = services.matter_rules_apply_start(book=self.book, created_by=self.created_by)
        return Response(MatterRulesAppliedOut({"assigned": assigned, "jobId": job.pk}).data, status=201)
