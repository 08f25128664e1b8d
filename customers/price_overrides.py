"""A book's price overrides (contract.md "Price overrides"): its own rates for a catalog service, rates for a model
the catalog lacks, or a percentage off a provider's list prices, for events dated at or after `effective_from`.

Creating or deleting one prices the affected events again, as a job (as map-model does): inline when few events are
affected, otherwise in the background, the analytics rollup moving with the events. Cost only: revenue, invoices and
credit pools never read it.
"""
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q

from catalog.costing import TOKEN_UNIT
from catalog.models import PriceOverride, ServiceEntry
from catalog.resolution import (catalog_provider_name, normalize_model, normalize_provider, resolve_services,
                                too_long_once_normalized)
from core.errors import BadRequest, Conflict, NotFound
from core.progress import NO_PROGRESS, Progress
from core.scoping import get_owned, owned
from jobs.models import Job, JobKind, JobStatus
from jobs.services import job_create, job_run_inline, job_start
from customers.backfill import events_price_in_chunks
from customers.models import UsageEvent

RATE_FIELDS = ("input_cost", "output_cost", "cache_read_cost", "cache_write_cost", "cache_write_1h_cost", "unit_cost")
TOKEN_RATE_FIELDS = RATE_FIELDS[:-1]
# The token rates a per-unit service has no use for (its inputCost is its rate per unit), by the API's names.
TOKEN_ONLY_RATES = {"output_cost": "outputCost", "cache_read_cost": "cacheReadCost",
                    "cache_write_cost": "cacheWriteCost", "cache_write_1h_cost": "cacheWrite1hCost"}


@dataclass(frozen=True)
class OverrideChange:
    override: PriceOverride
    events_affected: int  # events dated at or after effectiveFrom that it may price
    events_repriced: int  # whose cost changed (0 while the job runs in the background)
    scheduled: bool
    job: Job


@dataclass(frozen=True)
class Target:
    """What an override prices, as a job's arguments carry it (the override itself may be gone)."""

    kind: str  # service | model | provider
    first: str  # the service id, the model, or the provider
    second: str  # the model's provider; "" otherwise

    @classmethod
    def of(cls, override: PriceOverride) -> "Target":
        if override.service_id is not None:
            return cls("service", str(override.service_id), "")
        if override.model is not None:
            return cls("model", override.model, override.model_provider)
        return cls("provider", override.model_provider, "")


def _checked(*, service_id, model, model_provider, discount_percent, rates: dict) -> dict:
    """The override's target and rates, or a 400 naming what is wrong."""
    problems = []
    given = {name: value for name, value in rates.items() if value is not None}
    if service_id is not None:
        if model is not None or discount_percent is not None:
            problems.append("serviceId: Send a serviceId alone, or model and modelProvider, or modelProvider and "
                            "discountPercent.")
        service = ServiceEntry.objects.filter(pk=service_id, is_active=True).first()
        if service is None:
            raise NotFound("Catalog service not found")
        target = {"service": service}
        if service.cost_unit != TOKEN_UNIT:  # its inputCost is its USD per unit, as the catalog's (contract)
            problems += [f"{field}: {service.provider}/{service.canonical_name} is priced per {service.cost_unit}, "
                         f"not per token: send unitCost (or inputCost), its USD per {service.cost_unit}."
                         for name, field in TOKEN_ONLY_RATES.items() if name in given]
    elif model is not None:
        if model_provider is None:
            problems.append("modelProvider: This field is required with model.")
        if discount_percent is not None:
            problems.append("discountPercent: A discount applies to a provider's list prices: send modelProvider "
                            "without model.")
        target = {"model": normalize_model(model), "model_provider": normalize_provider(model_provider or "")}
        problems += too_long_once_normalized(PriceOverride, model=target["model"], modelProvider=target["model_provider"])
        if not problems:
            known = resolve_services(book=None, pairs=[(target["model"], target["model_provider"])])
            entry = next(iter(known.values()))
            if entry is not None:
                problems.append(f"model: {target['model']!r} from {target['model_provider']!r} is in the catalog "
                                f"({entry.provider}/{entry.canonical_name}, serviceId {entry.pk}); override it by "
                                f"serviceId.")
    elif discount_percent is not None:
        if model_provider is None:
            problems.append("modelProvider: This field is required with discountPercent.")
        if given:
            problems.append("discountPercent: A discount takes no rates; send either rates or a discount.")
        target = {"model_provider": catalog_provider_name(normalize_provider(model_provider or "")),
                  "discount_percent": discount_percent}
        problems += too_long_once_normalized(PriceOverride, modelProvider=target["model_provider"])
    else:
        raise BadRequest(["serviceId: Send a serviceId, or model and modelProvider, or modelProvider and "
                          "discountPercent."])
    if discount_percent is None:
        if not given:
            problems.append("inputCost: Send at least one of inputCost, outputCost, cacheReadCost, cacheWriteCost, "
                            "cacheWrite1hCost, unitCost.")
        elif "unit_cost" in given and len(given) > 1:
            problems.append("unitCost: A unit price prices the event's quantity; send it without token rates.")
    if problems:
        raise BadRequest(problems)
    return {**target, **rates}


