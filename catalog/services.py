"""Writes to the services catalog."""
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from catalog.models import ServiceEntry
from catalog.sources import ENTRY_FIELDS, catalog_rows
from core.hooks import Hooks

UPDATABLE_FIELDS = [field for field in ENTRY_FIELDS if field != "external_id"]

# Run on commit of a catalog load, with `result` (CatalogLoadResult) and `started_jobs` (a list the hooks append
# the jobs they start to, or None): the work of apps above the catalog, registered in config/hooks.py (customers
# prices the unpriced events that the loaded catalog, with its new entries, rates or cost rules, can price).
catalog_loaded = Hooks("catalog loaded")


@dataclass(frozen=True)
class CatalogLoadResult:
    created: int
    updated: int
    unchanged: int
    deactivated: int
    # external id -> the fields whose values changed (created entries: "new"), for the command's report
    changes: dict = field(default_factory=dict)


def catalog_load(*, now: datetime, rows: list[dict] | None = None, service_model=ServiceEntry,
                 started_jobs: list | None = None) -> CatalogLoadResult:
    """Upsert the catalog from its data files (or `rows`), keyed on `external_id`.

    Idempotent: an entry keeps its id across reloads and only changed rows are written; an entry that
    the data no longer lists becomes inactive (never deleted: events and aliases point at it); a listed
    inactive entry is reactivated. `service_model` lets a data migration pass its historical model. On commit
    it runs the `catalog_loaded` hooks, whatever changed: unpriced events are priced again even when only the cost
    rules changed; the jobs the hooks start (jobs) are appended to `started_jobs`.
    Bulk statements only, so a fresh database (and the test database) loads it in about a second.
    """
    rows = catalog_rows() if rows is None else rows
    known_fields = {field.name for field in service_model._meta.fields}  # a historical model may lack newer fields
    fields = [field for field in UPDATABLE_FIELDS if field in known_fields]
    rows = [{name: value for name, value in row.items() if name in known_fields} for row in rows]
    with transaction.atomic():
        existing = {entry.external_id: entry for entry in service_model.objects.all()}
        to_create, to_update, unchanged, changes = [], [], 0, {}
        for row in rows:
            entry = existing.get(row["external_id"])
            if entry is None:
                to_create.append(service_model(**row, is_active=True, created_at=now, updated_at=now))
                changes[row["external_id"]] = ["new"]
                continue
            changed = [name for name in fields if getattr(entry, name) != row[name]]
            if not changed and entry.is_active:
                unchanged += 1
                continue
            changes[row["external_id"]] = changed or ["reactivated"]
            for name in fields:
                setattr(entry, name, row[name])
            entry.is_active, entry.updated_at = True, now
            to_update.append(entry)
        listed = {row["external_id"] for row in rows}
        dropped = [entry.pk for external_id, entry in existing.items() if external_id not in listed and entry.is_active]
        service_model.objects.bulk_create(to_create, batch_size=1000)
        service_model.objects.bulk_update(to_update, [*fields, "is_active", "updated_at"], batch_size=500)
        service_model.objects.filter(pk__in=dropped).update(is_active=False, updated_at=now)
    result = CatalogLoadResult(created=len(to_create), updated=len(to_update), unchanged=unchanged,
                               deactivated=len(dropped), changes=changes)
    if service_model is ServiceEntry:  # not from a data migration: the hooks act on today's models
        transaction.on_commit(lambda: catalog_loaded.run(result=result, started_jobs=started_jobs))
    return result
