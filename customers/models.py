"""Customers, agents, signals and the usage ledger.

The ledger (`UsageEvent`) is append-only and the single source of truth: balances, analytics and
invoices are derived from it. An event keeps the names it was recorded with (`agent_code`,
`customer_external_id`, `signal_name`) so it stays readable after a signal is deleted.
"""
import uuid

from django.db import models
from django.db.models import Q

from core import display
from core.exact_json import ExactJSONField
from core.ids import time_ordered_uuid
from core.models import OrgOwned
from core.money import ExactField, QuantityField, SumField

# Usage recorded under this agent code is the operator's own internal coding-agent spend (contract.md);
# its customers are developers, identified by email, and never billed.
CODING_AGENT_CODE = "svc-coding-agent"


class CustomerStatus(models.TextChoices):
    ACTIVE = "active"
    INACTIVE = "inactive"
    SUSPENDED = "suspended"


class Customer(OrgOwned):
    # How a client finds a customer's id from the id it knows, named by a 404 for a path given an external id.
    id_lookup = "GET /v1/customers?externalId={value}"
    # No index on the book alone: the unique (book, external id) and (book, -created) indexes lead with it,
    # and recording's lookup probes the unique one per name, which a lone book index lured the planner from.
    book = models.ForeignKey("accounts.Book", on_delete=models.CASCADE, related_name="+", db_index=False)
    name = models.CharField(max_length=255)
    external_id = models.CharField(max_length=255, null=True, blank=True)
    email = models.EmailField(max_length=255, blank=True)
    phone = models.CharField(max_length=64, blank=True)
    address_line1 = models.CharField("address", max_length=255, blank=True)  # as the portal and the invoice say
    address_line2 = models.CharField(max_length=255, blank=True)
    city = models.CharField(max_length=255, blank=True)
    state = models.CharField("state or region", max_length=255, blank=True)
    zip_code = models.CharField("postal code", max_length=32, blank=True)
    country = models.CharField(max_length=255, blank=True)
    timezone = models.CharField(max_length=64, default="UTC")
    status = models.CharField(max_length=16, choices=CustomerStatus.choices, default=CustomerStatus.ACTIVE)
    billing_contact_name = models.CharField(max_length=255, blank=True)
    billing_contact_email = models.EmailField(max_length=255, blank=True)
    net_terms = models.PositiveIntegerField(default=30, help_text=(
        "The customer's own record of its terms. An invoice's due date comes from its subscription's net terms "
        "(PATCH /v1/subscriptions/{id} with netTerms), which this field does not change."))
    invoice_email_recipients = ExactJSONField(default=list, blank=True)
    metadata = ExactJSONField(default=dict, blank=True)
    # A developer whose internal coding-agent usage was recorded: never billed, never a watch target.
    is_internal = models.BooleanField(default=False)
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["book", "external_id"], condition=Q(deleted_at__isnull=True),
                                    name="customer_external_id_uniq"),
        ]
        indexes = [models.Index(fields=["book", "-created_at"], name="customer_book_created")]

    def __str__(self):
        return self.name


class Agent(OrgOwned):
    id_lookup = "GET /v1/agents?agentCode={value}"
    name = models.CharField(max_length=255)
    agent_code = models.CharField(max_length=255)
    description = models.TextField(blank=True)
    is_active = models.BooleanField(default=True)
    context = ExactJSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["book", "agent_code"], name="agent_code_uniq")]

    def __str__(self):
        return f"{self.name} ({self.agent_code})"


class SignalType(models.TextChoices):
    # Both bill the sum of the recorded quantity (contract: "Signal types bill alike"); the type says what the
    # operator records and how cost is classified.
    USAGE = "usage"  # outcome: results delivered
    VOLUME = "volume"  # activity: attempts, whatever their result


class CostCategory(models.TextChoices):
    """Where a signal's cost lands, sorted by the first event that carries `environment`."""

    PRODUCTION = "production", "Production (Cost of Goods Sold)"
    STAGING = "staging", "Pre-production (Research and Development)"
    DEVELOPMENT = "development", "Development (Research and Development)"
    TESTING = "testing", "Quality assurance (Research and Development)"


