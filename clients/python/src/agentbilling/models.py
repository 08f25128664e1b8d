"""The typed answers of the /v1 API, one class per object the service sends (spec §2).

Each is the answer's own dict (index it as the API names fields: `invoice["totalAmount"]`) with the declared
fields as snake_case attributes: money, rates and quantities `Decimal` (exact, never a float), instants
`datetime`, days `date`, nested objects models of their own. Fields not declared here stay in the dict.
See `agentbilling._models`.
"""
from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from agentbilling._models import Model

__all__ = [
    "Agent", "CatalogService", "CreditAlertsPause", "CreditBalance", "CreditBalanceList", "CreditTopup",
    "Customer", "CustomerAlert", "Invoice", "InvoiceLine", "InvoiceRow", "InvoiceSent", "Job", "KeyInfo",
    "Matter", "MatterRule", "Model", "Payment", "PortalSession", "PricingPlan", "PricingStrategy", "RecordFailureEntry",
    "RecordSuccess", "Refund", "Signal", "SpendCap", "Subscription", "Tier", "UsageEvent", "UsageRecordResults",
    "UsageRecordResponse", "Verification", "WebhookEndpoint",
]


# -- usage and events

class RecordSuccess(Model):
    index: int
    customer_external_id: str
    agent_code: str
    signal_name: str
    model: str
    model_provider: str
    total_cost_usd: Decimal  # a decimal string in the answer
    event_id: str
    raw_event_id: str
    timestamp: datetime
    replayed: bool


class RecordFailureEntry(Model):
    index: int
    code: str
    message: Any
    stored: bool
    event_id: str


class UsageRecordResults(Model):
    success: list[RecordSuccess]
    failed: list[RecordFailureEntry]


class UsageRecordResponse(Model):
    processed: int
    successful: int
    failed: int
    results: UsageRecordResults


class UsageEvent(Model):
    """A row of `GET /v1/events`; `quantity` and `usageCost` are decimal strings in the answer."""
    id: str
    raw_event_id: str
    customer_id: str
    customer_external_id: str
    agent_id: str
    agent_code: str
    signal_id: str
    signal_name: str
    model: str
    model_provider: str
    service_id: str
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cache_write1h_tokens: int
    service_tier: str
    quantity: Decimal
    usage_cost: Decimal
    event_status: str
    usage_date: datetime
    environment: str
    idempotency_key: str
    metadata: dict
    created_at: datetime


# -- customers, agents, signals

class Customer(Model):
    id: str
    name: str
    external_id: str
    email: str
    phone: str
    status: str
    timezone: str
    net_terms: int
    billing_contact_name: str
    billing_contact_email: str
    invoice_email_recipients: list[str]
    metadata: dict
    created_at: datetime


class Agent(Model):
    id: str
    name: str
    agent_code: str
    description: str
    is_active: bool
    context: dict
    created_at: datetime


class Signal(Model):
    id: str
    name: str
    short_name: str
    type: str
    agent_id: str
    created_at: datetime


# -- plans, strategies, subscriptions

class Tier(Model):
    lower: Decimal
    upper: Decimal | None
    rate: Decimal


class PricingStrategy(Model):
    id: str
    name: str
    agent_id: str
    charge_type: str
    signal_id: str
    pricing_model: str
    billing_frequency: str
    tiers: list[Tier]
    rate: Decimal
    minimum_commitment: Decimal
    active: bool
    tags: list[str]
    deleted_at: datetime


class PricingPlan(Model):
    id: str
    name: str
    description: str
    features_list: dict
    is_active: bool
    agents: list[dict]
    created_at: datetime


class Subscription(Model):
    id: str
    name: str
    plan_id: str
    agent_id: str
    customer_id: str
    start_date: date
    end_date: date
    status: str
    billing_cycle: str
    billing_model: str
    net_terms: int
    is_forever: bool
    subscription_details: dict
    seats_count: int
    custom_cycle_days: int
    prorated_amount: Decimal
    timezone: str
    billing_day: int
    invoice_memo: str
    metadata: dict
    previous_subscription_id: str
    next_subscription_id: str
    created_at: datetime


# -- invoices

class InvoiceRow(Model):
    """A row of `GET /v1/invoices`."""
    id: str
    invoice_number: str
    customer_id: str
    customer_external_id: str
    subscription_id: str
    status: str
    total: Decimal
    amount_due: Decimal
    currency: str
    period_start: datetime
    period_end: datetime
    issued_at: datetime
    due_date: date
    created_at: datetime


class InvoiceLine(Model):
    id: str
    charge_type: str
    description: str
    strategy_id: str
    agent_id: str
    signal_id: str
    quantity: Decimal
    used_quantity: Decimal
    amount: Decimal
    terms: dict
    prorated_days: int
    period_days: int


