from django.contrib import admin

from catalog.models import ModelAlias, ServiceEntry
from accounts.admin_scoping import BookScopedAdmin, OperatorPermissionsMixin, ReadOnlyAdminMixin, RefusedLookupsMixin


@admin.register(ServiceEntry)
class ServiceEntryAdmin(RefusedLookupsMixin, OperatorPermissionsMixin, admin.ModelAdmin):
    """The global catalog: every operator reads it; `load_catalog` owns its rates (edits are overwritten on
    the next load, so only superusers may change rows, e.g. to deactivate one)."""

    # What fits a 1,366 px window beside the filters; the other rates, the context window and the source are on
    # the entry's page.
    list_display = ["canonical_name", "provider", "service_type", "input_cost", "output_cost", "cache_read_cost",
                    "is_active"]
    list_filter = ["source", "is_api", "is_active", "service_type", "provider"]
    search_fields = ["canonical_name", "display_name", "provider", "external_id"]
    ordering = ["provider", "canonical_name"]
    date_hierarchy = "updated_at"
    # The long-context, off-peak and service-tier rates too: `load_catalog` writes them (and overwrites any edit), and
    # pricing reads them in the shapes it writes (catalog/resolution.py `rates_for`), so one edited into another
    # shape would break the pricing of every event of the model in every book.
    readonly_fields = ["id", "external_id", "long_context", "off_peak", "service_tiers", "created_at", "updated_at"]
    # The analytics rollup stores the model label made from these (customers/rollup.py `_MODEL_OF`): changing them
    # on an entry with usage would split one model across two labels. Set when an entry is added, fixed after.
    label_fields = ["canonical_name", "is_api"]
    list_per_page = 100

    def get_readonly_fields(self, request, obj=None):
        readonly = super().get_readonly_fields(request, obj)
        return readonly if obj is None else [*readonly, *self.label_fields]

    def has_add_permission(self, request, *args):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return False  # deactivate instead: events and aliases point at entries


@admin.register(ModelAlias)
class ModelAliasAdmin(ReadOnlyAdminMixin, BookScopedAdmin):
    """Mappings are made through `model_map` (the action on unpriced usage events, or POST /v1/events/map-model),
    which refuses names the catalog knows and prices the events that waited for the mapping."""

    list_display = ["model", "model_provider", "service", "book", "created_at", "updated_at"]
    list_filter = ["model_provider"]
    search_fields = ["model", "model_provider", "service__canonical_name"]
    date_hierarchy = "created_at"
    list_select_related = ["book__organization", "service"]