class Signal(OrgOwned):
    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="signals")
    name = models.CharField(max_length=255)
    short_name = models.CharField(max_length=255)
    type = models.CharField(max_length=8, choices=SignalType.choices, default=SignalType.USAGE)
    cost_category = models.CharField(max_length=16, choices=CostCategory.choices, null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "name"], name="signal_agent_name_uniq"),
            models.UniqueConstraint(fields=["agent", "short_name"], name="signal_agent_short_name_uniq"),
        ]

    def __str__(self):
        return self.short_name


class EventStatus(models.TextChoices):
    PROCESSED = "PROCESSED", "Priced"  # cost resolved from the catalog
    NEEDS_COST_BACKFILL = "NEEDS_COST_BACKFILL", "Unpriced (model to map)"  # cost null until the model is mapped


class Environment(models.TextChoices):
    PRODUCTION = "production"
    STAGING = "staging"
    DEVELOPMENT = "development"
    TESTING = "testing"


class UsageEvent(OrgOwned):
    """One business outcome delivered by an agent for a customer (append-only).

    The table is partitioned by UTC month of `usage_date` (customers/partitions.py,
    docs/decisions/ledger-partitions.md). PostgreSQL wants the partition key in every unique key of a
    partitioned table, so the database's primary key is (id, usage_date) while Django's model keeps `id`
    alone: ids are UUIDv7s the application draws (core/ids.py), 74 random bits each, so two
    partitions never hold the same id, and a lookup by id alone is still one row (it probes each
    partition's primary-key index). Idempotency keys live in `UsageEventKey`, which is not partitioned.
    """

    # The composite indexes below lead with book and customer: single-column indexes on them would only
    # slow the hot insert path (and tempt the planner away from the idempotency index).
    # No database foreign-key constraints (`db_constraint=False`): recording writes ids that provisioning
    # read or created in the same transaction, and five deferred checks per row at commit are a cost every
    # batch would pay (docs/performance.md has the figures). Deletions still go through Django's on_delete rules
    # below.
    # Time-ordered: the ledger's indexes on the id grow at their right edge (core/ids.py).
    id = models.UUIDField(primary_key=True, default=time_ordered_uuid, editable=False)
    book = models.ForeignKey("accounts.Book", on_delete=models.CASCADE, related_name="+", db_index=False,
                             db_constraint=False)
    raw_event_id = models.UUIDField(default=uuid.uuid4, editable=False)
    customer = models.ForeignKey(Customer, on_delete=models.PROTECT, related_name="events", db_index=False,
                                 db_constraint=False)
    agent = models.ForeignKey(Agent, on_delete=models.SET_NULL, null=True, related_name="events",
                              db_constraint=False)
    # Deleting a signal leaves its events orphaned (signal null), never deleted.
    signal = models.ForeignKey(Signal, on_delete=models.SET_NULL, null=True, related_name="events",
                               db_constraint=False)
    customer_external_id = models.CharField(max_length=255)
    agent_code = models.CharField(max_length=255)
    signal_name = models.CharField(max_length=255)
    # Single-service shape: the resolved service and its usage; multi-service: `services` holds each part.
    model = models.CharField(max_length=255, null=True, blank=True)
    model_provider = models.CharField(max_length=255, null=True, blank=True)
    # No index: catalog entries are never deleted (deactivated instead), and no read selects events by their
    # entry alone (a price override's re-pricing also matches the parts in `services`, which no index holds), so an
    # index would only cost every recorded event its entry (docs/performance.md).
    service = models.ForeignKey("catalog.ServiceEntry", on_delete=models.SET_NULL, null=True, blank=True,
                                related_name="+", db_constraint=False, db_index=False)
    input_tokens = models.BigIntegerField(null=True, blank=True)
    output_tokens = models.BigIntegerField(null=True, blank=True)
    cache_read_tokens = models.BigIntegerField(null=True, blank=True)
    cache_write_tokens = models.BigIntegerField(null=True, blank=True)  # 5-minute cache writes
    cache_write_1h_tokens = models.BigIntegerField(null=True, blank=True)
    # The provider's service tier (`standard`, `batch`, `flex`, `priority`); null: standard. Multi-service events
    # keep each part's in `services`.
    service_tier = models.CharField(max_length=16, null=True, blank=True)
    # True when a batch, flex or priority part had no rate of its tier and was priced at the standard rate.
    priced_at_standard_tier = models.BooleanField(default=False, db_default=False)
    services = ExactJSONField(null=True, blank=True)
    quantity = QuantityField(default=1)
    usage_cost = ExactField(null=True, blank=True)
    event_status = models.CharField(max_length=24, choices=EventStatus.choices, default=EventStatus.PROCESSED)
    usage_date = models.DateTimeField()
    environment = models.CharField(max_length=16, choices=Environment.choices, null=True, blank=True)
    idempotency_key = models.CharField(max_length=255, null=True, blank=True)
    metadata = ExactJSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-usage_date", "-id"]
        # No unique constraint on (book, idempotency_key): on a partitioned table it could only be unique
        # within a month; `UsageEventKey` referees keys across every month.
        indexes = [
            models.Index(fields=["book", "usage_date"], name="usage_event_book_date"),
            models.Index(fields=["customer", "agent", "usage_date"], name="usage_event_cust_agent_date"),
            models.Index(fields=["book", "model"], condition=Q(usage_cost__isnull=True),
                         name="usage_event_unpriced"),
        ]

    def __str__(self):
        return f"{self.signal_name} × {display.quantity(self.quantity)} for {self.customer_external_id}"


