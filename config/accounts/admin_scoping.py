"""Multi-organization safety for the operator console.

A staff user sees and edits only the organizations they are a member of (superusers see all).
Every ModelAdmin of an org-owned table subclasses `BookScopedAdmin` (rows with a `book`) or
`OrganizationScopedAdmin` (rows with an `organization`), so querysets, object lookups by URL,
actions and foreign-key choices are all filtered the same way.
"""
from django.contrib import admin

from config.accounts.models import Book, Membership, Organization


def visible_organization_ids(user):
    """None means every organization (superuser)."""
    if user.is_superuser:
        return None
    return list(Membership.objects.filter(user=user).values_list("organization_id", flat=True))


def visible_organizations(user):
    ids = visible_organization_ids(user)
    return Organization.objects.all() if ids is None else Organization.objects.filter(id__in=ids)


def visible_books(user):
    ids = visible_organization_ids(user)
    return Book.objects.select_related("organization") if ids is None else \
        Book.objects.select_related("organization").filter(organization_id__in=ids)


def is_operator(user) -> bool:
    """Staff members of at least one organization may use the console (superusers always)."""
    if not (user.is_active and user.is_staff):
        return False
    return user.is_superuser or Membership.objects.filter(user=user).exists()


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


class ScopedAdminMixin(OperatorPermissionsMixin):
    organization_lookup = "organization"  # the path from the row to its organization

    def scope_queryset(self, request, queryset):
        ids = visible_organization_ids(request.user)
        if ids is None:
            return queryset
        return queryset.filter(**{f"{self.organization_lookup}__in": ids})

    def get_queryset(self, request):
        return self.scope_queryset(request, super().get_queryset(request))

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        related = db_field.related_model
        if related is Organization:
            kwargs["queryset"] = visible_organizations(request.user)
        elif related is Book:
            kwargs["queryset"] = visible_books(request.user)
        elif hasattr(related, "book") or hasattr(related, "organization"):
            lookup = "book__organization" if any(f.name == "book" for f in related._meta.fields) else "organization"
            ids = visible_organization_ids(request.user)
            if ids is not None:
                kwargs["queryset"] = related._default_manager.filter(**{f"{lookup}__in": ids})
        return super().formfield_for_foreignkey(db_field, request, **kwargs)


class OrganizationScopedAdmin(ScopedAdminMixin, admin.ModelAdmin):
    organization_lookup = "organization"


class BookScopedAdmin(ScopedAdminMixin, admin.ModelAdmin):
    organization_lookup = "book__organization"
    list_select_related = ("book__organization",)


class ScopedInlineMixin(ScopedAdminMixin):
    organization_lookup = "book__organization"

