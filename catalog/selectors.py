"""Reads of the services catalog (global: not scoped to a book)."""
import uuid

import django_filters
from django.db.models import Case, Q, QuerySet, Value, When

from catalog.models import ServiceEntry
from core.errors import NotFound
from core.filtering import StrictBooleanFilter, filtered


class ServiceFilter(django_filters.FilterSet):
    """Query parameters of GET /v1/services; a bad value is a 400 naming the parameter."""

    provider = django_filters.CharFilter(field_name="provider", method="filter_iexact")
    serviceType = django_filters.CharFilter(field_name="service_type", method="filter_iexact")
    isApi = StrictBooleanFilter(field_name="is_api")
    search = django_filters.CharFilter(method="filter_search")

    def filter_iexact(self, queryset, name, value):
        value = value.strip()
        return queryset.filter(**{f"{name}__iexact": value}) if value else queryset

    def filter_search(self, queryset, name, value):
        """Entries whose names hold the term, those named by it first, then those whose name starts with it: a
        search for `gpt-4o` answered some forty other providers' deployments of it (`azure/eu/gpt-4o`) before
        OpenAI's own entry. The listing's stable order within each."""
        term = value.strip()
        if not term:
            return queryset
        rank = Case(When(Q(canonical_name__iexact=term) | Q(display_name__iexact=term), then=Value(0)),
                    When(Q(canonical_name__istartswith=term) | Q(display_name__istartswith=term), then=Value(1)),
                    default=Value(2))
        return (queryset.filter(Q(canonical_name__icontains=term) | Q(display_name__icontains=term))
                .annotate(search_rank=rank).order_by("search_rank", *queryset.query.order_by))


def services_active() -> QuerySet:
    """Active entries in the listing's stable order: provider, canonical name (unique together), id."""
    return ServiceEntry.objects.filter(is_active=True).order_by("provider", "canonical_name", "id")


def service_list(*, params) -> QuerySet:
    data = params.copy()
    if "isApi" in data:
        data["isApi"] = str(data["isApi"]).strip().lower()
    return filtered(ServiceFilter, data, services_active())


def service_get(*, service_id) -> ServiceEntry:
    """An active entry; missing, malformed and deactivated ids are the same 404."""
    try:
        pk = uuid.UUID(str(service_id))
    except ValueError:
        raise NotFound("Service not found")
    entry = services_active().filter(pk=pk).first()
    if entry is None:
        raise NotFound("Service not found")
    return entry