class Refund(Model):
    id: str
    payment_id: str
    amount: Decimal
    reason: str
    provider_refund_id: str
    created_at: datetime


class Payment(Model):
    id: str
    amount: Decimal
    refunded_amount: Decimal
    status: str
    provider: str
    provider_payment_id: str
    refunds: list[Refund]
    created_at: datetime


class Invoice(InvoiceRow):
    total_amount: Decimal
    subtotal: Decimal
    discount_percent: Decimal
    discount_fixed: Decimal
    discount_total: Decimal
    tax_rate: Decimal
    tax_total: Decimal
    amount_paid: Decimal
    amount_overpaid: Decimal
    invoice_memo: str
    lines: list[InvoiceLine]
    agent_breakdown: list[dict]
    payments: list[Payment]
    paid_at: datetime
    voided_at: datetime
    void_reason: str
    last_sent_at: datetime
    updated_at: datetime


class InvoiceSent(Model):
    success: bool
    message: str
    email_id: str
    recipient_email: str
    invoice_number: str
    status: str


# -- credit pools

class CreditBalance(Model):
    subscription_id: str
    subscription_name: str
    customer_id: str
    customer_name: str
    customer_external_id: str
    agent_id: str
    plan_id: str
    plan_name: str
    pool_size_units: Decimal
    consumed_units: Decimal
    remaining_units: Decimal
    overage_in_progress_units: Decimal
    remaining_percent: Decimal
    overage_rate_per_unit: Decimal
    period_start: datetime
    period_end: datetime
    alerts_paused: bool
    no_active_period: bool
    implicit_full_pool: bool


class CreditBalanceList(Model):
    balances: list[CreditBalance]
    as_of: datetime


class CreditTopup(Model):
    grant_id: str
    subscription_id: str
    units_added: Decimal
    idempotency_key: str
    note: str
    created_by: str
    created_at: datetime
    created: bool
    remaining_units: Decimal


class CreditAlertsPause(Model):
    subscription_id: str
    alerts_paused: bool
    updated_at: datetime


# -- portal, catalog, jobs, keys

class PortalSession(Model):
    id: str
    url: str
    token: str
    customer_id: str
    customer_name: str
    customer_email: str
    expires_at: datetime
    created_at: datetime
    is_expired: bool
    is_used: bool
    features: list[str]
    used_at: datetime


class CatalogService(Model):
    id: str
    external_id: str
    canonical_name: str
    display_name: str
    provider: str
    service_type: str
    input_cost: Decimal  # USD per `costUnit`, a decimal string in the answer
    output_cost: Decimal
    cost_unit: str
    context_window: int
    source: str
    is_api: bool
    is_active: bool


class Job(Model):
    id: str
    kind: str
    status: str
    done: int
    total: int
    percent: int
    result: dict
    error: str
    created_at: datetime
    started_at: datetime
    finished_at: datetime


class Verification(Model):
    """`GET /v1/verify`."""
    verified: bool
    organization: dict
    created_at: datetime
    updated_at: datetime


class KeyInfo(Model):
    """`GET /v1/me/key`."""
    id: str
    name: str
    type: str
    environment: str
    livemode: bool
    scope: str
    role: str
    prefix: str
    organization: dict
    user_email: str
    created_at: datetime
    last_used_at: datetime


# -- matters

class Matter(Model):
    id: str
    matter_number: str
    name: str
    client_name: str
    status: str
    responsible_user_id: str
    actual_cost: Decimal
    event_count: int
    events_missing_cost: int
    created_at: datetime
    updated_at: datetime


class MatterRule(Model):
    id: str
    matter_id: str
    matter_number: str
    matter_name: str
    priority: int
    agent_code: str
    customer_external_id: str
    signal_pattern: str
    created_at: datetime
    updated_at: datetime


# -- spend controls, alerts, webhooks

class SpendCap(Model):
    id: str
    scope: str
    scope_value: str
    provider_scope: str
    amount_usd: Decimal
    period: str
    mode: str
    cool_off_hours: int
    alert_thresholds: list[int]
    created_by_user_id: str
    sentence: str
    created_at: datetime
    updated_at: datetime


class CustomerAlert(Model):
    id: str
    customer_id: str
    customer_name: str
    customer_external_id: str
    metric: str
    threshold_usd: Decimal
    window_mode: str
    custom_start_date: datetime
    custom_end_date: datetime
    recipient_email: str
    created_by_user_id: str
    created_at: datetime
    updated_at: datetime


class WebhookEndpoint(Model):
    """`secret` is present only in the answers of create and rotate-secret."""
    id: str
    url: str
    description: str
    event_types: list[str]
    enabled: bool
    health: str
    secret: str
    failing_since: datetime
    last_success_at: datetime
    last_failure_at: datetime
    disabled_at: datetime
    disabled_reason: str
    previous_secret_expires_at: datetime
    created_at: datetime
    updated_at: datetime
