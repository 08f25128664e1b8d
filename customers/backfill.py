"""Pricing the events stored with cost null once they can be priced: after a model is mapped, and after the
catalog is loaded again.

A mapping (`catalog.ModelAlias`) can only point at an existing active entry: it never creates rates.
Backfill prices every event of the book saved with cost null whose model (or one of whose services)
is the mapped name; events already priced are never re-priced. Later events with that name resolve at
record time through the same alias. A catalog load (`load_catalog`: new entries, new rates, new cost rules)
prices every unpriced event of every book that the catalog can price now (`events_reprice_unpriced`), so
no unpriced event is a dead end: it waits for a mapping or for the catalog, and the console says which.
"""
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction

from catalog.event_pricing import (MAP_MODEL_BY_API, PriceList, ServiceUsage, price_event, standard_tier_reason,
                                   unpriced_reason)
from catalog.models import ModelAlias, ServiceEntry
from catalog.resolution import (normalize_model, normalize_provider, resolve_prices, resolve_services,
                                 too_long_once_normalized)
from core.errors import BadRequest, NotFound
from core.progress import NO_PROGRESS, Progress
from core.scoping import owned
from jobs.models import Job, JobKind, JobStatus
from jobs.services import job_create, job_run_inline, job_start
from customers.models import EventStatus, UsageEvent
from customers.rollup import analytics_rollup_add, analytics_rollup_subtract

BACKFILL_CHUNK = 500


@dataclass(frozen=True)
class Mapping:
    alias: ModelAlias
    created: bool
    events_waiting: int  # unpriced events naming the model when the mapping was made
    events_priced: int  # priced now (0 when the backfill was handed to a worker)
    scheduled: bool
    job: Job  # the backfill as a job: finished when it ran inline, queued when handed to a worker


def _waiting_events(book, model: str, provider: str):
    """Unpriced events naming this model: single-service by column, multi-service by their parts."""
    unpriced = owned(UsageEvent, book).filter(usage_cost__isnull=True)
    return unpriced.filter(model=model, model_provider=provider), unpriced.filter(model__isnull=True,
                                                                                 services__isnull=False)


def _names_model(event: UsageEvent, model: str, provider: str) -> bool:
    return any(part.get("model") == model and part.get("modelProvider") == provider for part in event.services)


def _event_parts(event: UsageEvent) -> list[ServiceUsage]:
    """What the event used, part by part; empty for an event that names neither a model nor services."""
    if event.services is not None:
        return [ServiceUsage.from_json(part) for part in event.services]
    if event.model is None or event.model_provider is None:
        return []
    return [ServiceUsage(event.model, event.model_provider, event.input_tokens, event.output_tokens,
                         event.cache_read_tokens, event.cache_write_tokens, event.quantity,
                         event.cache_write_1h_tokens, event.service_tier)]


def _price_list(book, parts_by_event: dict) -> PriceList:
    pairs = {part.key for parts in parts_by_event.values() for part in parts}
    return PriceList(*resolve_prices(book=book, pairs=pairs))


def events_backfill_cost(*, book, model: str, model_provider: str, progress: Progress = NO_PROGRESS) -> int:
    """Price the unpriced events naming this model, in chunks; returns how many got a cost."""
    model, model_provider = normalize_model(model), normalize_provider(model_provider)
    single, multi = _waiting_events(book, model, model_provider)
    multi_ids = [event.pk for event in multi.only("pk", "services") if _names_model(event, model, model_provider)]
    progress.expect(progress.resumed.rest(single).count() + len(multi_ids))
    priced_count = events_price_in_chunks(book, single, progress)
    with transaction.atomic():
        candidates = [event for event in multi.filter(pk__in=multi_ids).select_for_update()
                      if _names_model(event, model, model_provider)]
        priced = _price_and_save(book, candidates)
        priced_count += priced
        if multi_ids:
            progress.advance(len(multi_ids), changed=priced)
    return priced_count


def events_reprice_unpriced(*, book, progress: Progress = NO_PROGRESS) -> int:
    """Price every unpriced event of the book that the catalog (with the book's aliases) can price now, in
    chunks by id; returns how many got a cost. Events it still cannot price are left as they are. Safe to run
    twice and beside recording: priced events are never touched."""
    unpriced = owned(UsageEvent, book).filter(usage_cost__isnull=True)
    # An event it cannot price stays unpriced: counted from the start, a run taken up again would count it twice.
    progress.expect(progress.resumed.rest(unpriced).count())
    return events_price_in_chunks(book, unpriced, progress)


