"""The services catalog (global, not organization-scoped) and per-organization model aliases."""
import uuid

from django.db import models

from core import display
from core.exact_json import ExactJSONField
from core.models import OrgOwned
from core.money import RateField, TermField


class CatalogSource(models.TextChoices):
    OPENROUTER = "openrouter"
    LITELLM = "litellm"
    CURATED = "curated"


class ServiceEntry(models.Model):
    """A priced model or API service. LLM rates are USD per single token; a non-LLM entry's
    `input_cost` is its USD price per `cost_unit` (request, minute, character, image, page, ...)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    external_id = models.CharField(max_length=255, unique=True, help_text="Stable key from the source data.")
    canonical_name = models.CharField(max_length=255, help_text="Lowercase; sent as `model`.")
    display_name = models.CharField(max_length=255)
    provider = models.CharField(max_length=100, help_text="Lowercase; sent as `modelProvider`.")
    service_type = models.CharField(max_length=64)
    # Rates with every digit the price source publishes (`numeric` without a scale: never rounded).
    input_cost = RateField(null=True, blank=True)
    output_cost = RateField(null=True, blank=True)
    cache_read_cost = RateField(null=True, blank=True)
    cache_write_cost = RateField(null=True, blank=True)
    # Long-context pricing (see catalog/costing.py): ascending thresholds of prompt tokens (input + cache read +
    # cache write), each `{"threshold": int, "input"|"output"|"cache_read"|"cache_write": "<decimal>"}` with the
    # rates a request above it pays for all of its tokens. Above: more than the threshold, or from the
    # threshold itself where `long_context_inclusive` (the provider bills it so: xAI).
    long_context = ExactJSONField(default=list, blank=True)
    long_context_inclusive = models.BooleanField(default=False)
    # Off-peak pricing: `{"windows": [{"hours": ["HH:MM-HH:MM", ...] (UTC), "weekdays": [1-7] | null}],
    # "weekday_timezone": str | null, "input"|"output"|"cache_read"|"cache_write": "<decimal>"}`, or null.
    off_peak = ExactJSONField(null=True, blank=True)
    # 1-hour cache writes (a record's `cacheWrite1hTokens`): the price data's rate; null where it has none (the
    # provider's published rule, or a 5-minute write's rate, applies: catalog/costing.py). Thresholds of
    # `long_context` may carry `cache_write_1h` too.
    cache_write_1h_cost = RateField(null=True, blank=True)
    # The batch, flex and priority tiers' own rates (a record's `serviceTier`): `{"batch": {"input"|"output"|
    # "cache_read"|"cache_write"|"cache_write_1h": "<decimal>", "long_context": [...]}, ...}`, only what the price
    # data publishes.
    service_tiers = ExactJSONField(default=dict, blank=True)
    cost_unit = models.CharField(max_length=32, default="token")
    context_window = models.BigIntegerField(null=True, blank=True)
    source = models.CharField(max_length=16, choices=CatalogSource.choices)
    is_api = models.BooleanField(default=False)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["provider", "canonical_name"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "canonical_name"], name="service_provider_name_uniq"),
        ]
        indexes = [models.Index(fields=["is_active", "is_api", "provider"], name="service_listing")]
        verbose_name = "catalog service"
        verbose_name_plural = "catalog services"

    def __str__(self):
        return f"{self.provider}/{self.canonical_name}"

    # A token-priced entry without a published cache rate bills cached tokens at the input rate, as providers
    # do (catalog/costing.py); the API shows the rate that applies and where it comes from.
    @property
    def cache_read_rate(self):
        return self._cache_rate(self.cache_read_cost)

    @property
    def cache_write_rate(self):
        return self._cache_rate(self.cache_write_cost)

    @property
    def cache_read_basis(self) -> str | None:
        return self._cache_basis(self.cache_read_cost)

    @property
    def cache_write_basis(self) -> str | None:
        return self._cache_basis(self.cache_write_cost)

    @property
    def service_tiers_view(self) -> dict:
        tiers = self.service_tiers or {}
        return {name: tiers.get(name) for name in ("batch", "flex", "priority")}

    def _cache_rate(self, published):
        if self.cost_unit != "token":
            return None
        return self.input_cost if published is None else published

    def _cache_basis(self, published) -> str | None:
        if self.cost_unit != "token":
            return None
        return CACHE_RATE_PUBLISHED if published is not None else CACHE_RATE_FROM_INPUT


CACHE_RATE_PUBLISHED = "published"  # the provider's own cache price
CACHE_RATE_FROM_INPUT = "inputCost"  # no cache price published: cached tokens bill at the input rate


class ModelAlias(OrgOwned):
    """An organization's mapping of a model name it sends (unknown to the catalog) onto a catalog entry."""

    model = models.CharField(max_length=255, help_text="Lowercase, trimmed, as events send it.")
    model_provider = models.CharField(max_length=100)
    service = models.ForeignKey(ServiceEntry, on_delete=models.PROTECT, related_name="aliases")

    class Meta:
        ordering = ["model"]
        constraints = [
            models.UniqueConstraint(fields=["book", "model_provider", "model"], name="model_alias_uniq"),
        ]
        verbose_name_plural = "model aliases"

    def __str__(self):
        return f"{self.model_provider}/{self.model} -> {self.service}"


