from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from billing.filters import OFFSET_PARAMETERS, openapi_parameters
from billing.invoice_documents import InvoiceView, invoice_pdf
from billing.invoice_filters import InvoiceFilter
from billing.selectors.invoices import invoice_get, invoice_list
from billing.serializers.invoices import (InvoiceGenerateIn, InvoiceListOut, InvoiceOut, InvoiceRowOut, InvoiceSendIn,
                                          InvoiceSendOut, InvoiceUpdateIn, InvoiceVoidIn, RefundCreatedOut,
                                          RefundCreateIn, StripeWebhookOut)
from billing.services.invoices import invoice_generate, invoice_send, invoice_update, invoice_void
from billing.services.payments import refund_create, stripe_event_handle
from billing.stripe_gateway import verify_event
from accounts.api import MONEY_ROLES, OrgApiView
from core import clock
from core.database import retry_while_reconnecting
from core.filtering import filtered
from core.openapi import ErrorOut
from core.pagination import has_more_response
from core.serialization import parse

PROVIDER_FAILED = OpenApiResponse(ErrorOut, description="Stripe did not answer the refund: nothing was recorded, and "
                                                         "sending the same refund again refunds once.")
PROVIDER_REFUSED = OpenApiResponse(ErrorOut, description="Stripe refused the refund (`payment_refused`), or one of "
                                                          "another amount whose answer was lost must be sent again "
                                                          "first; nothing was recorded.")


def _full(book, invoice_id) -> dict:
    return InvoiceOut(invoice_get(book=book, invoice_id=invoice_id)).data


def _full_after_commit(book, invoice_id) -> dict:
    """The invoice in full as the answer of a write that committed (generate, update, void): read again on a new
    connection while PostgreSQL comes back, or a restart between the commit and the read answers 503 for it."""
    return retry_while_reconnecting(lambda: _full(book, invoice_id))


class InvoiceListApi(OrgApiView):
    """Invoices, newest first, as `{data, hasMore}`."""

    @extend_schema(parameters=openapi_parameters(InvoiceFilter) + OFFSET_PARAMETERS, responses=InvoiceListOut,
                   description="`{data: [rows], hasMore}`. `startDate`/`endDate` select invoices whose period "
                               "overlaps the window.")
    def get(self, request):
        """List invoices."""
        invoices = filtered(InvoiceFilter, request.query_params, invoice_list(book=self.book))
        return has_more_response(invoices, request.query_params, InvoiceRowOut)


class InvoiceGenerateApi(OrgApiView):
    """Generate the draft invoice of a subscription's period (default: its current period)."""

    @extend_schema(request=InvoiceGenerateIn,
                   responses={201: InvoiceOut, 200: InvoiceOut, 409: ErrorOut, 422: ErrorOut},
                   description="201 with a new draft. For a period already invoiced: 200 with the draft re-priced "
                               "in place, or the finalized invoice unchanged. 409 when another invoice of the "
                               "subscription overlaps the period.")
    def post(self, request):
        """Generate a draft invoice."""
        invoice, created = invoice_generate(book=self.book, now=clock.now(), **parse(InvoiceGenerateIn, request.data))
        return Response(_full_after_commit(self.book, invoice.pk), status=201 if created else 200)


class InvoiceDetailApi(OrgApiView):
    """One invoice in full: lines, agent breakdown, discount, tax, totals and payments."""

    @extend_schema(responses=InvoiceOut)
    def get(self, request, invoice_id):
        """Get an invoice."""
        return Response(_full(self.book, invoice_id))

    @extend_schema(request=InvoiceUpdateIn, responses={200: InvoiceOut, 409: ErrorOut, 422: ErrorOut},
                   description="Discount, tax rate and memo of a draft; a finalized invoice is immutable (409).")
    def patch(self, request, invoice_id):
        """Update a draft invoice."""
        invoice = invoice_update(book=self.book, invoice_id=invoice_id, **parse(InvoiceUpdateIn, request.data))
        return Response(_full_after_commit(self.book, invoice.pk))


