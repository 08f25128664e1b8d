"""Request and response shapes of customers, agents and signals (JSON camelCase, Python snake_case).

Keys inside `metadata` and `context` are stored and returned exactly as sent: no case conversion.
"""

from decimal import Decimal

from rest_framework import serializers

from core.clock import is_valid_timezone
from core.fields import DecimalIn, DecimalText, Flag, JsonObjectIn, QueryFlag, Text, TextOut, UuidIn, refuse_unknown_fields
from customers.models import CustomerStatus, SignalType

NAME_MAX = 255
MAX_INVOICE_RECIPIENTS = 50
MAX_NET_TERMS_DAYS = 365
MAX_BULK_SIGNALS = 100


# --------------------------------------------------------------------------- customers

class CustomerWriteIn(serializers.Serializer):
    """Every customer field a client may send; `name` is required on create (PATCH parses it partial)."""

    name = Text(max_length=NAME_MAX)
    externalId = Text(source="external_id", max_length=255, allow_null=True, required=False)
    email = serializers.EmailField(max_length=255, allow_blank=True, allow_null=True, required=False)
    phone = Text(max_length=64, allow_blank=True, allow_null=True, required=False)
    addressLine1 = Text(source="address_line1", max_length=255, allow_blank=True,
                        allow_null=True, required=False)
    addressLine2 = Text(source="address_line2", max_length=255, allow_blank=True,
                        allow_null=True, required=False)
    city = Text(max_length=255, allow_blank=True, allow_null=True, required=False)
    state = Text(max_length=255, allow_blank=True, allow_null=True, required=False)
    zipCode = Text(source="zip_code", max_length=32, allow_blank=True, allow_null=True,
                   required=False)
    country = Text(max_length=255, allow_blank=True, allow_null=True, required=False)
    timezone = Text(max_length=64, required=False)
    status = serializers.ChoiceField(choices=CustomerStatus.values, required=False)
    billingContactName = Text(source="billing_contact_name", max_length=255, allow_blank=True,
                              allow_null=True, required=False)
    billingContactEmail = serializers.EmailField(source="billing_contact_email", max_length=255,
                                                 allow_blank=True, allow_null=True, required=False)
    netTerms = serializers.IntegerField(source="net_terms", min_value=0, max_value=MAX_NET_TERMS_DAYS,
                                        required=False)
    invoiceEmailRecipients = serializers.ListField(source="invoice_email_recipients",
                                                   child=serializers.EmailField(max_length=255),
                                                   max_length=MAX_INVOICE_RECIPIENTS, required=False)
    metadata = JsonObjectIn(required=False)

    # Optional text columns are NOT NULL in the table: null clears them to "".
    CLEARABLE = ("email", "phone", "address_line1", "address_line2", "city", "state", "zip_code", "country",
                 "billing_contact_name", "billing_contact_email")

    def validate_timezone(self, value):
        if not is_valid_timezone(value):
            raise serializers.ValidationError("Must be an IANA time zone name such as UTC or Europe/Lisbon.")
        return value

    def validate(self, data):
        return {field: ("" if value is None and field in self.CLEARABLE else value)
                for field, value in data.items()}


class CustomerOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    externalId = serializers.CharField(source="external_id", allow_null=True)
    email = TextOut()
    phone = TextOut()
    addressLine1 = TextOut(source="address_line1")
    addressLine2 = TextOut(source="address_line2")
    city = TextOut()
    state = TextOut()
    zipCode = TextOut(source="zip_code")
    country = TextOut()
    timezone = serializers.CharField()
    status = serializers.CharField()
    billingContactName = TextOut(source="billing_contact_name")
    billingContactEmail = TextOut(source="billing_contact_email")
    netTerms = serializers.IntegerField(source="net_terms")
    invoiceEmailRecipients = serializers.ListField(source="invoice_email_recipients", child=serializers.CharField())
    metadata = serializers.JSONField()
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


# --------------------------------------------------------------------------- agents

class AgentWriteIn(serializers.Serializer):
    name = Text(max_length=NAME_MAX)
    agentCode = Text(source="agent_code", max_length=NAME_MAX)
    description = Text(allow_blank=True, allow_null=True, required=False)
    isActive = Flag(source="is_active", required=False)
    context = JsonObjectIn(required=False)

    def validate(self, data):
        if "description" in data and data["description"] is None:
            data["description"] = ""
        return data


class AgentOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    agentCode = serializers.CharField(source="agent_code")
    description = TextOut()
    isActive = serializers.BooleanField(source="is_active")
    context = serializers.JSONField()
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