class PriceOverride(OrgOwned):
    """A book's own price for what it uses (contract.md "Price overrides"): its rates for a catalog service
    (`service`), rates for a model the catalog lacks (`model`, `model_provider`), or a percentage off a
    provider's list prices (`model_provider`, `discount_percent`), for events dated at or after
    `effective_from`, or for every event when it has none. Cost only: invoices never change because of one."""

    service = models.ForeignKey(ServiceEntry, on_delete=models.PROTECT, null=True, blank=True, related_name="+")
    model = models.CharField(max_length=255, null=True, blank=True, help_text="Lowercase, trimmed, as events send it.")
    model_provider = models.CharField(max_length=100, null=True, blank=True)
    # A percent an operator writes: every digit kept (core/money.py EXACT_IN_PLACES), as an invoice's discount.
    discount_percent = TermField(null=True, blank=True)
    input_cost = RateField(null=True, blank=True)
    output_cost = RateField(null=True, blank=True)
    cache_read_cost = RateField(null=True, blank=True)
    cache_write_cost = RateField(null=True, blank=True)
    cache_write_1h_cost = RateField(null=True, blank=True)
    unit_cost = RateField(null=True, blank=True)
    # Null: in effect for every event, whatever its date (the contract lists `effectiveFrom` among the fields an
    # override may have); a dated override of the same target takes over from its instant.
    effective_from = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, default="")
    created_by = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = [models.F("effective_from").desc(nulls_last=True), "-created_at"]
        constraints = [
            # Exactly one target: a service, a model with its provider, or a provider with a discount.
            models.CheckConstraint(name="price_override_one_target", condition=(
                models.Q(service__isnull=False, model__isnull=True, discount_percent__isnull=True)
                | models.Q(service__isnull=True, model__isnull=False, model_provider__isnull=False,
                           discount_percent__isnull=True)
                | models.Q(service__isnull=True, model__isnull=True, model_provider__isnull=False,
                           discount_percent__isnull=False))),
            models.UniqueConstraint(fields=["book", "service", "effective_from"], condition=models.Q(
                service__isnull=False), name="price_override_service_uniq", nulls_distinct=False),
            models.UniqueConstraint(fields=["book", "model_provider", "model", "effective_from"], condition=models.Q(
                model__isnull=False), name="price_override_model_uniq", nulls_distinct=False),
            models.UniqueConstraint(fields=["book", "model_provider", "effective_from"], condition=models.Q(
                discount_percent__isnull=False), name="price_override_discount_uniq", nulls_distinct=False),
        ]

    def __str__(self):
        since = f"from {self.effective_from:%Y-%m-%d}" if self.effective_from else "for every date"
        if self.service_id:
            return f"{self.service} {since}"
        if self.model:
            return f"{self.model_provider}/{self.model} {since}"
        return f"{display.percent(self.discount_percent)} off {self.model_provider} {since}"
