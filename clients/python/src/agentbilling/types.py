"""The shapes the API sends and takes, as TypedDicts (spec §2): what requests take (`UsageRecord`, ...); the
clients answer with the typed models of `agentbilling.models`, which these shapes also describe. Field names
are the API's own (camelCase): what you read in the API reference is what you pass and what you get back.
Money and quantities arrive as `Decimal` (or `int` for whole numbers written without a fraction); `usageCost`,
`quantity` of event rows and `totalCostUsd` are decimal strings, as the spec says.
"""
from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, TypedDict, Union

Number = Union[int, Decimal]
Instant = Union[str, datetime]


class ServiceUsage(TypedDict, total=False):
    """One entry of a multi-service record's `services[]`."""
    model: str
    modelProvider: str
    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    cacheWrite1hTokens: int
    serviceTier: Literal["standard", "batch", "flex", "priority"]
    quantity: Number


class UsageRecord(TypedDict, total=False):
    """One record of `POST /v1/usage/record` (spec §2 "Usage event record")."""
    customerExternalId: str
    agentCode: str
    signalName: str
    model: str
    modelProvider: str
    inputTokens: int
    outputTokens: int
    cacheReadTokens: int
    cacheWriteTokens: int
    cacheWrite1hTokens: int
    serviceTier: Literal["standard", "batch", "flex", "priority"]
    quantity: Number
    usageDate: Instant
    metadata: dict[str, Any]
    environment: Literal["production", "staging", "development", "testing"]
    idempotencyKey: str
    services: list[ServiceUsage]


class RecordSuccess(TypedDict, total=False):
    index: int
    customerExternalId: str
    agentCode: str
    signalName: str
    model: str | None
    modelProvider: str | None
    totalCostUsd: str
    eventId: str
    rawEventId: str
    timestamp: str
    replayed: bool


class RecordFailureEntry(TypedDict, total=False):
    index: int
    code: str
    message: Any
    stored: bool
    eventId: str


class UsageRecordResponse(TypedDict):
    processed: int
    successful: int
    failed: int
    results: dict[str, list[Any]]  # {"success": [RecordSuccess], "failed": [RecordFailureEntry]}


class Customer(TypedDict, total=False):
    id: str
    name: str
    externalId: str
    email: str
    phone: str
    addressLine1: str
    addressLine2: str
    city: str
    state: str
    zipCode: str
    country: str
    timezone: str
    status: Literal["active", "inactive", "suspended"]
    billingContactName: str
    billingContactEmail: str
    netTerms: int
    invoiceEmailRecipients: list[str]
    metadata: dict[str, Any]
    createdAt: str


class Agent(TypedDict, total=False):
    id: str
    name: str
    agentCode: str
    description: str
    isActive: bool
    context: dict[str, Any]
    createdAt: str


class Signal(TypedDict, total=False):
    id: str
    name: str
    shortName: str
    type: Literal["usage", "volume"]
    agentId: str
    createdAt: str


class Tier(TypedDict):
    lower: Number
    upper: Number | None
    rate: Number


class PricingStrategy(TypedDict, total=False):
    id: str
    name: str
    agentId: str
    chargeType: Literal["usage", "recurring", "onetime", "seat_based"]
    signalId: str
    pricingModel: Literal["flat", "graduated", "volume", "credit_pool"]
    billingFrequency: Literal["monthly", "yearly"]
    tiers: list[Tier]
    rate: Number
    minimumCommitment: Number
    active: bool
    tags: list[str]
    deletedAt: str | None


class PricingPlan(TypedDict, total=False):
    id: str
    name: str
    description: str
    featuresList: dict[str, Any]
    isActive: bool
    agents: list[dict[str, Any]]
    createdAt: str


class Subscription(TypedDict, total=False):
    id: str
    name: str
    planId: str
    agentId: str
    customerId: str
    startDate: str
    status: Literal["upcoming", "active", "ended"]
    billingCycle: Literal["monthly", "yearly", "custom"]
    billingModel: Literal["subscription", "usage", "hybrid"]
    netTerms: int
    endDate: str | None
    isForever: bool
    subscriptionDetails: dict[str, Any]
    seatsCount: int
    customCycleDays: int
    proratedAmount: Number
    timezone: str
    billingDay: int
    invoiceMemo: str
    metadata: dict[str, Any]
    previousSubscriptionId: str | None
    nextSubscriptionId: str | None
    createdAt: str


class InvoiceRow(TypedDict, total=False):
    id: str
    customerExternalId: str
    status: Literal["draft", "pending", "issued", "paid", "overdue", "void", "refunded"]
    total: Number
    currency: str
    periodStart: str
    periodEnd: str
    dueDate: str
    createdAt: str


class Invoice(InvoiceRow, total=False):
    invoiceNumber: str
    totalAmount: Number
    lineItems: list[dict[str, Any]]
    payments: list[dict[str, Any]]


class CreditBalance(TypedDict, total=False):
    subscriptionId: str
    subscriptionName: str
    customerId: str
    customerName: str | None
    customerExternalId: str | None
    agentId: str
    planId: str
    planName: str | None
    poolSizeUnits: Number
    consumedUnits: Number
    remainingUnits: Number
    overageInProgressUnits: Number
    remainingPercent: Number
    overageRatePerUnit: Number | None
    periodStart: str | None
    periodEnd: str | None
    alertsPaused: bool
    noActivePeriod: bool
    implicitFullPool: bool


class CreditTopup(TypedDict, total=False):
    grantId: str
    subscriptionId: str
    unitsAdded: Number
    idempotencyKey: str
    note: str
    createdBy: str
    createdAt: str
    created: bool
    remainingUnits: Number


class PortalSession(TypedDict, total=False):
    id: str
    object: Literal["portal_session"]
    url: str
    token: str
    customerId: str
    customerName: str
    customerEmail: str
    expiresAt: str
    createdAt: str
    isExpired: bool
    isUsed: bool
    features: list[str]
    usedAt: str | None


class CatalogService(TypedDict, total=False):
    id: str
    externalId: str
    canonicalName: str
    displayName: str
    provider: str
    serviceType: str
    inputCost: str | None
    outputCost: str | None
    costUnit: str
    contextWindow: int | None
    source: Literal["openrouter", "litellm", "curated"]
    isApi: bool
    isActive: bool
