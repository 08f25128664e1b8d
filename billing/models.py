"""Pricing plans, their strategies and subscriptions (invoices and credit pools build on these)."""
from django.db import models
from django.db.models import Q

from core import display
from core.exact_json import ExactJSONField
from core.models import OrgOwned
from core.money import ZERO, CentsField, QuantityField, SumField, TermField


class PricingPlan(OrgOwned):
    name = models.CharField(max_length=255)
    description = models.CharField(max_length=255, blank=True)
    features_list = ExactJSONField(default=dict, blank=True)
    is_active = models.BooleanField(default=True)
    agents = models.ManyToManyField("customers.Agent", through="PlanAgent", related_name="plans")

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.name


class PlanAgent(OrgOwned):
    """A plan linked to an agent. An agent with linked plans cannot be deleted."""

    plan = models.ForeignKey(PricingPlan, on_delete=models.CASCADE, related_name="agent_links")
    agent = models.ForeignKey("customers.Agent", on_delete=models.PROTECT, related_name="plan_links")

    class Meta:
        ordering = ["created_at"]
        constraints = [models.UniqueConstraint(fields=["plan", "agent"], name="plan_agent_uniq")]

    def __str__(self):
        return f"{self.plan} sold to {self.agent}"


# Labels as the console and its exports write them (the API writes the values).
class ChargeType(models.TextChoices):
    USAGE = "usage", "Usage"
    RECURRING = "recurring", "Recurring fee"
    ONETIME = "onetime", "One-time fee"
    SEAT_BASED = "seat_based", "Per seat"


class PricingModel(models.TextChoices):
    FLAT = "flat", "Flat rate"
    GRADUATED = "graduated", "Graduated"
    VOLUME = "volume", "Volume"
    CREDIT_POOL = "credit_pool", "Credit pool"


class BillingFrequency(models.TextChoices):
    MONTHLY = "monthly"
    YEARLY = "yearly"


