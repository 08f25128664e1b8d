from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin as DjangoUserAdmin
from django.template.response import TemplateResponse

from config.accounts.admin_scoping import OrganizationScopedAdmin, is_operator, visible_organization_ids
from config.accounts.models import (ApiKey, ApiRequestLog, Book, Environment, Invitation,
                                   Membership, Organization, User)
from config.accounts.services import api_key_mint, api_key_revoke
from config.core import clock
from config.core.errors import ApiError


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(OrganizationScopedAdmin):
    organization_lookup = "id"
    list_display = ["name", "business_name", "billing_email", "created_at"]
    search_fields = ["name", "business_name", "billing_email"]
    date_hierarchy = "created_at"
    readonly_fields = ["id", "created_at", "updated_at"]
    inlines = [MembershipInline]

    def get_queryset(self, request):
        queryset = admin.ModelAdmin.get_queryset(self, request)
        ids = visible_organization_ids(request.user)
        return queryset if ids is None else queryset.filter(id__in=ids)

    def has_add_permission(self, request, *args):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser

    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        for environment in Environment.values:
            Book.objects.get_or_create(organization=obj, environment=environment)


@admin.register(User)
class UserAdmin(DjangoUserAdmin):
    ordering = ["email"]
    list_display = ["email", "first_name", "last_name", "is_staff", "is_active", "date_joined"]
    search_fields = ["email", "first_name", "last_name"]
    fieldsets = (
        (None, {"fields": ("email", "password")}),
        ("Personal info", {"fields": ("first_name", "last_name")}),
        ("Permissions", {"fields": ("is_active", "is_staff", "is_superuser")}),
        ("Dates", {"fields": ("last_login", "date_joined")}),
    )
    add_fieldsets = ((None, {"classes": ("wide",), "fields": ("email", "password1", "password2")}),)

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        ids = visible_organization_ids(request.user)
        return queryset if ids is None else queryset.filter(memberships__organization_id__in=ids).distinct()

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
class MembershipAdmin(OrganizationScopedAdmin):
    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role", "organization"]
    search_fields = ["user__email", "organization__name"]
    autocomplete_fields = ["user"]
    list_select_related = ["user", "organization"]


class ApiKeyMintForm(forms.ModelForm):
    class Meta:
        model = ApiKey
        fields = ["membership", "name", "key_type", "scope", "environment"]


@admin.action(description="Revoke selected keys")
def revoke_keys(modeladmin, request, queryset):
    now = clock.now()
    for key in queryset.filter(revoked_at__isnull=True):
        api_key_revoke(key=key, now=now)
    modeladmin.message_user(request, "Selected keys are revoked.", messages.SUCCESS)


@admin.register(ApiKey)
class ApiKeyAdmin(OrganizationScopedAdmin):
    list_display = ["prefix", "name", "organization", "key_type", "environment", "scope", "membership",
                    "created_at", "last_used_at", "revoked_at"]
    list_filter = ["key_type", "environment", "scope", "organization"]
    search_fields = ["prefix", "name", "membership__user__email", "organization__name"]
    date_hierarchy = "created_at"
    list_select_related = ["organization", "membership__user"]
    actions = [revoke_keys]
    readonly_fields = ["id", "organization", "book", "membership", "key_type", "scope", "environment", "prefix",
                       "created_at", "last_used_at", "revoked_at"]
    fields = ["id", "name", "organization", "book", "membership", "key_type", "scope", "environment", "prefix",
              "created_at", "last_used_at", "revoked_at"]

    def get_form(self, request, obj=None, **kwargs):
        if obj is None:
            kwargs["form"] = ApiKeyMintForm
            kwargs["fields"] = ApiKeyMintForm.Meta.fields
        return super().get_form(request, obj, **kwargs)

    def get_fields(self, request, obj=None):
        return ApiKeyMintForm.Meta.fields if obj is None else self.fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "membership":
            ids = visible_organization_ids(request.user)
            queryset = Membership.objects.select_related("user", "organization")
            kwargs["queryset"] = queryset if ids is None else queryset.filter(organization_id__in=ids)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request, obj, form, change):
        if change:
            return super().save_model(request, obj, form, change)
        data = form.cleaned_data
        try:
            key, raw_key = api_key_mint(membership=data["membership"], key_type=data["key_type"],
                                        environment=data["environment"], scope=data["scope"], name=data["name"])
        except ApiError as exc:
            raise forms.ValidationError(exc.message)
        form.instance = key
        obj.pk = key.pk
        request.minted_raw_key = raw_key

    def response_add(self, request, obj, post_url_continue=None):
        raw_key = getattr(request, "minted_raw_key", None)
        if raw_key is None:
            return super().response_add(request, obj, post_url_continue)
        key = ApiKey.objects.get(pk=obj.pk)
        context = {**self.admin_site.each_context(request), "title": "API key created", "key": key,
                   "raw_key": raw_key, "opts": self.model._meta}
        return TemplateResponse(request, "admin/accounts/api_key_minted.html", context)

    def has_delete_permission(self, request, obj=None):
        return False  # keys are revoked, never deleted: the request log points at them


@admin.register(ApiRequestLog)
class ApiRequestLogAdmin(OrganizationScopedAdmin):
    list_display = ["created_at", "organization", "api_key", "method", "path", "status", "ip"]
    list_filter = ["method", "status", "organization"]
    search_fields = ["path", "ip", "api_key__prefix"]
    date_hierarchy = "created_at"
    list_select_related = ["organization", "api_key"]

    def has_add_permission(self, request, *args):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(Invitation)
class InvitationAdmin(OrganizationScopedAdmin):
    list_display = ["email", "organization", "role", "created_at", "expires_at", "accepted_at"]
    list_filter = ["role", "organization"]
    search_fields = ["email"]
    readonly_fields = ["digest"]

    def has_add_permission(self, request, *args):
        return False