# --------------------------------------------------------------------------- signals

class SignalFieldsIn(serializers.Serializer):
    """The fields of one signal besides its agent (shared by create, update and bulk items)."""

    name = Text(max_length=NAME_MAX)
    shortName = Text(source="short_name", max_length=NAME_MAX, required=False)
    type = serializers.ChoiceField(choices=SignalType.values, required=False)


class SignalCreateIn(SignalFieldsIn):
    agentId = UuidIn(source="agent_id")


class SignalUpdateIn(SignalFieldsIn):
    # Accepted only so that a client echoing the signal back is not refused; a different agent is a 400.
    agentId = UuidIn(source="agent_id", required=False)


class SignalBulkCreateIn(serializers.Serializer):
    agentId = UuidIn(source="agent_id")
    signals = SignalFieldsIn(many=True, allow_empty=False, max_length=MAX_BULK_SIGNALS)


class SignalOut(serializers.Serializer):
    id = serializers.UUIDField()
    name = serializers.CharField()
    shortName = serializers.CharField(source="short_name")
    type = serializers.CharField()
    agentId = UuidIn(source="agent_id")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class UsageEventOut(serializers.Serializer):
    """A row of `GET /v1/events`: `usageCost` and `quantity` are decimal strings (spec §2)."""

    id = serializers.UUIDField()
    rawEventId = serializers.UUIDField(source="raw_event_id")
    customerId = serializers.UUIDField(source="customer_id")
    customerExternalId = serializers.CharField(source="customer_external_id")
    agentId = serializers.UUIDField(source="agent_id", allow_null=True)
    agentCode = serializers.CharField(source="agent_code")
    signalId = serializers.UUIDField(source="signal_id", allow_null=True)
    signalName = serializers.CharField(source="signal_name")
    model = serializers.CharField(allow_null=True)
    modelProvider = serializers.CharField(source="model_provider", allow_null=True)
    serviceId = serializers.UUIDField(source="service_id", allow_null=True)
    services = serializers.JSONField(allow_null=True)
    inputTokens = serializers.IntegerField(source="input_tokens", allow_null=True)
    outputTokens = serializers.IntegerField(source="output_tokens", allow_null=True)
    cacheReadTokens = serializers.IntegerField(source="cache_read_tokens", allow_null=True)
    cacheWriteTokens = serializers.IntegerField(source="cache_write_tokens", allow_null=True)
    cacheWrite1hTokens = serializers.IntegerField(source="cache_write_1h_tokens", allow_null=True)
    serviceTier = serializers.SerializerMethodField(help_text="standard, batch, flex or priority")
    pricedAtStandardTier = serializers.BooleanField(
        source="priced_at_standard_tier",
        help_text="true when a batch, flex or priority service had no rate of its tier (in the price data or the "
                  "provider's published discount) and was priced at the standard rate")
    quantity = DecimalText()
    usageCost = DecimalText(source="usage_cost", allow_null=True)
    eventStatus = serializers.CharField(source="event_status")
    usageDate = serializers.DateTimeField(source="usage_date")
    environment = serializers.CharField(allow_null=True)
    idempotencyKey = serializers.CharField(source="idempotency_key", allow_null=True)
    metadata = serializers.JSONField()
    createdAt = serializers.DateTimeField(source="created_at")

    def get_serviceTier(self, event) -> str | None:
        if event.services is not None:
            return None  # each part of a multi-service event says its own, in `services`
        return event.service_tier or "standard"


class UsageExportQueryIn(serializers.Serializer):
    """The export's own query parameters; its filters are those of `GET /v1/events`."""

    format = serializers.ChoiceField(choices=["csv", "jsonl"], default="csv")
    gzip = QueryFlag(required=False, default=False)


class ModelMapIn(serializers.Serializer):
    model = Text(max_length=255, help_text="the unknown model name, as events send it")
    modelProvider = Text(source="model_provider", max_length=100)
    serviceId = UuidIn(source="service_id", help_text="an active catalog entry")


class ModelAliasOut(serializers.Serializer):
    id = serializers.UUIDField()
    model = serializers.CharField()
    modelProvider = serializers.CharField(source="model_provider")
    serviceId = serializers.UUIDField(source="service_id")
    serviceCanonicalName = serializers.CharField(source="service.canonical_name")
    serviceProvider = serializers.CharField(source="service.provider")
    createdAt = serializers.DateTimeField(source="created_at")
    updatedAt = serializers.DateTimeField(source="updated_at")