def _affected(book, target: Target, effective_from: datetime | None):
    """The events an override of `target` from `effective_from` (None: of every date) may price (a superset for a
    provider discount: pricing an event again that it does not touch changes nothing)."""
    events = owned(UsageEvent, book)
    if effective_from is not None:
        events = events.filter(usage_date__gte=effective_from)
    if target.kind == "service":
        return events.filter(Q(service_id=target.first) | Q(services__contains=[{"serviceId": target.first}]))
    if target.kind == "model":
        return events.filter(Q(model=target.first, model_provider=target.second)
                             | Q(services__contains=[{"model": target.first, "modelProvider": target.second}]))
    services = ServiceEntry.objects.filter(provider=target.first).values("pk")
    return events.filter(Q(service_id__in=services) | Q(services__isnull=False))


def _touched_by(target: Target):
    """Which events of `_affected`'s selection the override prices: for a provider discount, a multi-service event
    with a part priced by one of the provider's entries (the selection holds every multi-service event, which no
    index could narrow). Any other is left as it is: priced again from scratch, its parts would take today's
    catalog and aliases, which priced events never do (an entry a catalog load deactivated since left it with cost
    null, a remapped model moved its cost)."""
    if target.kind != "provider":
        return None
    entries = {str(pk) for pk in ServiceEntry.objects.filter(provider=target.first).values_list("pk", flat=True)}
    return lambda event: event.services is None or any(part.get("serviceId") in entries for part in event.services)


def events_reprice_for_override(*, book, target: Target, effective_from: datetime | None,
                                progress: Progress = NO_PROGRESS, until: datetime | None = None) -> int:
    """Price the events an override touches again, in chunks by id (one transaction each, rows locked), writing
    those whose cost changed; returns how many changed. Safe to run twice. A run taken up again goes on after
    the last event an earlier run walked (every affected event is walked: none drops out once priced). `until`:
    only events dated before it (a restored month's)."""
    events = _affected(book, target, effective_from)
    if until is not None:
        events = events.filter(usage_date__lt=until)
    progress.expect(progress.resumed.rest(events).count())
    return events_price_in_chunks(book, events, progress, unprice=True, only=_touched_by(target))


def override_reprice_work(book, target: Target, effective_from: datetime | None, until: datetime | None = None):
    def work(progress: Progress) -> dict:
        return {"eventsRepriced": events_reprice_for_override(book=book, target=target, effective_from=effective_from,
                                                              progress=progress, until=until)}
    return work


def restored_month_reprice_start(*, book, start: datetime, end: datetime, created_by: str = "") -> list:
    """After a month [start, end) came back from its archive: price its events again under each override of the
    book in force for some of its days, a job each (queued). One made while the month was out found none of its
    events; one made shortly before the detach may have had its job run after it. Pricing again under the others
    changes nothing (safe to run twice), and which override saw the month is not recorded. An override deleted
    meanwhile left no trace to go by: events it priced keep its price (docs/operations.md)."""
    jobs = []
    for override in owned(PriceOverride, book).order_by("pk"):
        since = start if override.effective_from is None else max(override.effective_from, start)
        if since >= end:
            continue
        target = Target.of(override)
        job = job_create(book=book, kind=JobKind.COST_OVERRIDE_REPRICE,
                         task_path="customers.tasks.reprice_month_for_price_override_task",
                         task_args=(book.pk, target.kind, target.first, target.second, since.isoformat(),
                                    end.isoformat()), created_by=created_by)
        job_start(job)
        jobs.append(job)
    return jobs


