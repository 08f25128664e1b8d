"""What every console action shares: one service call per row with errors as messages, the intermediate page of
actions that need input, and the CSV export offered on every list.

Actions are edges like views: they parse (a form), call the same service function as the API, and report. The
operator's role in each row's organization must be one the API accepts for the same operation.
"""
import csv
import html
import uuid
from collections.abc import Callable, Iterable
from datetime import date, datetime
from decimal import Decimal

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.utils import label_for_field, lookup_field
from django.contrib.contenttypes.models import ContentType
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.http import StreamingHttpResponse
from django.template.response import TemplateResponse
from django.utils.html import strip_tags
from django.utils.safestring import SafeString

from accounts.admin_scoping import may_act, organization_id_of
from accounts.models import Role
from core import clock, display
from core.errors import ApiError
from core.spreadsheet import spreadsheet_safe

APPLY = "apply"  # the submit button of an action's intermediate page
CSV_CHUNK_ROWS = 500


def error_text(error: ApiError) -> str:
    return "; ".join(error.message) if isinstance(error.message, list) else str(error.message)


def actor(request) -> str:
    """Who acted, as changelogs and grants record it (`user:<id>`)."""
    return f"user:{request.user.pk}"


def role_refusal(roles) -> str:
    ordered = [role for role in Role.values if role in roles]
    phrase = ordered[0] if len(ordered) == 1 else ", ".join(ordered[:-1]) + " or " + ordered[-1]
    return f"This needs the {phrase} role in its organization."


def act_on_rows(modeladmin, request, rows: Iterable, act: Callable[[object], str | tuple[str, int]], *, roles=None,
                history_of: Callable[[object], models.Model] | None = None) -> int:
    """Call `act(row)` (one service call, returning the success message, or the message and its level when the
    call changed nothing the operator asked for: `messages.WARNING`) for each row on its own; a row of an
    organization where the operator lacks one of `roles`, and a service error (ApiError), become error messages
    naming the row. Each success is written to the console's history of the row (or of `history_of(row)`: a
    refund to its invoice's), with the operator and the message. Returns how many rows succeeded."""
    done = 0
    for row in rows:
        if not may_act(request.user, organization_id_of(row), roles):
            modeladmin.message_user(request, f"{row}: {role_refusal(roles)}", messages.ERROR)
            continue
        logged = history_of(row) if history_of else row
        # Read before the act: a row the act deletes has no primary key after it.
        logged_id, logged_text = logged.pk, str(logged)
        try:
            message = act(row)
        except ApiError as error:
            modeladmin.message_user(request, f"{row}: {error_text(error)}", messages.ERROR)
            continue
        message, level = message if isinstance(message, tuple) else (message, messages.SUCCESS)
        done += 1
        _log_in_history(request, logged, logged_id, logged_text, message)
        modeladmin.message_user(request, message, level)
    return done


def _log_in_history(request, logged: models.Model, object_id, text: str, message: str) -> None:
    """Who did what to which row, in the console's history (Django's `LogEntry`: the row's History page): the
    actions call services rather than saving a form, which Django would have logged itself."""
    LogEntry.objects.create(user_id=request.user.pk, content_type=ContentType.objects.get_for_model(logged),
                            object_id=str(object_id), object_repr=text[:200], action_flag=CHANGE,
                            change_message=message)


def submitted(request, form_class, **kwargs) -> forms.Form:
    """The action's form: bound to the intermediate page's submission, unbound when the action is first chosen."""
    return form_class(request.POST, **kwargs) if APPLY in request.POST else form_class(**kwargs)


def action_page(modeladmin, request, queryset, form: forms.Form, *, title: str, submit: str,
                intro: str = "") -> TemplateResponse:
    """The intermediate page of an action: the selected rows and the form; it posts back to the same action."""
    opts = modeladmin.model._meta
    context = {
        **modeladmin.admin_site.each_context(request), "title": title, "intro": intro, "form": form,
        "submit": submit, "opts": opts, "media": modeladmin.media + form.media,
        "action": request.POST.get("action", ""), "selected": request.POST.getlist(ACTION_CHECKBOX_NAME),
        "select_across": request.POST.get("select_across", "0"), "rows": queryset[:50], "count": queryset.count(),
        "checkbox_name": ACTION_CHECKBOX_NAME, "apply": APPLY,
    }
    return TemplateResponse(request, "admin/console/action_form.html", context)


