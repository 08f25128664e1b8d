"""Organization scoping: every read of an org-owned table starts here.

A `Book` is one organization's test or live books; the API key decides which one a request
reads and writes, so scoping to the book is scoping to the caller's organization.

The ORM reads through `owned()` and `get_owned()`. The few modules that write raw SQL (the ledger insert,
the rollup and its reads, the hot lookups of recording and key authentication: tests/test_layers.py names
them) scope every statement with `book_sql()`, never a hand-written book condition.
"""
import uuid
from urllib.parse import quote

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError
from django.db.models import Model, QuerySet

from core.errors import NotFound


def owned(model: type[Model], book) -> QuerySet:
    return model.objects.filter(book=book)


def book_sql(book, column: str = "book_id") -> tuple[str, list]:
    """`owned()` for raw SQL: the condition keeping `column` (a book foreign key, with its table's alias where
    the statement reads several tables) to one book, and its parameter. `book` is a Book or a book's id (None
    matches no row).

        in_book, params = book_sql(book, "e.book_id")
        cursor.execute(f"SELECT ... FROM usage_event e WHERE {in_book} AND e.usage_date >= %s", [*params, start])
    """
    return f"{column} = %s", [getattr(book, "pk", book)]


def not_found(model: type[Model], *, not_an_id: str | None = None) -> NotFound:
    """404 for `model`. For a value that is no id at all (a customer's external id where its id belongs, in a path
    or a body), the message says what an id is and, where the model names one (`id_lookup`), how to find it."""
    name = model._meta.verbose_name
    if not_an_id is None:
        return NotFound(f"{name.capitalize()} not found")
    shown = not_an_id if len(not_an_id) <= 100 else not_an_id[:100] + "..."
    article = "an" if name[:1].lower() in "aeiou" else "a"
    message = (f"{name.capitalize()} not found: {shown!r} is not {article} {name} id; this takes the {name}'s `id` "
               f"(a UUID).")
    lookup = getattr(model, "id_lookup", None)  # e.g. "GET /v1/customers?externalId={value}"
    if lookup:
        where = lookup.format(value=quote(shown, safe=""))
        message += f" To find {article} {name}'s id from the value you sent, use {where}."
    return NotFound(message)


def get_owned(model: type[Model], book, pk, queryset: QuerySet | None = None):
    """The record with this id in the caller's book; missing, malformed and foreign ids are the same 404."""
    try:
        pk = uuid.UUID(str(pk))
    except (ValueError, TypeError, AttributeError):
        raise not_found(model, not_an_id=str(pk))
    base = queryset if queryset is not None else owned(model, book)
    try:
        return base.get(pk=pk)
    except (model.DoesNotExist, ValueError, DjangoValidationError):
        raise not_found(model)


# What Django raises when an update-only save finds no row (django/db/models/base.py `_save_table`).
_NO_ROW_UPDATED = ("Forced update did not affect any rows.", "Save with update_fields did not affect any rows.")


def existing_row_save(instance: Model, update_fields: list[str] | None = None) -> None:
    """Save changes to a row read earlier with an UPDATE only (of `update_fields`, else of every field). A row
    deleted since it was read is the same 404 as an unknown id: a plain `save()` updating no row would INSERT it
    again (the deleted record back, under its old id), and an update-only one raises a bare DatabaseError (a 500).
    Callers lock the row first (`select_for_update(no_key=True)` in their transaction) so that a concurrent delete
    waits for them; this covers a delete the lock cannot stop (one in the caller's own transaction)."""
    try:
        if update_fields is None:
            instance.save(force_update=True)
        else:
            instance.save(update_fields=update_fields)
    except DatabaseError as error:
        # Only Django's own "no row" error: the driver's errors are subclasses, or carry other messages.
        if type(error) is not DatabaseError or str(error) not in _NO_ROW_UPDATED:
            raise
        raise not_found(type(instance)) from None