def _affected_count(book, override: PriceOverride) -> int:
    """How many events the override may price. Counted before it is stored or deleted: that takes the book's price
    lock (accounts/book_generations.py, "Prices in force"), which every batch recording into the book waits for, and
    a count may read the book's whole ledger."""
    return _affected(book, Target.of(override), override.effective_from).count()


def _repricing_job(book, override: PriceOverride, created_by: str, affected: int):
    """The job that prices again the events the override touches (queued when many, else to run inline), created
    in the caller's transaction: the override is never stored or deleted without it."""
    target = Target.of(override)
    since = override.effective_from
    scheduled = affected > settings.MAP_MODEL_INLINE_BACKFILL_LIMIT
    job = job_create(book=book, kind=JobKind.COST_OVERRIDE_REPRICE,
                     task_path="customers.tasks.reprice_for_price_override_task",
                     task_args=(book.pk, target.kind, target.first, target.second, since and since.isoformat()),
                     created_by=created_by, total=affected,
                     status=JobStatus.QUEUED if scheduled else JobStatus.RUNNING)
    if scheduled:
        job_start(job)
    return job, affected, scheduled


def _reprice(book, override: PriceOverride, job, affected: int, scheduled: bool) -> OverrideChange:
    """After the commit: the answer, running the job first when it is inline (a run that fails goes on in the
    background, and the answer says so: the override is stored, so its answer is never a 5xx)."""
    if not scheduled:
        result = job_run_inline(job, override_reprice_work(book, Target.of(override), override.effective_from))
        if result is not None:
            return OverrideChange(override, affected, result["eventsRepriced"], scheduled=False, job=job)
    return OverrideChange(override, affected, 0, scheduled=True, job=job)


def price_override_create(*, book, data: dict, created_by: str = "") -> OverrideChange:
    """Store an override, then price the events it touches again (a job)."""
    rates = {name: data.get(name) for name in RATE_FIELDS}
    fields = _checked(service_id=data.get("service_id"), model=data.get("model"),
                      model_provider=data.get("model_provider"), discount_percent=data.get("discount_percent"),
                      rates=rates)
    # The override and its repricing job in one transaction: an override stored without its job would leave the
    # events it touches at their old cost for good.
    override = PriceOverride(book=book, effective_from=data.get("effective_from"), note=data.get("note") or "",
                             created_by=created_by[:64], **fields)
    affected = _affected_count(book, override)
    with transaction.atomic():
        try:
            override.save(force_insert=True)
        except IntegrityError:  # raised on: the transaction rolls back whole
            raise Conflict(["effectiveFrom: The book already has an override of this service, model or provider "
                            "from this instant (or, without effectiveFrom, one for every date); delete it first."])
        job = _repricing_job(book, override, created_by, affected)
    return _reprice(book, override, *job)


def price_override_delete(*, book, override_id, created_by: str = "") -> OverrideChange:
    """Delete an override, then price the events it priced again without it (a job)."""
    with transaction.atomic():  # the deletion with its repricing job, as for a new override
        override = get_owned(PriceOverride, book, override_id)
        affected = _affected_count(book, override)
        deleted_id = override.pk
        override.delete()
        override.pk = deleted_id  # the answer names the override it deleted (Django clears the id)
        job = _repricing_job(book, override, created_by, affected)
    return _reprice(book, override, *job)


def price_override_list(*, book):
    """In the model's order, then by id: two overrides of one instant (both without effectiveFrom, made in one
    microsecond) came back in either order, and a page by offset could show one twice and skip the other."""
    return owned(PriceOverride, book).select_related("service").order_by(*PriceOverride._meta.ordering, "id")