class PricingStrategy(OrgOwned):
    plan = models.ForeignKey(PricingPlan, on_delete=models.CASCADE, related_name="strategies")
    agent = models.ForeignKey("customers.Agent", on_delete=models.PROTECT, related_name="strategies")
    name = models.CharField(max_length=255)
    charge_type = models.CharField(max_length=16, choices=ChargeType.choices)
    signal = models.ForeignKey("customers.Signal", on_delete=models.PROTECT, null=True, blank=True,
                               related_name="strategies")
    pricing_model = models.CharField(max_length=16, choices=PricingModel.choices, null=True, blank=True)
    billing_frequency = models.CharField(max_length=8, choices=BillingFrequency.choices,
                                         default=BillingFrequency.MONTHLY)
    # [{"lower": "0", "upper": "100" | null, "rate": "0.10"}], decimals kept as strings (exact).
    tiers = ExactJSONField(default=list, blank=True)
    rate = TermField(null=True, blank=True)
    minimum_commitment = TermField(null=True, blank=True)
    active = models.BooleanField(default=True)
    tags = ExactJSONField(default=list, blank=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        verbose_name_plural = "pricing strategies"

    def __str__(self):
        return f"{self.name} ({self.charge_type})"


class SubscriptionStatus(models.TextChoices):
    UPCOMING = "upcoming"
    ACTIVE = "active"
    ENDED = "ended"


class BillingCycle(models.TextChoices):
    MONTHLY = "monthly"
    YEARLY = "yearly"
    CUSTOM = "custom"


class BillingModel(models.TextChoices):
    SUBSCRIPTION = "subscription"
    USAGE = "usage"
    HYBRID = "hybrid"


class Subscription(OrgOwned):
    name = models.CharField(max_length=255)
    plan = models.ForeignKey(PricingPlan, on_delete=models.PROTECT, related_name="subscriptions")
    agent = models.ForeignKey("customers.Agent", on_delete=models.PROTECT, related_name="subscriptions")
    customer = models.ForeignKey("customers.Customer", on_delete=models.PROTECT, related_name="subscriptions")
    start_date = models.DateTimeField()
    status = models.CharField(max_length=16, choices=SubscriptionStatus.choices, default=SubscriptionStatus.UPCOMING)
    billing_cycle = models.CharField(max_length=8, choices=BillingCycle.choices, default=BillingCycle.MONTHLY)
    billing_model = models.CharField(max_length=16, choices=BillingModel.choices, default=BillingModel.SUBSCRIPTION)
    net_terms = models.PositiveIntegerField(default=30)
    end_date = models.DateTimeField(null=True, blank=True)
    is_forever = models.BooleanField(default=False)
    subscription_details = ExactJSONField(default=dict, blank=True)
    seats_count = models.PositiveIntegerField(default=0)
    custom_cycle_days = models.PositiveIntegerField(null=True, blank=True)
    prorated_amount = TermField(null=True, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    billing_day = models.PositiveSmallIntegerField(null=True, blank=True)
    invoice_memo = models.TextField(blank=True)
    metadata = ExactJSONField(default=dict, blank=True)
    # The stored current billing period [start, end); null until the subscription gets its first period.
    # Rolled forward by the scheduled job; a read outside it is a gap between periods.
    current_period_start = models.DateTimeField(null=True, blank=True)
    current_period_end = models.DateTimeField(null=True, blank=True)
    # Credit-pool alert emails are silenced while true; the countdown keeps counting.
    pool_alerts_paused = models.BooleanField(default=False)
    # A plan change ends this subscription at its endDate and starts `next_subscription` at that instant;
    # the new one names `previous_subscription`. One change per side (one-to-one): the database referees it.
    previous_subscription = models.OneToOneField("self", on_delete=models.PROTECT, null=True, blank=True,
                                                 related_name="+")
    next_subscription = models.OneToOneField("self", on_delete=models.SET_NULL, null=True, blank=True,
                                             related_name="+")
    # The instant whose calendar the billing periods follow (the month of a yearly cycle, the first day of a
    # custom one, the default billing day); null: startDate. A plan change keeps the old subscription's grid.
    cycle_anchor = models.DateTimeField(null=True, blank=True)
    # Where the current billingDay and timezone took effect (the end of the period they were changed in: the period
    # after it runs from there to the first turn of the new rules); null: the subscription's own start. A plan change
    # keeps it.
    period_rules_since = models.DateTimeField(null=True, blank=True)
    # The billingDay and timezone in force before each such change, oldest first, each until the instant the next
    # rules took effect: [{"until", "billingDay", "timezone", "since"}] (instants as ISO text, `since` that rules'
    # own period_rules_since). Periods before period_rules_since are measured on the grid they were billed on.
    earlier_period_rules = ExactJSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(billing_day__isnull=True) | Q(billing_day__gte=1, billing_day__lte=31),
                                   name="subscription_billing_day_range"),
        ]
        indexes = [
            models.Index(fields=["book", "status"], name="subscription_book_status"),
            models.Index(fields=["customer", "agent"], name="subscription_customer_agent"),
            # The scheduled job looks up due transitions and period rollovers across books.
            models.Index(fields=["status", "current_period_end"], name="subscription_status_period_end"),
        ]

    def __str__(self):
        return self.name


class SubscriptionChange(OrgOwned):
    """The changelog of a subscription: plan changes, price updates, date adjustments, status transitions."""

    class Kind(models.TextChoices):
        CREATED = "created"
        PLAN_CHANGE = "plan_change"
        PRICE_UPDATE = "price_update"
        DATE_ADJUSTMENT = "date_adjustment"
        STATUS_TRANSITION = "status_transition"
        UPDATE = "update"

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="changes")
    kind = models.CharField(max_length=24, choices=Kind.choices)
    # The pricing strategy a price_update entry is about (strategies are soft-deleted, so it stays readable).
    strategy = models.ForeignKey(PricingStrategy, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="subscription_changes")
    summary = models.CharField(max_length=500)
    changes = ExactJSONField(default=dict, blank=True, help_text="{field: {before, after}}")
    actor = models.CharField(max_length=255, blank=True, help_text="api-key:<id>, user:<id> or system")

    class Meta:
        ordering = ["created_at"]

    def __str__(self):
        return self.summary


# --------------------------------------------------------------------------- invoices

class InvoiceStatus(models.TextChoices):
    DRAFT = "draft"
    PENDING = "pending"  # finalized, its email on the way; issued once the email backend accepts it
    ISSUED = "issued"
    PAID = "paid"
    OVERDUE = "overdue"
    VOID = "void"
    REFUNDED = "refunded"