class UsageEventKey(models.Model):
    """Which event holds an idempotency key of a book: the referee of replays across every month.

    The ledger cannot carry a unique (book, key) constraint (a partitioned table's unique keys must
    include its partition key, and a replay may name another month), so this table, not partitioned,
    does: recording inserts a batch's keys here with `ON CONFLICT DO NOTHING` in the statement that
    inserts the events, and only the events whose key it stored are inserted (customers/ledger.py). A
    key's row says where its event lives (`event_id`, `usage_date`: the ledger's primary key), so a
    replay reads its original event from one partition. Insert-only; an archived month takes its keys
    with it (customers/partitions.py). No foreign-key checks, as on the ledger itself.
    """

    pk = models.CompositePrimaryKey("book", "idempotency_key")
    book = models.ForeignKey("accounts.Book", on_delete=models.CASCADE, related_name="+", db_index=False,
                             db_constraint=False)
    idempotency_key = models.CharField(max_length=255)
    event_id = models.UUIDField()
    usage_date = models.DateTimeField()

    def __str__(self):
        return f"{self.idempotency_key} -> {self.event_id}"


class RollupBacklog(models.Model):
    """Events recorded but not yet added to the analytics rollup (`customers/rollup.py`).

    Recording inserts a row per new event in the same statement as the event; a catch-up (a debounced
    task after recording, the periodic job, and every analytics read before it reads) deletes the book's
    rows and adds their events to the rollup in one statement, so the rollup plus this backlog always
    equals the ledger. Insert-only and short-lived: no timestamps, no foreign-key checks.
    """

    event = models.OneToOneField(UsageEvent, primary_key=True, on_delete=models.CASCADE, related_name="+",
                                 db_constraint=False)
    book = models.ForeignKey("accounts.Book", on_delete=models.CASCADE, related_name="+", db_constraint=False)
    # The event's usage_date: a catch-up reads the ledger's partitions of the months its events span
    # only. Null on rows written before the ledger was partitioned (the catch-up then reads every month).
    usage_date = models.DateTimeField(null=True)

    def __str__(self):
        return f"pending {self.event_id}"


class ArchivedMonth(models.Model):
    """A UTC month whose events left the ledger (customers/partitions.py `ledger_partition_detach`): what is
    computed from the ledger no longer sees them, so the verifier compares no figure of such a month (a credit
    pool's settled use, a draft's lines), finds a matter attribution's event in the archive's table while it is
    kept, and prunes no attribution once it was dropped. Kept after the archive's table is dropped: its events are
    gone for good then."""

    month = models.DateTimeField(unique=True)  # the month's first instant
    archive = models.CharField(max_length=63)  # the table it became
    rows = models.BigIntegerField()
    detached_at = models.DateTimeField()

    def __str__(self):
        return f"{self.month:%Y-%m} -> {self.archive}"


