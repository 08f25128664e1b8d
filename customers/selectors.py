from config.core.filtering import apply_filters
from config.core.scoping import owned
from customers.filters import UsageEventFilter
from customers.models import UsageEvent


def usage_event_list(*, book, params):
    """The book's events, newest first, narrowed by the documented filters."""
    return apply_filters(UsageEventFilter, params, owned(UsageEvent, book).order_by("-usage_date", "-id"))
