"""Multi-organization safety for the operator console.

A staff user sees and edits only the organizations they are a member of (superusers see all). Every ModelAdmin
of an org-owned table subclasses `BookScopedAdmin` (rows with a `book`) or `OrganizationScopedAdmin` (rows with
an `organization`), and every inline `ScopedInlineMixin`, so these are all filtered the same way:
- the list, object lookups by URL (change, delete, history) and the rows actions receive (`get_queryset`);
- autocomplete answers (Django asks the target model's admin for its `get_queryset`);
- foreign-key and many-to-many choices of forms and inlines, and the related rows a form accepts;
- list-filter choices: the book or organization filter offers visible ones only, and any other filter on a
  related field offers only the rows and values of visible rows.
A form also refuses related rows of another book than the row's own (a live plan never links a test agent).
"""
from uuid import UUID

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import DataError, connections, models, transaction
from django.forms.models import InlineForeignKeyField

from accounts.admin_display import shown, shown_all
from accounts.models import Book, Membership, Organization, User
from core.ids import uuid_or_none
from core.serialization import text_problem

# Read once per user object (one request): every model's permission checks ask again.
CONSOLE_ROLES_CACHE = "_console_roles"


def _roles(user) -> dict:
    """organization id -> the user's role there."""
    if not hasattr(user, CONSOLE_ROLES_CACHE):
        setattr(user, CONSOLE_ROLES_CACHE, dict(Membership.objects.filter(user=user)
                                                .values_list("organization_id", "role")))
    return getattr(user, CONSOLE_ROLES_CACHE)


def visible_organization_ids(user):
    """None means every organization (superuser)."""
    return None if user.is_superuser else list(_roles(user))


def visible_organizations(user):
    ids = visible_organization_ids(user)
    return Organization.objects.all() if ids is None else Organization.objects.filter(id__in=ids)


def visible_books(user):
    ids = visible_organization_ids(user)
    books = Book.objects.select_related("organization")
    return books if ids is None else books.filter(organization_id__in=ids)


def is_operator(user) -> bool:
    """Staff members of at least one organization may use the console (superusers always)."""
    if not (user.is_active and user.is_staff):
        return False
    return user.is_superuser or bool(_roles(user))


def may_act(user, organization_id, roles) -> bool:
    """Whether the user may act in the organization with one of `roles` (None: any member), as the API's role
    policy for the same operation; superusers always may."""
    if user.is_superuser:
        return True
    role = _roles(user).get(organization_id)
    return role is not None and (roles is None or role in roles)


def holds_role_somewhere(user, roles) -> bool:
    """Whether the user has one of `roles` in some organization (superusers: always): what a page without a row
    (a list, an add form) may offer, each row then checked with `may_act`."""
    return user.is_superuser or any(role in roles for role in _roles(user).values())


def organization_path(model) -> str | None:
    """The lookup from a row of `model` to its organization; None for global tables (the catalog)."""
    if model is Organization:
        return "id"
    if model is User:
        return "memberships__organization"
    field_names = {field.name for field in model._meta.fields}
    if "book" in field_names:
        return "book__organization"
    if "organization" in field_names:
        return "organization"
    return None


def organization_id_of(row):
    """The organization a row belongs to (rows of books are read with their book)."""
    if isinstance(row, Organization):
        return row.pk
    return row.book.organization_id if hasattr(row, "book_id") else row.organization_id


def scoped(queryset, user):
    """`queryset` narrowed to the organizations the user sees."""
    ids, path = visible_organization_ids(user), organization_path(queryset.model)
    if ids is None or path is None:
        return queryset
    queryset = queryset.filter(**{f"{path}__in": ids})
    return queryset.distinct() if queryset.model is User else queryset  # a user of two visible organizations


class ReadOnlyAdminMixin:
    """Rows that other paths write (the API, the webhook, the scheduled jobs): the console shows them and acts on
    them through actions, never by editing. `deletable = True` keeps deleting (dismissing a notification)."""

    deletable = False

    def get_readonly_fields(self, request, obj=None):
        """Every shown field (all of the row's fields but the excluded ones, unless `fields` names them)."""
        excluded = self.exclude or ()
        names = self.fields or [field.name for field in self.model._meta.fields if field.name not in excluded]
        return list(dict.fromkeys([*shown_all(self.model, names), *super().get_readonly_fields(request, obj)]))

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return self.deletable and super().has_delete_permission(request, obj)


