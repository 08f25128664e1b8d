"""/v1/webhook-endpoints: a book's outbound webhooks (docs/webhooks.md)."""
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from accounts.api import OrgApiView
from core import clock
from core.database import retry_while_reconnecting
from core.errors import BadRequest
from core.openapi import ErrorOut
from core.pagination import has_more_response
from core.serialization import parse
from webhooks import selectors, services
from webhooks.models import DeliveryStatus
from webhooks.serializers import (WebhookDeliveryListOut, WebhookDeliveryOut, WebhookEndpointCreateIn,
                                         WebhookEndpointDeletedOut, WebhookEndpointOut, WebhookEndpointUpdateIn,
                                         WebhookEndpointWithSecretOut, WebhookNoFieldsIn, WebhookReplayIn,
                                         WebhookReplayOut)

WEBHOOK_ROLES = frozenset({"owner", "admin", "finance"})
DISABLED = OpenApiResponse(ErrorOut, description="The endpoint is disabled (`endpoint_disabled`): enable it first.")


class WebhookApi(OrgApiView):
    """Every operation, reads included, needs an owner, admin or finance key (as customer alerts)."""

    read_roles = WEBHOOK_ROLES
    write_roles = WEBHOOK_ROLES


def _with_secret(endpoint) -> dict:
    return {**WebhookEndpointOut(endpoint).data, "secret": endpoint.secret}


class WebhookEndpointListCreateApi(WebhookApi):
    @extend_schema(responses=WebhookEndpointOut(many=True))
    def get(self, request):
        """List webhook endpoints.

        Every endpoint of the book with its event types and health (healthy, failing, disabled); never a secret."""
        return Response(WebhookEndpointOut(selectors.webhook_endpoint_list(book=self.book), many=True).data)

    @extend_schema(request=WebhookEndpointCreateIn, responses={201: WebhookEndpointWithSecretOut})
    def post(self, request):
        """Create a webhook endpoint.

        Events of the listed `eventTypes` (empty: all) are POSTed to `url`, signed per Standard Webhooks 1.0 with
        the `secret` (`whsec_...`) this answer shows once. A live book needs `https`; hosts on private, loopback or
        link-local addresses are refused (400, or when resolved at each attempt)."""
        data = parse(WebhookEndpointCreateIn, request.data)
        endpoint = services.webhook_endpoint_create(book=self.book, created_by=self.created_by, **data)
        return Response(_with_secret(endpoint), status=201)


class WebhookEndpointDetailApi(WebhookApi):
    @extend_schema(responses=WebhookEndpointOut)
    def get(self, request, endpoint_id):
        """Get a webhook endpoint.

        Its settings and health; the secret is never shown again (rotate it to get a new one)."""
        return Response(WebhookEndpointOut(selectors.webhook_endpoint_get(book=self.book,
                                                                          endpoint_id=endpoint_id)).data)

    @extend_schema(request=WebhookEndpointUpdateIn, responses=WebhookEndpointOut)
    def patch(self, request, endpoint_id):
        """Update a webhook endpoint.

        `url`, `eventTypes`, `description`, `enabled`. Enabling a disabled endpoint makes it healthy again;
        replay the events it missed."""
        data = parse(WebhookEndpointUpdateIn, request.data, partial=True)
        endpoint = services.webhook_endpoint_update(book=self.book, endpoint_id=endpoint_id, now=clock.now(), **data)
        return Response(WebhookEndpointOut(endpoint).data)

    @extend_schema(responses={200: WebhookEndpointDeletedOut})
    def delete(self, request, endpoint_id):
        """Delete a webhook endpoint.

        Nothing more is sent to it; its delivery log goes with it."""
        deleted_id = services.webhook_endpoint_delete(book=self.book, endpoint_id=endpoint_id)
        return Response(WebhookEndpointDeletedOut({"deleted": True, "id": deleted_id}).data)