def idempotency_key() -> str:
    """A fresh key for an action's form: a double submission of the same page replays instead of repeating."""
    return f"console-{uuid.uuid4()}"


# --------------------------------------------------------------------------- CSV export (every list)

class _Echo:
    """A file-like object whose write returns the line, so csv.writer can feed a streaming response."""

    def write(self, value: str) -> str:
        return value


def _column(modeladmin, name):
    """A list column as its callable: a name of the admin's own method (`"model_events"`) is looked up on it."""
    return getattr(modeladmin, name, None) if isinstance(name, str) else name


def _numbered_choices(model, name: str) -> bool:
    try:
        field = model._meta.get_field(name)
    except FieldDoesNotExist:
        return False
    return bool(field.choices) and not isinstance(field.choices[0][0], str)


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return format(value, "f")  # the stored digits, never an exponent (`2.0E-7`)
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, models.Model):
        value = str(value)
    if isinstance(value, SafeString):  # a column the console renders as HTML: its text
        value = html.unescape(strip_tags(value))
    # Text as stored: a customer named `R&D <Labs>` stays so (stripping tags from it dropped `<Labs>`).
    return spreadsheet_safe(str(value))


def _heading(label: str) -> str:
    """A column's heading as the fields' names read (`amount due` beside `invoice number`: a display function's
    description is capitalized, a field's verbose name is not); an acronym (`MRR`) stays as it is."""
    return label[:1].lower() + label[1:] if label[1:2].islower() else label


@admin.action(description="Export selected rows as CSV")
def export_csv(modeladmin, request, queryset):
    """The list's own columns (plus the row id, the currency of rows that have one and the admin's
    `csv_extra_columns`), one line per selected row,
    streamed (a whole filtered list when "select all" is used). Text cells that a spreadsheet would run as a formula
    are quoted."""
    # Raw values: a column the console formats (money, dates) is read from its field, a computed one through its
    # `csv_value` when it has one.
    columns = [getattr(_column(modeladmin, name), "raw_field", name) for name in modeladmin.get_list_display(request)
               if name != "action_checkbox"]
    # Amounts are written without their currency symbol: the currency goes beside them (a book may bill in several).
    if "currency" not in columns and any(field.name == "currency" for field in modeladmin.model._meta.fields):
        columns.append("currency")
    # Columns a spreadsheet needs beyond what fits the list's width (an invoice's issue and payment dates).
    columns += [name for name in getattr(modeladmin, "csv_extra_columns", ()) if name not in columns]
    header = ["id", *[_heading(str(label_for_field(name, modeladmin.model, modeladmin))) for name in columns]]
    computed = {name: _column(modeladmin, name) for name in columns}  # None for a model field
    raw = {name: getattr(column, "csv_value", None) for name, column in computed.items()}
    # A field whose stored values are numbers standing for words (a rollup row's grain, 11) is written as its words.
    labelled = {name for name in columns if isinstance(name, str) and _numbered_choices(modeladmin.model, name)}

    def value(name, row):
        if raw[name]:
            return raw[name](row)
        if name in labelled:
            return getattr(row, f"get_{name}_display")()
        if name == "currency":  # ISO 4217 writes codes in capitals (stored as the API takes them: `usd`)
            return row.currency.upper() if row.currency else row.currency
        shown = lookup_field(name, row, modeladmin)[2]
        # A computed column's stand-in for "nothing here" (a dash) is an empty cell, never the text "-".
        return None if computed[name] is not None and shown == display.EMPTY else shown

    def lines():
        writer = csv.writer(_Echo(), lineterminator="\r\n")
        yield writer.writerow(header)
        for row in queryset.iterator(chunk_size=CSV_CHUNK_ROWS):
            yield writer.writerow([str(row.pk), *[_cell(value(name, row)) for name in columns]])

    filename = f"{modeladmin.model._meta.model_name}-{clock.now():%Y%m%d-%H%M%S}.csv"
    return StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8",
                                 headers={"Content-Disposition": f'attachment; filename="{filename}"'})