class BackfillOut(serializers.Serializer):
    eventsWaiting = serializers.IntegerField(source="events_waiting")
    eventsPriced = serializers.IntegerField(source="events_priced")
    scheduled = serializers.BooleanField()


class ModelMapOut(serializers.Serializer):
    mapping = ModelAliasOut(source="alias")
    created = serializers.BooleanField()
    backfill = BackfillOut(source="*")
    jobId = serializers.UUIDField(source="job.pk", help_text="The backfill as a job (GET /v1/jobs/{id}): succeeded "
                                                             "when it ran inline, queued when it runs in the "
                                                             "background.")


RATE_HELP = "USD per token (exact decimal), replacing the catalog's rate flat (long context, off-peak, tiers)"


def _rate(source: str, help_text: str = RATE_HELP):
    return DecimalIn(source=source, max_digits=40, decimal_places=30, min_value=Decimal(0), required=False,
                     allow_null=True, default=None, help_text=help_text)


class PriceOverrideIn(serializers.Serializer):
    """One of: `serviceId` (a catalog entry), `model` + `modelProvider` (a model the catalog lacks), or
    `modelProvider` + `discountPercent` (a percentage off that provider's list prices)."""

    serviceId = UuidIn(source="service_id", required=False, allow_null=True, default=None)
    model = Text(max_length=255, required=False, allow_null=True, default=None)
    modelProvider = Text(source="model_provider", max_length=100, required=False, allow_null=True,
                         default=None)
    discountPercent = DecimalIn(source="discount_percent", min_value=Decimal(0),
                                max_value=Decimal(100), required=False, allow_null=True, default=None,
                                help_text="percent off the provider's list prices (20 = 20% off)")
    inputCost = _rate("input_cost")
    outputCost = _rate("output_cost")
    cacheReadCost = _rate("cache_read_cost")
    cacheWriteCost = _rate("cache_write_cost", "USD per 5-minute cache-write token")
    cacheWrite1hCost = _rate("cache_write_1h_cost", "USD per 1-hour cache-write token")
    unitCost = _rate("unit_cost", "USD per unit of the event's quantity (instead of token rates)")
    effectiveFrom = serializers.DateTimeField(source="effective_from", required=False, allow_null=True, default=None,
                                              help_text="events dated at or after it are priced with the override; "
                                                        "omitted or null: events of every date")
    note = Text(max_length=2000, required=False, allow_blank=True, default="")

    def validate(self, attrs):
        # A misspelled `effectiveDate` ignored would leave the override in effect for every date, re-pricing the
        # book's whole history; a misspelled rate would leave it unset.
        refuse_unknown_fields(self)
        return attrs


class PriceOverrideOut(serializers.Serializer):
    id = serializers.UUIDField()
    serviceId = serializers.UUIDField(source="service_id", allow_null=True)
    serviceCanonicalName = serializers.CharField(source="service.canonical_name", allow_null=True, default=None)
    model = serializers.SerializerMethodField()
    modelProvider = serializers.SerializerMethodField()
    discountPercent = DecimalText(source="discount_percent", allow_null=True)
    inputCost = DecimalText(source="input_cost", allow_null=True)
    outputCost = DecimalText(source="output_cost", allow_null=True)
    cacheReadCost = DecimalText(source="cache_read_cost", allow_null=True)
    cacheWriteCost = DecimalText(source="cache_write_cost", allow_null=True)
    cacheWrite1hCost = DecimalText(source="cache_write_1h_cost", allow_null=True)
    unitCost = DecimalText(source="unit_cost", allow_null=True)
    effectiveFrom = serializers.DateTimeField(source="effective_from", allow_null=True,
                                              help_text="null: in effect for events of every date")
    note = serializers.CharField()
    createdBy = serializers.CharField(source="created_by")
    createdAt = serializers.DateTimeField(source="created_at")

    def get_model(self, override) -> str | None:
        return override.service.canonical_name if override.service_id else override.model

    def get_modelProvider(self, override) -> str | None:
        return override.service.provider if override.service_id else override.model_provider


class PriceOverrideChangeOut(PriceOverrideOut):
    """The override, and the repricing of the events it touches as a job."""

    eventsAffected = serializers.IntegerField(source="change.events_affected")
    eventsRepriced = serializers.IntegerField(source="change.events_repriced",
                                              help_text="events whose cost changed (0 while the job runs)")
    scheduled = serializers.BooleanField(source="change.scheduled")
    jobId = serializers.UUIDField(source="change.job.pk", help_text="The repricing as a job (GET /v1/jobs/{id})")
