"""`/v1/invoices`: generate, send, void, PDF, refunds."""
from __future__ import annotations

from agentbilling.models import Invoice, InvoiceRow, InvoiceSent, Model
from agentbilling.pagination import HAS_MORE
from agentbilling.resources._base import Get, OffsetList, Update, path_id


class Invoices(Get, Update, OffsetList):
    """`get` answers an `Invoice` (lines, payments, totals); `list` and `iter` `InvoiceRow`s, from
    `{data, hasMore}` (filters `customerExternalId`, `status`, `startDate`, `endDate`)."""

    path = "/v1/invoices"
    model = Invoice
    row_model = InvoiceRow
    shape = HAS_MORE

    def generate(self, *, customerId, subscriptionId, billingPeriodStart=None, billingPeriodEnd=None,
                 **fields) -> Invoice:
        """The draft of a period (default: the current one); generating again refreshes the draft."""
        body = {"customerId": str(customerId), "subscriptionId": str(subscriptionId), **fields}
        if billingPeriodStart is not None:
            body["billingPeriodStart"] = billingPeriodStart
        if billingPeriodEnd is not None:
            body["billingPeriodEnd"] = billingPeriodEnd
        return self._call("POST", f"{self.path}/generate", body=body, model=Invoice)

    def send(self, id, **fields) -> InvoiceSent:
        """Email it (finalizing a draft); optional `recipientEmail`, `subject`, `message`."""
        return self._call("POST", f"{self._member(id)}/send", body=fields, model=InvoiceSent)

    def void(self, id, **fields) -> Invoice:
        return self._call("POST", f"{self._member(id)}/void", body=fields, model=Invoice)

    def pdf(self, id) -> bytes:
        """The invoice as PDF bytes."""
        return self._run(self._content("GET", f"{self._member(id)}/pdf"))

    def refund(self, id, payment_id, **fields) -> Model:
        """Refund a payment; optional `amount` (default: everything not yet refunded), `reason`."""
        return self._call("POST", f"{self._member(id)}/payments/{path_id(payment_id)}/refund", body=fields)
