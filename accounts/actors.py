"""Who did something, in words for the console. Records keep their author as text: `api-key:<id>` (a change made
through the API), `user:<id>` (an operator in the console) or `system` (a scheduled job); the console shows a key
by its name and prefix and a user by their email, looked up in the record's own book (a key of another book, or a
user who is neither a member of its organization nor a superuser, is shown as the record keeps it). A superuser acts
on every organization's books from the console without being a member: named by email all the same."""
import time
import uuid

from django.db.models import Q

from accounts.models import ApiKey, User
from core.scoping import owned

CACHE_SECONDS = 60  # a renamed key shows its new name within a minute; a list of 100 rows asks once per author
_names: dict[tuple, tuple[float, str]] = {}


def actor_name(book_id, actor: str) -> str:
    """The author `actor` of a record of the book, as a person reads it; the text itself when it names nobody the
    book knows."""
    if not actor:
        return actor
    key = (book_id, actor)
    cached = _names.get(key)
    if cached is not None and cached[0] > time.monotonic():
        return cached[1]
    name = _looked_up(book_id, actor)
    if len(_names) > 10_000:
        _names.clear()
    _names[key] = (time.monotonic() + CACHE_SECONDS, name)
    return name


def _looked_up(book_id, actor: str) -> str:
    kind, _, ident = actor.partition(":")
    try:
        ident = uuid.UUID(ident)
    except ValueError:
        return actor
    if kind == "api-key":
        found = owned(ApiKey, book_id).filter(pk=ident).values_list("name", "prefix").first()
        if found is None:
            return actor
        name, prefix = found
        return f"{name} ({prefix}…)" if name else f"API key {prefix}…"
    if kind == "user":
        email = (User.objects.filter(Q(memberships__organization__books=book_id) | Q(is_superuser=True), pk=ident)
                 .values_list("email", flat=True).first())
        return email or actor
    return actor
