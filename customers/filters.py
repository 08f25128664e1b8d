"""Query-parameter filters of the customer, agent and signal lists (a bad value is a 400 naming it)."""
import django_filters
from django.db.models import Q

from core.clock import parse_instant, parse_window_end
from core.filtering import InstantFilter, StrictBooleanFilter
from customers.models import Agent, Customer, CustomerStatus, Environment, EventStatus, Signal, SignalType, UsageEvent


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


class WindowStartFilter(django_filters.CharFilter):
    """An ISO 8601 date or timestamp; rows at or after it."""

    def filter(self, qs, value):
        if value in (None, ""):
            return qs
        return qs.filter(**{f"{self.field_name}__gte": parse_instant(value, field=self.label)})


class WindowEndFilter(django_filters.CharFilter):
    """An ISO 8601 date (that whole day included) or timestamp (exclusive; the last second of a day, `...T23:59:59`,
    means the following midnight)."""

    def filter(self, qs, value):
        if value in (None, ""):
            return qs
        return qs.filter(**{f"{self.field_name}__lt": parse_window_end(value, field=self.label)})


class UsageEventFilter(django_filters.FilterSet):
    customerId = django_filters.UUIDFilter(field_name="customer_id")
    customerExternalId = django_filters.CharFilter(field_name="customer_external_id")
    agentId = django_filters.UUIDFilter(field_name="agent_id")
    agentCode = django_filters.CharFilter(field_name="agent_code")
    signalId = django_filters.UUIDFilter(field_name="signal_id")
    signalName = django_filters.CharFilter(field_name="signal_name")
    eventStatus = django_filters.ChoiceFilter(field_name="event_status", choices=EventStatus.choices)
    environment = django_filters.ChoiceFilter(field_name="environment", choices=Environment.choices)
    model = django_filters.CharFilter(field_name="model", lookup_expr="iexact")
    # Kept exactly as sent, as keys are stored (never trimmed: `run-1 ` is another key than `run-1`).
    idempotencyKey = django_filters.CharFilter(field_name="idempotency_key", strip=False)
    startDate = WindowStartFilter(field_name="usage_date", label="startDate")
    endDate = WindowEndFilter(field_name="usage_date", label="endDate")

    class Meta:
        model = UsageEvent
        fields = []