class OperatorPermissionsMixin:
    """Console rights come from membership, not from Django's per-model permission table."""

    def has_module_permission(self, request):
        return is_operator(request.user)

    def has_view_permission(self, request, obj=None):
        return is_operator(request.user)

    def has_add_permission(self, request, *args):
        return is_operator(request.user)

    def has_change_permission(self, request, obj=None):
        return is_operator(request.user)

    def has_delete_permission(self, request, obj=None):
        return is_operator(request.user)


class OrganizationListFilter(admin.SimpleListFilter):
    """The organizations the operator sees (never another organization's name)."""

    title = "organization"
    parameter_name = "organization"

    def lookups(self, request, model_admin):
        return [(str(pk), name) for pk, name in
                visible_organizations(request.user).order_by("name").values_list("pk", "name")]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(**{organization_path(queryset.model): _uuid_or_refused(self.value())})


class BookListFilter(admin.SimpleListFilter):
    """One organization's test or live books, among those the operator sees (the dashboard links here)."""

    title = "book"
    parameter_name = "book"

    def lookups(self, request, model_admin):
        return [(str(book.pk), str(book)) for book in visible_books(request.user)]

    def queryset(self, request, queryset):
        return queryset if self.value() is None else queryset.filter(book_id=_uuid_or_refused(self.value()))


def _uuid_or_refused(value: str) -> UUID:
    """A filter's id from the address; one that is not a UUID is a bad address (the list shows its "invalid
    filter" notice), never a 500."""
    parsed = uuid_or_none(value)
    if parsed is None:
        raise IncorrectLookupParameters(f"Not an id: {value[:40]!r}")
    return parsed


class VisibleValuesListFilter(admin.AllValuesFieldListFilter):
    """The values of a related row's field among the rows the operator sees (Django's own filter reads the
    related table whole, every organization's values)."""

    def __init__(self, field, request, params, model, model_admin, field_path):
        super().__init__(field, request, params, model, model_admin, field_path)
        self.lookup_choices = (model_admin.get_queryset(request).exclude(**{f"{field_path}__isnull": True})
                               .order_by(field_path).values_list(field_path, flat=True).distinct())


def _scoped_list_filter(model, path: str):
    """The filter class for a list_filter entry naming a field by path, when Django's default would offer rows
    or values of other organizations: a related field (`agent`) or a field across a relation without fixed
    choices (`payment__provider`). None keeps Django's choice."""
    field, crossed = None, False
    for name in path.split("__"):
        try:
            field = model._meta.get_field(name)
        except FieldDoesNotExist:
            return None
        if field.is_relation:
            model, crossed = field.related_model, True
    if field is None:
        return None
    if field.is_relation:
        return admin.RelatedOnlyFieldListFilter
    if crossed and not field.choices and not isinstance(field, (models.BooleanField, models.DateField)):
        return VisibleValuesListFilter
    return None


class SameBookModelForm(forms.ModelForm):
    """Related rows must belong to the row's own book: the organization and its test or live books."""

    def clean(self):
        cleaned = super().clean()
        related = {name: value for name, value in cleaned.items()
                   if isinstance(value, models.Model) and not isinstance(value, Book) and hasattr(value, "book_id")}
        book = cleaned.get("book")
        reference = book.pk if isinstance(book, Book) else getattr(self.instance, "book_id", None)
        if reference is None:  # a new inline row: its book is its parent's (the inline's own foreign key)
            parents = [value.book_id for name, value in related.items()
                       if isinstance(self.fields.get(name), InlineForeignKeyField)]
            reference = parents[0] if parents else None
        for name, value in related.items():
            if reference is not None and value.book_id != reference and name in self.fields:
                self.add_error(name, "Must belong to the same book (organization, test or live) as this record.")
        return cleaned

    def _post_clean(self):
        super()._post_clean()
        self._validate_conditional_unique_constraints()

    def _validate_conditional_unique_constraints(self):
        """Django skips a conditional unique constraint whose condition names a field outside the form (a customer's
        external id is unique among the customers not deleted, and `deleted_at` is read-only here), so a taken
        value would reach the database: a 500. Checked here with the row's own values of those fields, which are the
        ones saved; the error goes on the one field of the constraint beside the row's owner (its book)."""
        model, exclude = self.instance.__class__, self._get_validation_exclusions()
        for constraint in model._meta.constraints:
            if not (isinstance(constraint, models.UniqueConstraint) and constraint.fields
                    and constraint.condition is not None):
                continue
            outside = constraint.condition.referenced_base_fields & exclude
            if not outside or exclude.intersection(constraint.fields):  # checked by Django, or not at all
                continue
            try:
                constraint.validate(model, self.instance, exclude=exclude - outside)
            except ValidationError:
                named = [name for name in constraint.fields if name not in ScopedAdminMixin.OWNER_FIELDS]
                field = named[0] if len(named) == 1 and named[0] in self.fields else None
                self.add_error(field, self.instance.unique_error_message(model, named or constraint.fields))