class RollupGrain(models.IntegerChoices):
    """What a rollup row sums away, as bits: 1 the model, 2 the signal, 4 the customer, 8 the days of a
    month (the row's `day` is then the month's first day). Reads take the smallest grain that still has
    the dimensions they group or filter by, and month rows for the whole months of windows they need not
    split by day."""

    FULL = 0, "day: customer, agent, signal, model"
    NO_MODEL = 1, "day: customer, agent, signal"
    CUSTOMER_AGENT = 3, "day: customer, agent"
    NO_CUSTOMER = 4, "day: agent, signal, model"
    MONTH_FULL = 8, "month: customer, agent, signal, model"
    MONTH_NO_MODEL = 9, "month: customer, agent, signal"
    MONTH_CUSTOMER_AGENT = 11, "month: customer, agent"
    MONTH_NO_CUSTOMER = 12, "month: agent, signal, model"


MONTHLY = 8  # the grain bit of month rows


class UsageDailyRollup(OrgOwned):
    """The ledger summed per UTC day and per UTC month, each at four grains of dimensions (`RollupGrain`):
    what analytics read instead of millions of events. Derived, never edited by hand: `customers/rollup.py`
    keeps it, with `RollupBacklog`, equal to the ledger (all grains in one statement); every read first
    catches the book's backlog up.

    A multi-service event contributes to the row of each model it names: its parts' cost to `model_cost`
    and 1 to `model_event_count` per distinct model; its event-level figures (`event_count`,
    `unpriced_count`, `quantity`, `cost`) go to the row of its first part only, so summing any rows of one
    grain counts each event once (`model_*` are meaningful only at grains that keep the model).
    """

    # Every read and write names the book first, so the key's indexes serve it; no index of its own.
    book = models.ForeignKey("accounts.Book", on_delete=models.CASCADE, related_name="+", db_index=False)
    grain = models.PositiveSmallIntegerField(choices=RollupGrain.choices, default=RollupGrain.FULL)
    day = models.DateField()  # the UTC day of usage_date (month rows: the first day of its month)
    customer = models.ForeignKey(Customer, on_delete=models.DO_NOTHING, null=True, blank=True, db_index=False,
                                 related_name="+")
    # Plain ids, not foreign keys: a deleted agent or signal leaves its id here, and reads treat an id that
    # no longer exists as null, as the ledger's SET_NULL does (so every deletion path keeps it exact).
    agent_id = models.UUIDField(null=True, blank=True)
    signal_id = models.UUIDField(null=True, blank=True)
    # The canonical name of the LLM catalog entry that priced the part; null for non-LLM (isApi) services
    # and for parts not (yet) resolved to the catalog.
    model = models.CharField(max_length=255, null=True, blank=True)
    event_count = models.BigIntegerField(default=0)
    unpriced_count = models.BigIntegerField(default=0)  # events with cost null (NEEDS_COST_BACKFILL)
    # Sums without a bound (`numeric`): a month row, or a day row summing every customer, grows with the
    # ledger, so no per-record maximum could keep it within 16 integer digits (docs/decisions/usage-recording.md
    # "Numeric bounds"); what the data holds can never make the rollup, or an analytics read, fail.
    quantity = SumField(default=0)
    cost = SumField(default=0)  # summed usage_cost; unpriced events add 0
    model_event_count = models.BigIntegerField(default=0)
    model_cost = SumField(default=0)

    class Meta:
        ordering = ["-day"]
        constraints = [
            # NULLS NOT DISTINCT: one row per key even where a dimension is null, so the ingestion upsert
            # (ON CONFLICT on these columns) always finds it.
            models.UniqueConstraint(fields=["book", "grain", "day", "customer", "agent_id", "signal_id", "model"],
                                    nulls_distinct=False, name="usage_rollup_key"),
        ]
        # Few indexes, so that ingestion's upserts stay cheap: the key serves windows (book, grain, day);
        # this one serves customers and the subscription segments. Agent and signal filters read a grain's
        # window and filter it.
        indexes = [models.Index(fields=["book", "grain", "customer", "day"], name="usage_rollup_customer_day")]

    def __str__(self):
        return f"{self.day} {self.get_grain_display()}: {self.event_count:,} event{'' if self.event_count == 1 else 's'}"
