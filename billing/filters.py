"""Query-parameter filters of the billing lists (a bad value is a 400 naming the parameter)."""
import django_filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter

from billing.models import (BillingCycle, ChargeType, PricingModel, PricingPlan, PricingStrategy, Subscription,
                            SubscriptionChange, SubscriptionStatus)
from core.filtering import StrictBooleanFilter


class PlanFilter(django_filters.FilterSet):
    agentId = django_filters.UUIDFilter(field_name="agent_links__agent_id", help_text="plans linked to this agent")
    isActive = StrictBooleanFilter(field_name="is_active")
    name = django_filters.CharFilter(field_name="name", lookup_expr="icontains", help_text="name contains")

    class Meta:
        model = PricingPlan
        fields = []


class StrategyFilter(django_filters.FilterSet):
    chargeType = django_filters.ChoiceFilter(field_name="charge_type", choices=ChargeType.choices)
    pricingModel = django_filters.ChoiceFilter(field_name="pricing_model", choices=PricingModel.choices)
    active = StrictBooleanFilter(field_name="active")
    agentId = django_filters.UUIDFilter(field_name="agent_id")
    signalId = django_filters.UUIDFilter(field_name="signal_id")

    class Meta:
        model = PricingStrategy
        fields = []


class SubscriptionFilter(django_filters.FilterSet):
    customerId = django_filters.UUIDFilter(field_name="customer_id")
    status = django_filters.ChoiceFilter(field_name="status", choices=SubscriptionStatus.choices)
    agentId = django_filters.UUIDFilter(field_name="agent_id")
    planId = django_filters.UUIDFilter(field_name="plan_id")
    billingCycle = django_filters.ChoiceFilter(field_name="billing_cycle", choices=BillingCycle.choices)

    class Meta:
        model = Subscription
        fields = []


class ChangelogFilter(django_filters.FilterSet):
    kind = django_filters.ChoiceFilter(field_name="kind", choices=SubscriptionChange.Kind.choices)

    class Meta:
        model = SubscriptionChange
        fields = []


PAGE_PARAMETERS = [
    OpenApiParameter("page", int, OpenApiParameter.QUERY, description="page number, from 1"),
    OpenApiParameter("limit", int, OpenApiParameter.QUERY, description="page size, 1-100 (default 10)"),
]
OFFSET_PARAMETERS = [
    OpenApiParameter("limit", int, OpenApiParameter.QUERY, description="rows, 1-100 (default 100)"),
    OpenApiParameter("offset", int, OpenApiParameter.QUERY, description="rows to skip"),
]


def openapi_parameters(filterset_class) -> list[OpenApiParameter]:
    """The query parameters a FilterSet declares, for the OpenAPI schema of a plain APIView."""
    parameters = []
    for name, declared in filterset_class.base_filters.items():
        kind = (OpenApiTypes.UUID if isinstance(declared, django_filters.UUIDFilter)
                else OpenApiTypes.BOOL if isinstance(declared, StrictBooleanFilter) else OpenApiTypes.STR)
        choices = [value for value, _ in declared.extra.get("choices", [])] or None
        parameters.append(OpenApiParameter(name, kind, OpenApiParameter.QUERY, enum=choices,
                                           description=declared.extra.get("help_text", "")))
    return parameters