class InvoicePdfApi(OrgApiView):
    """The invoice as a PDF document."""

    @extend_schema(responses={(200, "application/pdf"): OpenApiTypes.BINARY})
    def get(self, request, invoice_id):
        """Download an invoice as PDF.

        The invoice document (`application/pdf`, `Content-Disposition: inline` with the invoice number as file name):
        seller and customer, lines with quantity, unit price and amount, discount, tax, totals and how to pay."""
        invoice = invoice_get(book=self.book, invoice_id=invoice_id)
        response = HttpResponse(invoice_pdf(InvoiceView.of(invoice)), content_type="application/pdf")
        response["Content-Disposition"] = f'inline; filename="invoice-{invoice.invoice_number}.pdf"'
        return response


class InvoiceSendApi(OrgApiView):
    """Email the invoice (finalizing a draft first) with a pay-now link and the PDF attached."""

    @extend_schema(request=InvoiceSendIn, responses={200: InvoiceSendOut, 422: ErrorOut})
    def post(self, request, invoice_id):
        """Send an invoice by email.

        Emails the invoice (finalizing a draft first) with a pay-now link and the PDF attached. An email the mail
        server refuses answers 200 with `success: false` and why in `message`: a draft was
        finalized before the email was tried and stays `pending` (send again)."""
        delivery = invoice_send(book=self.book, invoice_id=invoice_id, now=clock.now(),
                                **parse(InvoiceSendIn, request.data))
        invoice = delivery.invoice
        message = delivery.failure or f"Invoice {invoice.invoice_number} sent to {delivery.recipient}."
        return Response(InvoiceSendOut({
            "success": delivery.sent, "message": message, "emailId": delivery.email_id,
            "recipientEmail": delivery.recipient, "invoiceNumber": invoice.invoice_number,
            "status": invoice.status}).data)


class InvoiceVoidApi(OrgApiView):
    """Void a draft, an unpaid invoice or a refunded one."""

    write_roles = MONEY_ROLES

    @extend_schema(request=InvoiceVoidIn, responses=InvoiceOut)
    def post(self, request, invoice_id):
        """Void an invoice."""
        invoice = invoice_void(book=self.book, invoice_id=invoice_id, now=clock.now(),
                               **parse(InvoiceVoidIn, request.data))
        return Response(_full_after_commit(self.book, invoice.pk))


class RefundCreateApi(OrgApiView):
    """Refund part or all of a payment of the invoice."""

    write_roles = MONEY_ROLES

    @extend_schema(request=RefundCreateIn, responses={201: RefundCreatedOut, 422: PROVIDER_REFUSED,
                                                      502: PROVIDER_FAILED})
    def post(self, request, invoice_id, payment_id):
        """Refund a payment."""
        refund = refund_create(book=self.book, invoice_id=invoice_id, payment_id=payment_id, now=clock.now(),
                               **parse(RefundCreateIn, request.data))
        return Response(RefundCreatedOut(refund).data, status=201)


class StripeWebhookApi(APIView):
    """Stripe's payment notification: a signed `checkout.session.completed` records the payment of the
    invoice named in `metadata.invoiceId`, a `charge.refunded` a refund made at Stripe. No API key: the
    `Stripe-Signature` header authenticates it."""

    authentication_classes = []
    permission_classes = []
    reads_raw_body = True  # the signature covers the exact bytes: never parsed as JSON, so never a 415

    @extend_schema(request=OpenApiTypes.OBJECT, responses=StripeWebhookOut, auth=[],
                   description="A bad or missing `Stripe-Signature` is a 400 and changes nothing; a replayed "
                               "event changes nothing; other event types are acknowledged and ignored.")
    def post(self, request):
        """Receive a Stripe event."""
        event = verify_event(request.body, request.headers.get("Stripe-Signature", ""))
        outcome = stripe_event_handle(event, now=clock.now())
        return Response(StripeWebhookOut({"received": True, "handled": outcome.handled,
                                          "detail": outcome.detail}).data)
