"""`/v1/invoices`: generate, send, void, PDF, refunds."""
from __future__ import annotations

from agentbilling.models import Invoice, InvoiceRow, InvoiceSent, Model
from agentbilling.pagination import HAS_MORE, Page
from agentbilling.resources._base import Resource, path_id


class Invoices(Resource):
    path = "/v1/invoices"

    def list(self, *, limit: int | None = None, offset: int | None = None, **filters) -> Page[InvoiceRow]:
        """`{data, hasMore}`; filters `customerExternalId`, `status`, `startDate`, `endDate`."""
        return self._page(HAS_MORE, self.path, {**filters, "limit": limit, "offset": offset}, model=InvoiceRow)

    def iter(self, **filters):
        return self._iter(HAS_MORE, self.path, filters, model=InvoiceRow)

    def get(self, id) -> Invoice:
        return self._call("GET", f"{self.path}/{path_id(id)}", model=Invoice)

    def update(self, id, **fields) -> Invoice:
        return self._call("PATCH", f"{self.path}/{path_id(id)}", body=fields, model=Invoice)

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
        return self._call("POST", f"{self.path}/{path_id(id)}/send", body=fields, model=InvoiceSent)

    def void(self, id, **fields) -> Invoice:
        return self._call("POST", f"{self.path}/{path_id(id)}/void", body=fields, model=Invoice)

    def pdf(self, id) -> bytes:
        """The invoice as PDF bytes."""
        return self._run(self._content("GET", f"{self.path}/{path_id(id)}/pdf"))

    def refund(self, id, payment_id, **fields) -> Model:
        """Refund a payment; optional `amount` (default: everything not yet refunded), `reason`."""
        return self._call("POST", f"{self.path}/{path_id(id)}/payments/{path_id(payment_id)}/refund", body=fields)
