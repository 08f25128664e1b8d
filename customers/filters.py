import django_filters

from config.core.clock import parse_instant, parse_window_end
from customers.models import Environment, EventStatus, UsageEvent


class WindowStartFilter(django_filters.CharFilter):
    """An ISO 8601 date or timestamp; events at or after it."""

    def filter(self, qs, value):
        if value in (None, ""):
            return qs
        return qs.filter(**{f"{self.field_name}__gte": parse_instant(value, field=self.label)})


class WindowEndFilter(django_filters.CharFilter):
    """An ISO 8601 date (that whole day included) or timestamp (exclusive)."""

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
    idempotencyKey = django_filters.CharFilter(field_name="idempotency_key")
    startDate = WindowStartFilter(field_name="usage_date", label="startDate")
    endDate = WindowEndFilter(field_name="usage_date", label="endDate")

    class Meta:
        model = UsageEvent
        fields = []
