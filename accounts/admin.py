"""Operator console for organizations, members, API keys, invitations and the request log.

Members and keys are managed by an organization's owners and admins (spec: keys are minted by an owner or admin
in the dashboard); other members see them read-only. A key is minted through `api_key_mint` and its raw value is
shown once; keys are revoked, never deleted (the request log points at them).
"""
from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.contrib.auth.models import Group
from django.forms.models import BaseInlineFormSet
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.template.response import TemplateResponse

from accounts.admin_actions import act_on_rows, error_text
from accounts.admin_display import presence_filter
from accounts.admin_scoping import (OrganizationScopedAdmin, ReadOnlyAdminMixin, RefusedLookupsMixin, SameBookModelForm,
                                           ScopedInlineMixin, is_operator, may_act, scoped)
from accounts.models import (ApiKey, ApiRequestLog, Book, Environment, Invitation, KeyScope, KeyType,
                                   Membership, Organization, Role, User)
from accounts.services import api_key_mint, api_key_revoke
from core import clock
from core.errors import ApiError

MANAGERS = frozenset({Role.OWNER, Role.ADMIN})

admin.site.unregister(Group)  # console rights come from memberships, not from Django's groups


def managed_organizations(user):
    """Organizations where the user may manage members and keys (owner or admin; superusers: all)."""
    organizations = Organization.objects.all()
    if user.is_superuser:
        return organizations
    return organizations.filter(memberships__user=user, memberships__role__in=MANAGERS)


def manages_an_organization(request) -> bool:
    """Whether the operator manages members and keys somewhere: read once per request (every page's app list asks
    each admin whether it may add)."""
    manages = getattr(request, "_manages_an_organization", None)
    if manages is None:
        manages = request._manages_an_organization = managed_organizations(request.user).exists()
    return manages


class ManagedByOwnersMixin:
    """Writes need the owner or admin role in the row's organization; every operator reads."""

    def _manages(self, request, obj) -> bool:
        if obj is None:
            return is_operator(request.user)
        organization_id = obj.pk if isinstance(obj, Organization) else obj.organization_id
        return may_act(request.user, organization_id, MANAGERS)

    def has_change_permission(self, request, obj=None):
        return super().has_change_permission(request, obj) and self._manages(request, obj)

    def has_delete_permission(self, request, obj=None):
        return super().has_delete_permission(request, obj) and self._manages(request, obj)


class MembershipInlineForm(SameBookModelForm):
    """A member's row on the organization page keeps its person: moving it to another person handed them that
    member's API keys and the requests logged under them."""

    def clean(self):
        cleaned = super().clean()
        if self.instance.pk is not None and "user" in self.changed_data:
            raise forms.ValidationError("A member's person cannot change: invite the new person, then remove this "
                                        "member.")
        return cleaned


class MembershipInlineFormSet(BaseInlineFormSet):
    """A member with API keys is not removed here: keys are revoked, never deleted (the request log points at them),
    and removing the member deleted them with every request they logged. The membership's own page refuses it the
    same way. (Checked on the formset: a row marked for deletion is not validated as a form.)"""

    def clean(self):
        super().clean()
        for form in self.deleted_forms:
            if form.instance.pk is not None and form.instance.api_keys.exists():
                raise forms.ValidationError(f"{form.instance.user} has API keys, which are never deleted (the request "
                                            "log points at them): revoke them on the API keys page instead of "
                                            "removing the member.")


class MembershipInline(ManagedByOwnersMixin, ScopedInlineMixin, admin.TabularInline):
    model = Membership
    form = MembershipInlineForm
    formset = MembershipInlineFormSet
    extra = 0
    autocomplete_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]

    def has_add_permission(self, request, obj=None):
        return self._manages(request, obj)


@admin.register(Organization)
class OrganizationAdmin(ManagedByOwnersMixin, OrganizationScopedAdmin):
    list_display = ["name", "business_name", "billing_email", "member_count", "created_at"]
    search_fields = ["name", "business_name", "billing_email"]
    date_hierarchy = "created_at"
    ordering = ["name"]
    readonly_fields = ["id", "created_at", "updated_at"]
    inlines = [MembershipInline]
    fieldsets = [
        (None, {"fields": ["id", "name", "billing_email", "created_at", "updated_at"]}),
        ("Billing profile (printed on invoices and used by their emails)", {
            "fields": ["business_name", "address", "tax_id", "logo", "sender_name", "sender_email",
                       "payment_instructions"]}),
    ]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(member_count=Count("memberships"))

    @admin.display(description="members", ordering="member_count")
    def member_count(self, organization) -> int:
        return organization.member_count

    def has_add_permission(self, request, *args):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        for environment in Environment.values:
            Book.objects.get_or_create(organization=obj, environment=environment)


@admin.register(User)
class UserAdmin(RefusedLookupsMixin, DjangoUserAdmin):
    """Users of the organizations the operator sees; only superusers create or change accounts."""

    ordering = ["email"]
    list_display = ["email", "first_name", "last_name", "is_staff", "is_active", "date_joined"]
    list_filter = ["is_staff", "is_superuser", "is_active"]
    search_fields = ["email", "first_name", "last_name"]
    date_hierarchy = "date_joined"
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Personal info", {"fields": ("first_name", "last_name")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)

    def get_queryset(self, request):
        return scoped(super().get_queryset(request), request.user)

    def has_module_permission(self, request):
        return is_operator(request.user)

    def has_view_permission(self, request, obj=None):
        return is_operator(request.user)

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_add_permission(self, request):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