# Statuses with nothing left to collect (`Invoice.amount_due` is 0).
SETTLED = (InvoiceStatus.PAID, InvoiceStatus.REFUNDED, InvoiceStatus.VOID)
# Sent and not settled: waiting for payment (what the customer owes).
PAYABLE = (InvoiceStatus.PENDING, InvoiceStatus.ISSUED, InvoiceStatus.OVERDUE)


class InvoiceCounter(OrgOwned):
    """The last invoice number handed out in a book; locked while the next one is taken."""

    last_number = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["book"], name="invoice_counter_book_uniq")]


class Invoice(OrgOwned):
    """What a subscription is charged for one period [period_start, period_end). The pricing terms are
    captured when the invoice is first generated and never change; a draft's usage is refreshed by
    regenerating it (and by the end-of-period job before it issues); finalizing freezes it for good."""

    customer = models.ForeignKey("customers.Customer", on_delete=models.PROTECT, related_name="invoices")
    subscription = models.ForeignKey(Subscription, on_delete=models.PROTECT, related_name="invoices")
    status = models.CharField(max_length=16, choices=InvoiceStatus.choices, default=InvoiceStatus.DRAFT)
    invoice_number = models.CharField(max_length=32)
    currency = models.CharField(max_length=3, default="usd")
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    # Settings an operator may change on a draft: percent and fixed discount, tax percent.
    discount_percent = TermField(default=0)
    discount_fixed = CentsField(default=0)
    tax_percent = TermField(default=0)
    memo = models.TextField(blank=True)
    # The plan's strategies, seats and proratedAmount as they were at the first generation
    # (billing.pricing.terms.PlanTerms.document): what every later pricing of this invoice uses.
    pricing_terms = ExactJSONField(null=True, blank=True)
    # When the lines last read the ledger (generation and every refresh; not a PATCH of a discount or memo, which
    # re-totals the lines as they are): the ledger verifier tells a stale draft from a drifted one by it.
    usage_read_at = models.DateTimeField(null=True, blank=True)
    # What its usage lines counted, as claims (billing.pricing.lines.claims_document): which agent's events on which
    # signal in which instants, written with the lines. Once the invoice is final, those events stay its own, whatever
    # subscription is created or strategy added later (billing.pricing.attribution). Null: stored before this field.
    billed_claims = ExactJSONField(null=True, blank=True)
    # Who it is from and to as it was issued (billing.invoice_documents.parties_document): an issued invoice reads
    # the same whatever the seller's or the customer's billing profile becomes. Null: a draft, or issued before this.
    parties = ExactJSONField(null=True, blank=True)
    subtotal = CentsField(default=0)
    discount = CentsField(default=0)
    tax = CentsField(default=0)
    total = CentsField(default=0)
    # Net of refunds; paid in full when it reaches the total.
    amount_paid = CentsField(default=0)
    issued_at = models.DateTimeField(null=True, blank=True)
    due_date = models.DateField(null=True, blank=True)
    # The first instant after the due date in the subscription's time zone: unpaid from then on is overdue.
    overdue_at = models.DateTimeField(null=True, blank=True)
    paid_at = models.DateTimeField(null=True, blank=True)
    voided_at = models.DateTimeField(null=True, blank=True)
    void_reason = models.CharField(max_length=500, blank=True)
    last_sent_at = models.DateTimeField(null=True, blank=True)
    # SHA-256 of the pay-now token of the latest invoice email; the raw token exists only in that email.
    pay_token_digest = models.CharField(max_length=64, null=True, blank=True)
    # The pay-now token is derived from this nonce and SECRET_KEY (billing.pay_links.pay_token_of), so a resend
    # can reuse the link it sent before; a rotated key retires the old link, and a void keeps it, to open the
    # invoice's voided page.
    pay_token_nonce = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["book", "invoice_number"], name="invoice_number_uniq"),
            # One live invoice per subscription and period: concurrent generates cannot both insert.
            models.UniqueConstraint(fields=["subscription", "period_start", "period_end"],
                                    condition=~Q(status="void"), name="invoice_subscription_period_uniq"),
            models.UniqueConstraint(fields=["pay_token_digest"], condition=Q(pay_token_digest__isnull=False),
                                    name="invoice_pay_token_uniq"),
            models.CheckConstraint(condition=Q(period_end__gt=models.F("period_start")),
                                   name="invoice_period_ascends"),
            models.CheckConstraint(condition=Q(discount_percent__gte=0, discount_percent__lte=100,
                                               tax_percent__gte=0, tax_percent__lte=100, discount_fixed__gte=0),
                                   name="invoice_settings_range"),
        ]
        indexes = [
            models.Index(fields=["book", "-created_at"], name="invoice_book_created"),
            models.Index(fields=["book", "status"], name="invoice_book_status"),
            # The scheduled jobs look across books for drafts whose period ended and unpaid issued invoices.
            models.Index(fields=["status", "period_end"], name="invoice_status_period_end"),
            models.Index(fields=["status", "overdue_at"], name="invoice_status_overdue_at"),
        ]

    def __str__(self):
        return self.invoice_number

    @property
    def amount_due(self):
        """What is still to collect; never below zero (Decimal ZERO, not the int 0 the API cannot render). Nothing
        once the invoice is paid, refunded or void: a refund gives money back, it does not make the customer owe it
        again (a partly refunded invoice stays `paid`, its net collected reduced; a wholly refunded one counts as
        neither billed nor collected)."""
        if self.status in SETTLED:
            return ZERO
        return max(self.total - self.amount_paid, ZERO)

    @property
    def amount_overpaid(self):
        """Net collected beyond the total (paid twice, say): owed back until the surplus is refunded. On a void or a
        refunded invoice all of it: it owes nothing, so a payment that reached it afterwards (a checkout opened
        before the void, a second tab) is owed back whole."""
        if self.status in (InvoiceStatus.VOID, InvoiceStatus.REFUNDED):
            return max(self.amount_paid, ZERO)
        return max(self.amount_paid - self.total, ZERO)


