"""django-filter at the API edge: a bad filter value is a 400 naming the parameter."""
from config.core.errors import BadRequest, flatten_validation_errors


def apply_filters(filterset_class, params, queryset):
    filterset = filterset_class(data=params, queryset=queryset)
    if not filterset.is_valid():
        raise BadRequest(flatten_validation_errors(dict(filterset.errors)))
    return filterset.qs