def events_price_in_chunks(book, events, progress: Progress = NO_PROGRESS, *, unprice: bool = False,
                           only=None) -> int:
    """Price `events` in chunks by id, one transaction each (rows locked); how many changed cost (`unprice`: as
    `_price_and_save`; `only`: those of each chunk it keeps, when the query selects more than it may price). Each
    chunk reports its size to `progress` inside its transaction, so a job's count moves with the work. A row another job holds (a re-pricing for an override) is waited for, not skipped: that job
    may have read the prices before this mapping or catalog load committed, and a skipped row would keep its null
    cost for good; once it is released, a row that job priced no longer matches and is left out. Goes on where an
    earlier run of the same work stopped (`progress.resumed`), and counts what that run changed."""
    priced_count, last_pk = progress.resumed.changed, progress.resumed.after
    while True:
        with transaction.atomic():
            chunk_query = events.order_by("pk")
            if last_pk is not None:
                chunk_query = chunk_query.filter(pk__gt=last_pk)
            chunk = list(chunk_query.select_for_update()[:BACKFILL_CHUNK])
            if not chunk:
                break
            last_pk = chunk[-1].pk
            priced = _price_and_save(book, chunk if only is None else [event for event in chunk if only(event)],
                                     unprice=unprice)
            priced_count += priced
            progress.advance(len(chunk), through=last_pk, changed=priced)
    return priced_count


def books_with_unpriced_events() -> list:
    """Ids of the books holding an unpriced event, across organizations: the sweep after a catalog load (a
    scheduled-job-like read of the partial index `usage_event_unpriced`, never an API read)."""
    return list(UsageEvent.objects.filter(usage_cost__isnull=True).order_by().values_list("book_id", flat=True)
                .distinct())


def events_unpriced_reasons(*, book, events: list[UsageEvent], how_to_map: str = MAP_MODEL_BY_API) -> dict:
    """event id -> why it is unpriced (priced again now with the book's aliases, price overrides and today's
    catalog; read only: nothing is saved), or why a batch, flex or priority event was priced at standard rates.
    Other events are left out."""
    waiting = [event for event in events if event.usage_cost is None or event.priced_at_standard_tier]
    parts_by_event = {event.pk: _event_parts(event) for event in waiting}
    if not parts_by_event:
        return {}
    prices = _price_list(book, parts_by_event)
    reasons = {}
    for event in waiting:
        priced = price_event(parts_by_event[event.pk], prices, at=event.usage_date)
        reasons[event.pk] = (unpriced_reason(priced, how_to_map=how_to_map) if event.usage_cost is None
                             else standard_tier_reason(priced))
    return reasons


REPRICED_FIELDS = ["usage_cost", "event_status", "services", "service", "priced_at_standard_tier"]


def _stored_entries(event: UsageEvent) -> dict[tuple[str, str], str]:
    """The catalog entry (id) that priced each model the event names, as stored with it; unpriced parts left out."""
    if event.services is not None:
        return {ServiceUsage.from_json(part).key: part["serviceId"] for part in event.services
                if part.get("serviceId")}
    if event.service_id is None or event.model is None or event.model_provider is None:
        return {}
    return {(event.model, event.model_provider): str(event.service_id)}


def _price_lists_by_event(book, events: list[UsageEvent], parts_by_event: dict, *, pinned: bool):
    """event -> the PriceList that prices it: the names resolved today with the book's overrides; `pinned`, each
    model the event was priced with kept on the entry that priced it (only its unpriced parts resolved today)."""
    pairs = {part.key for parts in parts_by_event.values() for part in parts}
    resolved, overrides = resolve_prices(book=book, pairs=pairs)
    today = PriceList(resolved, overrides)
    if not pinned:
        return lambda event: today
    stored = {event.pk: _stored_entries(event) for event in events}
    ids = {entry_id for entries in stored.values() for entry_id in entries.values()}
    entries = {str(entry.pk): entry for entry in ServiceEntry.objects.filter(pk__in=ids)}
    lists: dict[tuple, PriceList] = {}

    def for_event(event: UsageEvent) -> PriceList:
        kept = {pair: entries[entry_id] for pair, entry_id in stored[event.pk].items() if entry_id in entries}
        signature = tuple(sorted((pair, str(entry.pk)) for pair, entry in kept.items()))
        if signature not in lists:
            lists[signature] = PriceList({**resolved, **kept}, overrides) if kept else today
        return lists[signature]
    return for_event


