from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response

from accounts.api import ALL_SCOPES, OrgApiView
from accounts.models import KeyScope
from core import clock
from core.openapi import ErrorOut
from core.serialization import parse
from controls import selectors
from controls.serializers import (CheckOut, CheckQueryIn, CoverageOut, CustomerAlertCreateIn,
                                  CustomerAlertDeletedOut, CustomerAlertOut, CustomerAlertUpdateIn, DeviceOut,
                                  HeartbeatIn, SpendCapCreateIn, SpendCapDeletedOut, SpendCapOut, SpendCapUpdateIn,
                                  SpendOut, SpendQueryIn)
from controls.services.customer_alerts import customer_alert_create, customer_alert_delete, customer_alert_update
from controls.services.spend_caps import (device_heartbeat, spend_cap_create, spend_cap_delete, spend_cap_update,
                                          spend_check)

CAP_WRITERS = frozenset({"owner", "finance"})
WATCH_ROLES = frozenset({"owner", "admin", "finance"})


class SpendControlApi(OrgApiView):
    """Spend-control reads take any secret key (ingest-only and legal included); writes owner or finance."""

    read_scopes = ALL_SCOPES
    write_roles = CAP_WRITERS

    @property
    def user_id(self) -> str:
        return str(self.api_key.membership.user_id)


class SpendCapListCreateApi(SpendControlApi):
    @extend_schema(responses=SpendCapOut(many=True))
    def get(self, request):
        """List spend caps.

        The organization cap and the per-developer caps on internal coding-agent spend, each with the sentence that
        states it."""
        return Response(SpendCapOut(selectors.spend_cap_list(book=self.book), many=True).data)

    @extend_schema(request=SpendCapCreateIn, responses={201: SpendCapOut, 409: ErrorOut})
    def post(self, request):
        """Create a spend cap.

        One cap per scope and target (409): the organization cap (`scope: org`), or a developer's cap (`scope: dev`,
        `scopeValue` their email) that needs the organization cap and stays at or under it (400). `mode: track` only
        sends the alert emails; `enforce` also makes armed machines refuse tool calls at the cap."""
        data = parse(SpendCapCreateIn, request.data)
        cap = spend_cap_create(book=self.book, created_by_user_id=self.user_id, **data)
        return Response(SpendCapOut(cap).data, status=201)


class SpendCapDetailApi(SpendControlApi):
    @extend_schema(request=SpendCapUpdateIn, responses=SpendCapOut)
    def patch(self, request, cap_id):
        """Update a spend cap.

        Amount, period, mode, cool-off or alert thresholds; a developer cap stays at or under the organization cap, both
        ways (400)."""
        data = parse(SpendCapUpdateIn, request.data, partial=True)
        return Response(SpendCapOut(spend_cap_update(book=self.book, cap_id=cap_id, **data)).data)

    @extend_schema(responses={200: SpendCapDeletedOut, 400: OpenApiResponse(
        ErrorOut, description="The organization cap stays while developer caps depend on it.")})
    def delete(self, request, cap_id):
        """Delete a spend cap.

        Answers the sentence of the deleted cap. The organization cap stays while developer caps depend on it (400)."""
        sentence = spend_cap_delete(book=self.book, cap_id=cap_id)
        return Response(SpendCapDeletedOut({"deleted": True, "sentence": sentence}).data)


class SpendApi(SpendControlApi):
    @extend_schema(parameters=[SpendQueryIn], responses=SpendOut,
                   description="Internal coding-agent spend in the current UTC day, week (from Monday) or month.")
    def get(self, request):
        """Internal coding-agent spend."""
        query = parse(SpendQueryIn, request.query_params)
        return Response(SpendOut(selectors.spend_report(book=self.book, now=clock.now(), **query)).data)


class CoverageApi(SpendControlApi):
    @extend_schema(responses=CoverageOut,
                   description="Developers seen in the trailing 7 days and how many of them are armed.")
    def get(self, request):
        """Spend-control coverage."""
        return Response(CoverageOut(selectors.coverage(book=self.book, now=clock.now())).data)


class DeviceHeartbeatApi(SpendControlApi):
    # A developer's machine checks in with an ingest-only key; a legal key reads spend controls only (spec 5.5).
    write_scopes = frozenset({KeyScope.FULL, KeyScope.INGEST})
    write_roles = None

    @extend_schema(request=HeartbeatIn, responses=DeviceOut,
                   description="A developer machine's check-in; ingest-only keys may send it.")
    def post(self, request):
        """Check in a developer machine."""
        data = parse(HeartbeatIn, request.data)
        return Response(DeviceOut(device_heartbeat(book=self.book, now=clock.now(), **data)).data)


class SpendCheckApi(SpendControlApi):
    @extend_schema(parameters=[CheckQueryIn], responses=CheckOut,
                   description="May an armed machine of this developer make a tool call now?")
    def get(self, request):
        """Check whether a developer's machine may make a tool call."""
        query = parse(CheckQueryIn, request.query_params)
        return Response(CheckOut(spend_check(book=self.book, now=clock.now(), **query)).data)


class CustomerAlertApi(OrgApiView):
    """Every operation, reads included, needs an owner, admin or finance key (spec §4)."""

    read_roles = WATCH_ROLES
    write_roles = WATCH_ROLES


class CustomerAlertListCreateApi(CustomerAlertApi):
    @extend_schema(responses=CustomerAlertOut(many=True))
    def get(self, request):
        """List customer watches.

        Every watch of the book: the customer, the metric and threshold watched, the window and the recipient."""
        return Response(CustomerAlertOut(selectors.customer_alert_list(book=self.book), many=True).data)

    @extend_schema(request=CustomerAlertCreateIn, responses={201: CustomerAlertOut, 409: ErrorOut})
    def post(self, request):
        """Create a customer watch.

        Emails `notifyEmail` when the customer's metric crosses `thresholdUsd` in the window (a calendar month, a
        rolling 30 days, or custom dates). 400 for an internal or deleted customer, inconsistent custom dates, a
        recipient who is not an owner, admin or finance member, or the organization's watch limit reached; 409 when an
        identical watch exists."""
        data = parse(CustomerAlertCreateIn, request.data)
        alert = customer_alert_create(book=self.book, created_by_user_id=str(self.api_key.membership.user_id),
                                      now=clock.now(), **data)
        return Response(CustomerAlertOut(alert).data, status=201)


class CustomerAlertDetailApi(CustomerAlertApi):
    @extend_schema(request=CustomerAlertUpdateIn, responses={200: CustomerAlertOut, 409: ErrorOut})
    def patch(self, request, alert_id):
        """Update a customer watch.

        Metric, threshold or window; the customer and the recipient are fixed (400). Windows that already fired stay
        fired. 409 when the change makes it identical to another watch."""
        data = parse(CustomerAlertUpdateIn, request.data, partial=True)
        alert = customer_alert_update(book=self.book, alert_id=alert_id, now=clock.now(), **data)
        return Response(CustomerAlertOut(alert).data)

    @extend_schema(responses={200: CustomerAlertDeletedOut})
    def delete(self, request, alert_id):
        """Delete a customer watch.

        Answers the id of the deleted watch; the alerts it already sent stay on record."""
        deleted_id = customer_alert_delete(book=self.book, alert_id=alert_id)
        return Response(CustomerAlertDeletedOut({"deleted": True, "id": deleted_id}).data)
