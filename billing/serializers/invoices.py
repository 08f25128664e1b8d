from decimal import Decimal

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from billing.serializers.common import AllOptional, InstantIn
from core.fields import DecimalIn, DecimalNumber, Text, UuidIn
from core.money import CENTS_DIGITS, CENTS_PLACES

HUNDRED = Decimal(100)


def percent_in(source: str, **kwargs) -> DecimalIn:
    return DecimalIn(source=source, min_value=Decimal(0), max_value=HUNDRED, **kwargs)


def cents_in(**kwargs) -> DecimalIn:
    return DecimalIn(max_digits=CENTS_DIGITS, decimal_places=CENTS_PLACES, **kwargs)


class InvoiceSettingsIn(serializers.Serializer):
    """What an operator sets on a draft: a discount (percent of the subtotal and/or a fixed amount) and a tax
    rate (percent of the subtotal after the discount)."""

    discountPercent = percent_in("discount_percent", required=False)
    discountFixed = cents_in(source="discount_fixed", min_value=Decimal(0), required=False)
    taxRate = percent_in("tax_percent", required=False)


class InvoiceGenerateIn(InvoiceSettingsIn):
    customerId = UuidIn(source="customer_id")
    subscriptionId = UuidIn(source="subscription_id")
    billingPeriodStart = InstantIn(source="billing_period_start", required=False)
    billingPeriodEnd = InstantIn(source="billing_period_end", period_end=True, required=False)


class InvoiceUpdateIn(AllOptional, InvoiceSettingsIn):
    invoiceMemo = Text(source="memo", max_length=5000, allow_blank=True)


def one_line(value: str) -> None:
    """An email subject is a header: a line break would end it, and the mail library refuses one."""
    if "\r" in value or "\n" in value:
        raise serializers.ValidationError("Must be one line (no line breaks).")


class InvoiceSendIn(serializers.Serializer):
    recipientEmail = serializers.EmailField(source="recipient_email", max_length=254, required=False)
    subject = Text(max_length=255, required=False, validators=[one_line])
    message = Text(max_length=5000, required=False, allow_blank=True, default="")


class InvoiceVoidIn(serializers.Serializer):
    reason = Text(max_length=500, required=False, allow_blank=True, default="")


class RefundCreateIn(serializers.Serializer):
    amount = cents_in(min_value=Decimal("0.01"), required=False, allow_null=True, default=None)
    reason = Text(max_length=500, required=False, allow_blank=True, default="")