def _price_and_save(book, events: list[UsageEvent], *, unprice: bool = False) -> int:
    """Price `events` again and write those whose cost changed; how many. With `unprice` (a price override was
    created or deleted), an event the book can no longer price (the override that priced it is gone) goes back to
    cost null, and so does one its new prices take past what an event may cost (MAX_EVENT_COST): recording refuses
    such a record, and keeping the cost it had would show a price the book no longer has. The override prices the
    event as it was priced: each model on the catalog entry that priced it, not on the one its name resolves to today
    (an alias remapped since, or a catalog load that lists the name under an entry of its own now, moved its cost
    for no reason the override gives)."""
    parts_by_event = {event.pk: _event_parts(event) for event in events}
    prices_for = _price_lists_by_event(book, events, parts_by_event, pinned=unprice)
    changed = []
    for event in events:
        priced = price_event(parts_by_event[event.pk], prices_for(event), at=event.usage_date)
        if priced.total is None and not unprice:
            continue
        services = priced.services_json() if event.services is not None else None
        service = priced.parts[0].service if event.services is None and priced.parts else event.service
        if (priced.total == event.usage_cost and services == event.services and service == event.service
                and priced.priced_at_standard == event.priced_at_standard_tier):
            continue
        event.usage_cost = priced.total
        event.event_status = EventStatus.PROCESSED if priced.total is not None else EventStatus.NEEDS_COST_BACKFILL
        event.services = services
        event.service = service
        event.priced_at_standard_tier = priced.priced_at_standard
        changed.append(event)
    # The analytics rollup moves with the events: out as they were, back in as they are now.
    analytics_rollup_subtract(book=book, events=changed)
    UsageEvent.objects.bulk_update(changed, REPRICED_FIELDS)
    analytics_rollup_add(book=book, events=changed)
    return len(changed)


def model_map(*, book, model: str, model_provider: str, service_id, created_by: str = "") -> Mapping:
    """Point an unknown model name at a catalog entry, then backfill as a job: inline when few events wait,
    otherwise in the background (a Celery task, or this process's runner without a broker)."""
    model, model_provider = normalize_model(model), normalize_provider(model_provider)
    too_long = too_long_once_normalized(ModelAlias, model=model, modelProvider=model_provider)
    if too_long:
        raise BadRequest(too_long)
    try:
        service = ServiceEntry.objects.get(pk=service_id, is_active=True)
    except (ServiceEntry.DoesNotExist, ValueError):
        raise NotFound("Catalog service not found")
    known = resolve_services(book=None, pairs=[(model, model_provider)])[(model, model_provider)]
    if known is not None:
        raise BadRequest([f"model: {model!r} from {model_provider!r} is already in the catalog "
                          f"({known.provider}/{known.canonical_name}); mapping only redirects unknown names."])
    # The alias and its backfill job in one transaction: an alias stored without its job would leave the events
    # waiting for it unpriced until someone maps the model again. An inline backfill runs after the commit (a run
    # that fails goes on in the background, and the answer says so: the alias is stored, so never a 5xx).
    alias, created, waiting, scheduled, job = _map_with_job(book, model, model_provider, service, created_by)
    if not scheduled:
        result = job_run_inline(job, backfill_work(book, model, model_provider))
        if result is not None:
            return Mapping(alias, created, waiting, result["eventsPriced"], scheduled=False, job=job)
    return Mapping(alias, created, waiting, 0, scheduled=True, job=job)


@transaction.atomic
def _map_with_job(book, model: str, model_provider: str, service: ServiceEntry, created_by: str):
    """The alias (created, or pointed at `service`) and its backfill job, in one transaction."""
    alias = owned(ModelAlias, book).select_for_update().filter(model=model, model_provider=model_provider).first()
    created = alias is None
    if created:
        try:
            with transaction.atomic():
                alias = ModelAlias.objects.create(book=book, model=model, model_provider=model_provider,
                                                  service=service)
        except IntegrityError:  # a concurrent request mapped it first: remap that alias
            alias = owned(ModelAlias, book).select_for_update().get(model=model, model_provider=model_provider)
            created = False
    if not created:
        alias.service = service
        alias.save(update_fields=["service", "updated_at"])
    single, multi = _waiting_events(book, model, model_provider)
    waiting = single.count() + sum(1 for event in multi if _names_model(event, model, model_provider))
    scheduled = waiting > settings.MAP_MODEL_INLINE_BACKFILL_LIMIT
    job = job_create(book=book, kind=JobKind.COST_BACKFILL, task_path="customers.tasks.backfill_event_costs_task",
                     task_args=(book.pk, model, model_provider), created_by=created_by, total=waiting,
                     status=JobStatus.QUEUED if scheduled else JobStatus.RUNNING)
    if scheduled:
        job_start(job)
    return alias, created, waiting, scheduled, job


def backfill_work(book, model: str, model_provider: str):
    """The cost backfill of a mapped model as a job's work."""
    def work(progress: Progress) -> dict:
        return {"eventsPriced": events_backfill_cost(book=book, model=model, model_provider=model_provider,
                                                     progress=progress)}
    return work


def reprice_work(book):
    """The pricing of a book's unpriced events with the current catalog as a job's work."""
    def work(progress: Progress) -> dict:
        return {"eventsPriced": events_reprice_unpriced(book=book, progress=progress)}
    return work


def events_reprice_start(*, book, created_by: str = "") -> Job:
    """Price the book's unpriced events with the current catalog in the background, as a job (after a catalog
    load, or the console's action)."""
    job = job_create(book=book, kind=JobKind.COST_REPRICE, task_path="customers.tasks.reprice_unpriced_events_task",
                     task_args=(book.pk,), created_by=created_by)
    job_start(job)
    return job