class InvoiceLine(OrgOwned):
    """One charge of an invoice (per strategy and signal), rounded once to cents half-up when written."""

    invoice = models.ForeignKey(Invoice, on_delete=models.CASCADE, related_name="lines")
    position = models.PositiveSmallIntegerField()  # a plan holds at most MOST_STRATEGIES_PER_PLAN strategies
    charge_type = models.CharField(max_length=16)  # a ChargeType, or `prorated` (a subscription's proratedAmount)
    strategy = models.ForeignKey(PricingStrategy, on_delete=models.SET_NULL, null=True, blank=True,
                                 related_name="invoice_lines")
    agent = models.ForeignKey("customers.Agent", on_delete=models.SET_NULL, null=True, blank=True,
                              related_name="invoice_lines")
    signal = models.ForeignKey("customers.Signal", on_delete=models.SET_NULL, null=True, blank=True,
                               related_name="invoice_lines")
    description = models.CharField(max_length=500)
    # Units, seats or 1 for a fee, after the minimum commitment; `used_quantity` is what the ledger counted.
    quantity = QuantityField()
    used_quantity = QuantityField(null=True, blank=True)
    amount = CentsField()
    # The strategy's terms as priced (camelCase, as the API renders them): later edits never re-price it.
    terms = ExactJSONField(default=dict, blank=True)
    prorated_days = models.PositiveIntegerField(null=True, blank=True)
    period_days = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        ordering = ["invoice", "position"]
        constraints = [models.UniqueConstraint(fields=["invoice", "position"], name="invoice_line_position_uniq")]

    def __str__(self):
        return self.description


class PaymentStatus(models.TextChoices):
    SUCCEEDED = "succeeded"
    PARTIALLY_REFUNDED = "partially_refunded"
    REFUNDED = "refunded"


class Payment(OrgOwned):
    """Money received for an invoice. The provider's payment id is unique per book: a replayed notification
    finds the payment it already recorded."""

    invoice = models.ForeignKey(Invoice, on_delete=models.PROTECT, related_name="payments")
    amount = CentsField()
    refunded_amount = CentsField(default=0)
    status = models.CharField(max_length=24, choices=PaymentStatus.choices, default=PaymentStatus.SUCCEEDED)
    provider = models.CharField(max_length=16)  # stripe | local (the development checkout page)
    provider_payment_id = models.CharField(max_length=255)
    # The day money received outside the provider (a transfer, a cheque) arrived, as the operator recorded it:
    # recorded on December 2, a wire of November 30 reconciles with November's bank statement. Null for a
    # provider's payment, received when it was recorded (`created_at`).
    received_on = models.DateField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["book", "provider_payment_id"], name="payment_provider_id_uniq"),
            models.CheckConstraint(condition=Q(amount__gt=0, refunded_amount__gte=0,
                                               refunded_amount__lte=models.F("amount")),
                                   name="payment_refunds_within_amount"),
        ]

    def __str__(self):
        return f"{display.money(self.amount)} by {self.provider} ({self.provider_payment_id})"

    @property
    def refundable(self):
        return self.amount - self.refunded_amount