class WebhookEndpointRotateSecretApi(WebhookApi):
    @extend_schema(request=None, responses={200: WebhookEndpointWithSecretOut})
    def post(self, request, endpoint_id):
        """Rotate a webhook endpoint's secret.

        Answers the new `secret` (shown once). For 24 hours (`previousSecretExpiresAt`) every delivery carries a
        signature with each secret, so receivers can switch without missing one."""
        parse(WebhookNoFieldsIn, request.data)
        endpoint = services.webhook_endpoint_rotate_secret(book=self.book, endpoint_id=endpoint_id, now=clock.now())
        return Response(_with_secret(endpoint))


def _delivery(book, delivery_id) -> dict:
    """A delivery as the answer of a test or a resend, read after their commit."""
    return retry_while_reconnecting(
        lambda: WebhookDeliveryOut(selectors.webhook_delivery_get(book=book, delivery_id=delivery_id)).data)


class WebhookEndpointTestApi(WebhookApi):
    @extend_schema(request=None, responses={202: WebhookDeliveryOut, 409: DISABLED})
    def post(self, request, endpoint_id):
        """Send a test event to a webhook endpoint.

        A `webhook.test` event, signed, delivered and retried like any other; its outcome appears in the delivery
        log. 409 when the endpoint is disabled."""
        parse(WebhookNoFieldsIn, request.data)
        delivery = services.webhook_endpoint_test(book=self.book, endpoint_id=endpoint_id, now=clock.now())
        return Response(_delivery(self.book, delivery.pk), status=202)


class WebhookEndpointReplayApi(WebhookApi):
    @extend_schema(request=WebhookReplayIn, responses={202: WebhookReplayOut, 409: DISABLED})
    def post(self, request, endpoint_id):
        """Replay events to a webhook endpoint.

        Every event of the book at or after `since` that the endpoint receives is delivered again (or for the first
        time, if it happened before the endpoint existed or while it was disabled), oldest first, each with its
        original `webhook-id`; at most 10,000 at once (400 beyond)."""
        data = parse(WebhookReplayIn, request.data)
        replayed = services.webhook_endpoint_replay(book=self.book, endpoint_id=endpoint_id, now=clock.now(), **data)
        return Response(WebhookReplayOut({"replayed": replayed}).data, status=202)


class WebhookDeliveryListApi(WebhookApi):
    @extend_schema(responses=WebhookDeliveryListOut, parameters=[
        OpenApiParameter("status", str, enum=DeliveryStatus.values, description="only deliveries in this status"),
        OpenApiParameter("limit", int, description="1-100, default 100"),
        OpenApiParameter("offset", int, description="rows to skip, default 0")])
    def get(self, request, endpoint_id):
        """List a webhook endpoint's deliveries.

        The delivery log, newest first: each event sent to the endpoint, its status (pending, delivered, failed),
        attempts with the response status, the first bytes of the answer and the latency, and when the next retry
        is due."""
        status = request.query_params.get("status") or None
        if status is not None and status not in DeliveryStatus.values:
            raise BadRequest([f"status: Must be one of {', '.join(DeliveryStatus.values)}."])
        deliveries = selectors.webhook_delivery_list(book=self.book, endpoint_id=endpoint_id, status=status)
        return has_more_response(deliveries, request.query_params, WebhookDeliveryOut)


class WebhookDeliveryResendApi(WebhookApi):
    @extend_schema(request=None, responses={202: WebhookDeliveryOut, 409: DISABLED})
    def post(self, request, endpoint_id, delivery_id):
        """Resend a webhook delivery.

        The delivery is attempted again now with the same `webhook-id` (delivered and failed ones too), and retried
        from the first delay if it fails. 409 when the endpoint is disabled."""
        parse(WebhookNoFieldsIn, request.data)
        delivery = services.webhook_delivery_resend(book=self.book, endpoint_id=endpoint_id, delivery_id=delivery_id,
                                                    now=clock.now())
        return Response(_delivery(self.book, delivery.pk), status=202)
