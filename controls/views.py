from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from config.accounts.api import ALL_SCOPES, OrgApiView
from config.core import clock
from config.core.openapi import ErrorOut
from config.core.serialization import parse
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
        return Response(SpendCapOut(selectors.spend_cap_list(book=self.book), many=True).data)

    @extend_schema(request=SpendCapCreateIn, responses={201: SpendCapOut, 409: ErrorOut})
    def post(self, request):
        data = parse(SpendCapCreateIn, request.data)
        cap = spend_cap_create(book=self.book, created_by_user_id=self.user_id, **data)
        return Response(SpendCapOut(cap).data, status=201)


class SpendCapDetailApi(SpendControlApi):
    @extend_schema(request=SpendCapUpdateIn, responses=SpendCapOut)
    def patch(self, request, cap_id):
        data = parse(SpendCapUpdateIn, request.data, partial=True)
        return Response(SpendCapOut(spend_cap_update(book=self.book, cap_id=cap_id, **data)).data)

    @extend_schema(responses={200: SpendCapDeletedOut})
    def delete(self, request, cap_id):
        sentence = spend_cap_delete(book=self.book, cap_id=cap_id)
        return Response(SpendCapDeletedOut({"deleted": True, "sentence": sentence}).data)


class SpendApi(SpendControlApi):
    @extend_schema(parameters=[SpendQueryIn], responses=SpendOut,
                   description="Internal coding-agent spend in the current UTC day, week (from Monday) or month.")
    def get(self, request):
        query = parse(SpendQueryIn, request.query_params)
        return Response(SpendOut(selectors.spend_report(book=self.book, now=clock.now(), **query)).data)


class CoverageApi(SpendControlApi):
    @extend_schema(responses=CoverageOut,
                   description="Developers seen in the trailing 7 days and how many of them are armed.")
    def get(self, request):
        return Response(CoverageOut(selectors.coverage(book=self.book, now=clock.now())).data)


class DeviceHeartbeatApi(SpendControlApi):
    write_scopes = ALL_SCOPES  # a developer's machine checks in with an ingest-only key
    write_roles = None

    @extend_schema(request=HeartbeatIn, responses=DeviceOut,
                   description="A developer machine's check-in; ingest-only keys may send it.")
    def post(self, request):
        data = parse(HeartbeatIn, request.data)
        return Response(DeviceOut(device_heartbeat(book=self.book, now=clock.now(), **data)).data)


class SpendCheckApi(SpendControlApi):
    @extend_schema(parameters=[CheckQueryIn], responses=CheckOut,
                   description="May an armed machine of this developer make a tool call now?")
    def get(self, request):
        query = parse(CheckQueryIn, request.query_params)
        return Response(CheckOut(spend_check(book=self.book, now=clock.now(), **query)).data)


class CustomerAlertApi(OrgApiView):
    """Every operation, reads included, needs an owner, admin or finance key (spec §4)."""

    read_roles = WATCH_ROLES
    write_roles = WATCH_ROLES


class CustomerAlertListCreateApi(CustomerAlertApi):
    @extend_schema(responses=CustomerAlertOut(many=True))
    def get(self, request):
        return Response(CustomerAlertOut(selectors.customer_alert_list(book=self.book), many=True).data)

    @extend_schema(request=CustomerAlertCreateIn, responses={201: CustomerAlertOut, 409: ErrorOut})
    def post(self, request):
        data = parse(CustomerAlertCreateIn, request.data)
        alert = customer_alert_create(book=self.book, created_by_user_id=str(self.api_key.membership.user_id),
                                      now=clock.now(), **data)
        return Response(CustomerAlertOut(alert).data, status=201)


class CustomerAlertDetailApi(CustomerAlertApi):
    @extend_schema(request=CustomerAlertUpdateIn, responses={200: CustomerAlertOut, 409: ErrorOut})
    def patch(self, request, alert_id):
        data = parse(CustomerAlertUpdateIn, request.data, partial=True)
        alert = customer_alert_update(book=self.book, alert_id=alert_id, now=clock.now(), **data)
        return Response(CustomerAlertOut(alert).data)

    @extend_schema(responses={200: CustomerAlertDeletedOut})
    def delete(self, request, alert_id):
        deleted_id = customer_alert_delete(book=self.book, alert_id=alert_id)
        return Response(CustomerAlertDeletedOut({"deleted": True, "id": deleted_id}).data)
