"""Query-parameter filters of `GET /v1/invoices` (a bad value is a 400 naming the parameter)."""
import django_filters

from billing.models import Invoice, InvoiceStatus
from core.clock import parse_instant, parse_window_end


class InvoiceFilter(django_filters.FilterSet):
    customerExternalId = django_filters.CharFilter(field_name="customer__external_id",
                                                   help_text="the customer's externalId")
    customerId = django_filters.UUIDFilter(field_name="customer_id", help_text="the customer's id")
    subscriptionId = django_filters.UUIDFilter(field_name="subscription_id", help_text="the subscription's id")
    status = django_filters.ChoiceFilter(field_name="status", choices=InvoiceStatus.choices)
    startDate = django_filters.CharFilter(method="period_ends_after",
                                          help_text="invoices whose period ends after this instant (ISO 8601)")
    endDate = django_filters.CharFilter(method="period_starts_before",
                                        help_text="invoices whose period starts before this instant; a bare date "
                                                  "includes that whole day (UTC)")

    class Meta:
        model = Invoice
        fields = []

    def period_ends_after(self, queryset, name, value):
        return queryset.filter(period_end__gt=parse_instant(value, field="startDate"))

    def period_starts_before(self, queryset, name, value):
        return queryset.filter(period_start__lt=parse_window_end(value, field="endDate"))