# Fields no console list may be filtered by, whatever model or relation leads to them: a filter is an oracle even
# where the page hides the field (`?secret__startswith=whsec_A` answered, a character at a time, whether a webhook
# endpoint's signing secret starts so); secrets, and the digests and nonces that stand for them.
UNFILTERABLE_FIELDS = frozenset({"secret", "previous_secret", "earlier_secrets", "digest", "token_digest",
                                 "pay_token_digest", "pay_token_nonce", "password"})


class RefusedLookupsMixin:
    """A list's filters and a search (the list's or an autocomplete's) that the database or Python cannot take are
    refused as Django refuses any lookup it does not know, never a 500: on every console list, scoped or not."""

    def get_changelist_instance(self, request):
        """A filter value the database or Python cannot take (a NUL byte, a year past 9999, an address that is not
        one, a broken regular expression: Django's own lookups pass them through) is the list's "invalid filter"
        notice, as any lookup Django refuses, never a 500. Outside a transaction the failed count leaves nothing
        behind; inside one, a savepoint on the database the list reads is rolled back to. (Not a transaction of its
        own: one on the primary would keep a list the replica may serve on the primary, core/replica.py.)"""
        database = self.get_queryset(request).db
        try:
            if not connections[database].in_atomic_block:
                return super().get_changelist_instance(request)
            with transaction.atomic(using=database):
                return super().get_changelist_instance(request)
        except (ValueError, ArithmeticError, DataError) as refusal:  # decimal.Overflow is an ArithmeticError only
            raise IncorrectLookupParameters(refusal) from refusal

    def get_search_results(self, request, queryset, search_term):
        """A search term PostgreSQL cannot compare (a NUL byte, an unpaired surrogate) finds nothing: the autocomplete
        of a foreign key searches through here, outside the list's guard above."""
        if search_term and text_problem(search_term):
            return queryset.none(), False
        return super().get_search_results(request, queryset, search_term)


