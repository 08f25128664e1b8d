"""Query-parameter filters of the customer, agent and signal lists (a bad value is a 400 naming it)."""
import django_filters
from django.db.models import Q

from config.core.filtering import InstantFilter, StrictBooleanFilter
from customers.models import Agent, Customer, CustomerStatus, Signal, SignalType


class CreatedWindowFilterSet(django_filters.FilterSet):
    """`createdAfter` (inclusive) and `createdBefore` (exclusive): the half-open window of `created_at`."""

    createdAfter = InstantFilter(field_name="created_at", lookup_expr="gte")
    createdBefore = InstantFilter(field_name="created_at", lookup_expr="lt")


def search_over(*fields):
    def method(queryset, name, value):
        text = value.strip()
        if not text:
            return queryset
        condition = Q()
        for field in fields:
            condition |= Q(**{f"{field}__icontains": text})
        return queryset.filter(condition)
    return method


class CustomerFilter(CreatedWindowFilterSet):
    status = django_filters.ChoiceFilter(choices=CustomerStatus.choices)
    externalId = django_filters.CharFilter(field_name="external_id")
    email = django_filters.CharFilter(field_name="email", lookup_expr="iexact")
    search = django_filters.CharFilter(method=search_over("name", "external_id", "email"))

    class Meta:
        model = Customer
        fields = []


class AgentFilter(CreatedWindowFilterSet):
    isActive = StrictBooleanFilter(field_name="is_active")
    agentCode = django_filters.CharFilter(field_name="agent_code")
    search = django_filters.CharFilter(method=search_over("name", "agent_code", "description"))

    class Meta:
        model = Agent
        fields = []


class SignalFilter(CreatedWindowFilterSet):
    agentId = django_filters.UUIDFilter(field_name="agent_id")
    type = django_filters.ChoiceFilter(choices=SignalType.choices)
    shortName = django_filters.CharFilter(field_name="short_name")
    search = django_filters.CharFilter(method=search_over("name", "short_name"))

    class Meta:
        model = Signal
        fields = []