@admin.register(Membership)
class MembershipAdmin(ManagedByOwnersMixin, OrganizationScopedAdmin):
    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role"]
    search_fields = ["user__email", "organization__name"]
    date_hierarchy = "created_at"
    autocomplete_fields = ["user"]
    list_select_related = ["user", "organization"]

    def has_add_permission(self, request):
        # Only where the operator manages an organization: a finance member was offered a form whose organization
        # list was empty.
        return super().has_add_permission(request) and manages_an_organization(request)

    def has_delete_permission(self, request, obj=None):
        if obj is None and not manages_an_organization(request):
            return False  # no "Delete selected" action that could only be refused
        return super().has_delete_permission(request, obj)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "organization":
            kwargs["queryset"] = managed_organizations(request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class ApiKeyMintForm(forms.Form):
    membership = forms.ModelChoiceField(queryset=Membership.objects.none(), help_text="Whose key it is: the key acts "
                                        "with this member's role in their organization.")
    name = forms.CharField(max_length=255, required=False)
    key_type = forms.ChoiceField(choices=KeyType.choices, initial=KeyType.SECRET)
    scope = forms.ChoiceField(choices=KeyScope.choices, initial=KeyScope.FULL,
                              help_text="Secret keys only: full, ingest-only (record usage) or legal (matters).")
    environment = forms.ChoiceField(choices=Environment.choices, initial=Environment.TEST)

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["membership"].queryset = (Membership.objects.select_related("user", "organization")
                                              .filter(organization__in=managed_organizations(user)))


@admin.register(ApiKey)
class ApiKeyAdmin(ManagedByOwnersMixin, OrganizationScopedAdmin):
    # What fits a 1,366 px window; the organization is a search and on the key's page.
    list_display = ["prefix", "name", "key_type", "environment", "scope", "membership", "last_used_at",
                    "revoked_at"]
    list_filter = ["key_type", "environment", "scope", ("revoked_at", presence_filter("revoked", "Revoked", "Active"))]
    search_fields = ["prefix", "name", "membership__user__email", "organization__name"]
    date_hierarchy = "created_at"
    list_select_related = ["organization", "book__organization", "membership__user"]
    actions = ["revoke_keys"]
    fields = ["id", "name", "organization", "book", "membership", "key_type", "scope", "environment", "prefix",
              "created_at", "last_used_at", "revoked_at"]
    readonly_fields = [field for field in fields if field != "name"]

    def has_add_permission(self, request, *args):
        return manages_an_organization(request) and is_operator(request.user)

    def has_delete_permission(self, request, obj=None):
        return False  # keys are revoked, never deleted: the request log points at them

    def add_view(self, request, form_url="", extra_context=None):
        """Mint through `api_key_mint` and show the raw key once (only its digest is stored)."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = ApiKeyMintForm(request.POST if request.method == "POST" else None, user=request.user)
        if form.is_bound and form.is_valid():
            data = form.cleaned_data
            try:
                key, raw_key = api_key_mint(membership=data["membership"], key_type=data["key_type"],
                                            environment=data["environment"], scope=data["scope"], name=data["name"])
            except ApiError as error:
                form.add_error(None, error_text(error))
            else:
                self.log_addition(request, key, [{"added": {}}])
                return TemplateResponse(request, "admin/accounts/api_key_minted.html", {
                    **self.admin_site.each_context(request), "title": "API key created", "key": key,
                    "raw_key": raw_key, "opts": self.model._meta})
        return TemplateResponse(request, "admin/console/action_form.html", {
            **self.admin_site.each_context(request), "title": "Mint an API key", "form": form, "submit": "Mint key",
            "opts": self.model._meta, "apply": "mint",
            "intro": "The raw key is shown once, on the next page; only its digest is stored."})

    @admin.action(description="Revoke selected keys")
    def revoke_keys(self, request, queryset):
        now = clock.now()
        act_on_rows(self, request, queryset.filter(revoked_at__isnull=True),
                    lambda key: f"{api_key_revoke(key=key, now=now)} revoked.", roles=MANAGERS)


@admin.register(ApiRequestLog)
class ApiRequestLogAdmin(ReadOnlyAdminMixin, OrganizationScopedAdmin):
    list_display = ["created_at", "organization", "api_key", "method", "path", "status", "ip"]
    list_filter = ["method", "status"]
    search_fields = ["path", "ip", "api_key__prefix"]
    date_hierarchy = "created_at"
    list_select_related = ["organization", "api_key"]
    show_full_result_count = False  # the log grows without bound: no second count of the whole table


@admin.register(Invitation)
class InvitationAdmin(ManagedByOwnersMixin, ReadOnlyAdminMixin, OrganizationScopedAdmin):
    """Invitations are sent through the API (the token is emailed, never stored); deleting one withdraws it, which
    only an owner or admin of its organization may do, as only they invite."""

    deletable = True
    list_display = ["email", "organization", "role", "invited_by", "created_at", "expires_at", "accepted_at"]
    list_filter = ["role", ("accepted_at", presence_filter("accepted", "Accepted", "Waiting"))]
    search_fields = ["email", "organization__name"]
    date_hierarchy = "created_at"
    list_select_related = ["organization", "invited_by"]
    exclude = ["digest"]