class ScopedAdminMixin(RefusedLookupsMixin, OperatorPermissionsMixin):
    form = SameBookModelForm

    def lookup_allowed(self, lookup, value, request=None):
        if UNFILTERABLE_FIELDS.intersection(lookup.split(models.constants.LOOKUP_SEP)):
            return False
        return super().lookup_allowed(lookup, value, request)

    class Media:
        css = {"all": ["console/console.css"]}

    def get_queryset(self, request):
        return scoped(super().get_queryset(request), request.user)

    def response_action(self, request, queryset):
        """An action on a selection that names no record of this kind (a form edited by hand) is a warning on the
        list: Django filters by the ids as sent, and an id that does not parse raised a 500. ("Select all" acts on
        the whole list, whatever ids come with it.)"""
        try:
            if not forms.BooleanField().to_python(request.POST.get("select_across")):
                for value in request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME):
                    self.model._meta.pk.to_python(value)
        except ValidationError:
            self.message_user(request, "The selection names rows that do not exist; select them again.",
                              messages.WARNING)
            return None  # the list again, as after any action that did not run
        return super().response_action(request, queryset)

    def _choices(self, db_field, request, queryset):
        if queryset is None:  # the related admin's ordering, as Django would pick
            queryset = self.get_field_queryset(None, db_field, request)
        if queryset is None:
            queryset = db_field.related_model._default_manager.all()
        return scoped(queryset, request.user)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        kwargs["queryset"] = self._choices(db_field, request, kwargs.get("queryset"))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_manytomany(self, db_field, request, **kwargs):
        kwargs["queryset"] = self._choices(db_field, request, kwargs.get("queryset"))
        return super().formfield_for_manytomany(db_field, request, **kwargs)

    column_labels: dict = {}  # shorter list headings than the fields' names, where a list must stay narrow

    def get_list_display(self, request):
        """Money, quantities, dates and JSON through the console's one formatter (accounts/admin_display.py)."""
        return shown_all(self.model, super().get_list_display(request), self.column_labels)

    # A stored record never moves to another book or organization: its events, invoices and keys stay where they
    # are, so a move would split it from them (and hand a customer to another organization). The field stays in
    # the form, disabled (the posted value is ignored), so the unique checks that include it still run: a read-only
    # field would leave the form and with it those checks (a taken external id would reach the database).
    OWNER_FIELDS = ("book", "organization")

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None:
            for name in self.OWNER_FIELDS:
                if name in form.base_fields:
                    form.base_fields[name].disabled = True
        return form

    def get_readonly_fields(self, request, obj=None):
        return shown_all(self.model, super().get_readonly_fields(request, obj))

    def get_exclude(self, request, obj=None):
        """A field shown through a display function is not also a form field."""
        stand_ins = [name.raw_field for name in self.get_readonly_fields(request, obj) if hasattr(name, "raw_field")]
        return [*(super().get_exclude(request, obj) or ()), *stand_ins]

    def get_fieldsets(self, request, obj=None):
        """Read-only fields named in `fields` or `fieldsets` by the display functions that stand in for them."""
        readonly = self.get_readonly_fields(request, obj)

        def entry(name):
            if isinstance(name, (list, tuple)):
                return type(name)(entry(item) for item in name)
            replacement = shown(self.model, name)
            return replacement if replacement in readonly else name
        return [(title, {**options, "fields": [entry(name) for name in options["fields"]]})
                for title, options in super().get_fieldsets(request, obj)]

    def get_list_filter(self, request):
        """The scope filter first; related-field filters offer only rows and values of visible rows."""
        filters = []
        for entry in super().get_list_filter(request):
            scoped_filter = _scoped_list_filter(self.model, entry) if isinstance(entry, str) else None
            filters.append((entry, scoped_filter) if scoped_filter else entry)
        field_names = {field.name for field in self.model._meta.fields}
        scope_filter = BookListFilter if "book" in field_names else \
            OrganizationListFilter if "organization" in field_names else None
        return [scope_filter, *filters] if scope_filter else filters


class OwnerColumnMixin:
    """An operator of several organizations (or a superuser) sees whose each row is, as a last column naming its
    `owner_field`, unless the list is filtered to one (the scope filter's parameter is the field's name): the rows
    of two organizations are otherwise told apart by nothing on the page."""

    owner_field = ""

    def get_list_display(self, request):
        columns = super().get_list_display(request)
        organizations = visible_organization_ids(request.user)
        if (self.owner_field in columns or self.owner_field not in {field.name for field in self.model._meta.fields}
                or request.GET.get(self.owner_field) or (organizations is not None and len(organizations) <= 1)):
            return columns
        return [*columns, self.owner_field]


class OrganizationScopedAdmin(OwnerColumnMixin, ScopedAdminMixin, admin.ModelAdmin):
    """Rows of an organization itself (members, keys, the request log)."""

    owner_field = OrganizationListFilter.parameter_name


class BookScopedAdmin(OwnerColumnMixin, ScopedAdminMixin, admin.ModelAdmin):
    """Rows of one organization's test or live books."""

    owner_field = BookListFilter.parameter_name
    list_select_related = ("book__organization",)


class ScopedInlineMixin(ScopedAdminMixin):
    """Inline rows: scoped like their parent's admin (they belong to the same book); tables without each row's
    name above its cells."""

    template = "admin/console/tabular.html"