class InvoiceRowOut(serializers.Serializer):
    id = serializers.CharField()
    invoiceNumber = serializers.CharField(source="invoice_number")
    customerId = serializers.UUIDField(source="customer_id")
    customerExternalId = serializers.CharField(source="customer.external_id", allow_null=True)
    subscriptionId = serializers.UUIDField(source="subscription_id")
    status = serializers.CharField()
    total = DecimalNumber()
    amountDue = DecimalNumber(source="amount_due")
    currency = serializers.CharField()
    periodStart = serializers.DateTimeField(source="period_start")
    periodEnd = serializers.DateTimeField(source="period_end")
    issuedAt = serializers.DateTimeField(source="issued_at", allow_null=True)
    dueDate = serializers.DateField(source="due_date", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")


class InvoiceListOut(serializers.Serializer):
    """`GET /v1/invoices`: one window of rows and whether another exists."""

    data = InvoiceRowOut(many=True)
    hasMore = serializers.BooleanField()


class InvoiceLineOut(serializers.Serializer):
    id = serializers.UUIDField()
    chargeType = serializers.CharField(source="charge_type",
                                       help_text="usage, recurring, onetime, seat_based, or prorated (proratedAmount)")
    description = serializers.CharField()
    strategyId = serializers.UUIDField(source="strategy_id", allow_null=True)
    agentId = serializers.UUIDField(source="agent_id", allow_null=True)
    signalId = serializers.UUIDField(source="signal_id", allow_null=True)
    quantity = DecimalNumber(help_text="units or seats billed (after minimumCommitment); 1 for a fee")
    usedQuantity = DecimalNumber(source="used_quantity", allow_null=True,
                                 help_text="usage lines: the period's total from the ledger")
    amount = DecimalNumber(help_text="rounded once to cents, half-up")
    terms = serializers.JSONField(help_text="the strategy's terms this line was priced with")
    proratedDays = serializers.IntegerField(source="prorated_days", allow_null=True,
                                            help_text="days covered, when prorated")
    periodDays = serializers.IntegerField(source="period_days", allow_null=True,
                                          help_text="days in the period, when prorated")


class InvoiceAgentOut(serializers.Serializer):
    agentId = serializers.UUIDField(allow_null=True)
    agentCode = serializers.CharField(allow_null=True)
    agentName = serializers.CharField(allow_null=True)
    amount = DecimalNumber()
    lineCount = serializers.IntegerField()


class RefundOut(serializers.Serializer):
    id = serializers.UUIDField()
    paymentId = serializers.UUIDField(source="payment_id")
    amount = DecimalNumber()
    reason = serializers.CharField()
    providerRefundId = serializers.CharField(source="provider_refund_id", allow_null=True)
    createdAt = serializers.DateTimeField(source="created_at")


class PaymentOut(serializers.Serializer):
    id = serializers.UUIDField()
    amount = DecimalNumber()
    refundedAmount = DecimalNumber(source="refunded_amount")
    status = serializers.CharField(help_text="succeeded, partially_refunded or refunded")
    provider = serializers.CharField(help_text="stripe, or local (the development checkout page)")
    providerPaymentId = serializers.CharField(source="provider_payment_id")
    refunds = RefundOut(many=True)
    createdAt = serializers.DateTimeField(source="created_at")
    receivedOn = serializers.DateField(source="received_on", allow_null=True,
                                       help_text="the day money received outside the provider (a transfer, a cheque) "
                                                 "arrived, as recorded; null for a provider's payment (createdAt)")


class InvoiceOut(InvoiceRowOut):
    totalAmount = DecimalNumber(source="total")
    subtotal = DecimalNumber(help_text="the sum of the rounded lines")
    discountPercent = DecimalNumber(source="discount_percent")
    discountFixed = DecimalNumber(source="discount_fixed")
    discountTotal = DecimalNumber(source="discount", help_text="percent of the subtotal plus the fixed amount, "
                                                               "rounded once, at most the subtotal")
    taxRate = DecimalNumber(source="tax_percent")
    taxTotal = DecimalNumber(source="tax", help_text="taxRate percent of (subtotal - discountTotal), rounded once")
    amountPaid = DecimalNumber(source="amount_paid", help_text="net collected: payments minus refunds")
    amountOverpaid = DecimalNumber(source="amount_overpaid",
                                   help_text="amountPaid beyond the total (paid twice), all of it on a void or "
                                             "refunded invoice: owed back until refunded; amountDue is then 0")
    invoiceMemo = serializers.CharField(source="memo")
    lines = InvoiceLineOut(many=True)
    agentBreakdown = serializers.SerializerMethodField()
    payments = PaymentOut(many=True)
    paidAt = serializers.DateTimeField(source="paid_at", allow_null=True)
    voidedAt = serializers.DateTimeField(source="voided_at", allow_null=True)
    voidReason = serializers.CharField(source="void_reason")
    lastSentAt = serializers.DateTimeField(source="last_sent_at", allow_null=True)
    updatedAt = serializers.DateTimeField(source="updated_at")

    @extend_schema_field(InvoiceAgentOut(many=True))
    def get_agentBreakdown(self, invoice) -> list:
        """Lines summed per agent, in line order."""
        agents: dict = {}
        for line in invoice.lines.all():
            entry = agents.setdefault(line.agent_id, {
                "agentId": line.agent_id, "agentCode": line.agent.agent_code if line.agent else None,
                "agentName": line.agent.name if line.agent else None, "amount": Decimal(0), "lineCount": 0})
            entry["amount"] += line.amount
            entry["lineCount"] += 1
        return InvoiceAgentOut(agents.values(), many=True).data


class InvoiceSendOut(serializers.Serializer):
    success = serializers.BooleanField()
    message = serializers.CharField()
    emailId = serializers.CharField(help_text="the email's Message-ID")
    recipientEmail = serializers.EmailField()
    invoiceNumber = serializers.CharField()
    status = serializers.CharField(help_text="the invoice's status after sending")


class RefundCreatedOut(RefundOut):
    invoiceId = serializers.UUIDField(source="payment.invoice_id")
    invoiceStatus = serializers.CharField(source="payment.invoice.status")
    payment = PaymentOut()


class StripeWebhookOut(serializers.Serializer):
    received = serializers.BooleanField()
    handled = serializers.BooleanField(help_text="false: acknowledged and ignored (see detail)")
    detail = serializers.CharField()