class Refund(OrgOwned):
    payment = models.ForeignKey(Payment, on_delete=models.PROTECT, related_name="refunds")
    amount = CentsField()
    provider_refund_id = models.CharField(max_length=255, null=True, blank=True)
    reason = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["book", "provider_refund_id"],
                                    condition=Q(provider_refund_id__isnull=False), name="refund_provider_id_uniq"),
            models.CheckConstraint(condition=Q(amount__gt=0), name="refund_amount_positive"),
        ]

    def __str__(self):
        return f"Refund of {display.money(self.amount)}"


class CreditGrant(OrgOwned):
    """Units a credit pool may draw: one period grant per subscription and billing period (the refill), and
    top-ups bought on top (never expire). Within a period the period grant is drawn first, top-ups after, oldest
    first; see docs/decisions/credit-pools.md for the bookkeeping."""

    class Kind(models.TextChoices):
        PERIOD = "period"
        TOPUP = "topup", "top-up"

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="credit_grants")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # A period grant: the pool size; a top-up: the units added.
    units = TermField()
    # Period grants: the billing period [start, end) they refill, and once it has ended, what it drew from the
    # ledger and how many of those units were beyond the pool and came out of top-ups (settled once).
    period_start = models.DateTimeField(null=True, blank=True)
    period_end = models.DateTimeField(null=True, blank=True)
    consumed_units = QuantityField(null=True, blank=True)
    topup_units_drawn = QuantityField(null=True, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)
    # Top-ups: when the units became drawable (the service's clock), the caller's replay key, note and author.
    granted_at = models.DateTimeField(null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    note = models.CharField(max_length=1000, blank=True)
    created_by = models.CharField(max_length=255, blank=True, help_text="api-key:<id> or user:<id>")

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["book", "idempotency_key"], condition=Q(idempotency_key__isnull=False),
                                    name="credit_grant_idem_uniq"),
            models.UniqueConstraint(fields=["subscription", "period_start"], condition=Q(kind="period"),
                                    name="credit_grant_period_uniq"),
            models.CheckConstraint(
                condition=Q(kind="period", period_start__isnull=False, period_end__isnull=False)
                | Q(kind="topup", units__gt=0, granted_at__isnull=False, idempotency_key__isnull=False),
                name="credit_grant_kind_fields"),
        ]
        indexes = [models.Index(fields=["subscription", "kind", "period_start"], name="credit_grant_sub_kind")]

    def __str__(self):
        if self.kind == self.Kind.PERIOD:
            return f"Pool of {display.quantity(self.units)} units for {display.day(self.period_start)}"
        return f"Top-up of {display.quantity(self.units)} units"


class CreditPoolAlert(OrgOwned):
    """The record that a pool alert stage was passed in one billing period: inserted once (the unique constraint
    referees), then emailed on commit unless it was silenced or superseded."""

    class Stage(models.IntegerChoices):
        HALF = 50, "50% used"
        EIGHTY = 80, "80% used"
        NINETY_FIVE = 95, "95% used"
        EMPTY = 100, "empty"

    class Outcome(models.TextChoices):
        EMAILED = "emailed"
        PAUSED = "paused", "passed while alerts were paused"
        SUPERSEDED = "superseded", "passed together with a higher stage"

    subscription = models.ForeignKey(Subscription, on_delete=models.CASCADE, related_name="pool_alerts")
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    stage = models.PositiveSmallIntegerField(choices=Stage.choices)
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    used_percent = SumField()  # usage may overdraw a pool by any amount: no bound (docs/decisions/usage-recording.md)
    remaining_units = QuantityField()
    recipients = ExactJSONField(default=list, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["subscription", "period_start", "stage"],
                                               name="credit_pool_alert_stage_uniq")]

    def __str__(self):
        return f"{self.get_stage_display()} ({self.outcome})"
