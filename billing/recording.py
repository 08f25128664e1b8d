"""Recording usage: `POST /v1/usage/record`, the hot path of the service.

For a batch of up to 100 records, in one transaction:
1. validate each record (a bad one becomes a per-record failure, never spoiling its neighbours);
2. provision the customers, agents and signals it names (one round of lookups, one insert per kind);
3. resolve every (model, provider) pair against the catalog once and price each record;
4. append all events with one bulk insert, the database deciding idempotency
   (the same statement puts the new ones in the analytics rollup's backlog);
5. attribute the new events to matters, and after commit hand them to the post-ingestion work (the
   coalesced follow-up, billing/followup.py, and the `usage_ingested` hooks of the apps above billing).
No query depends on the number of records.
"""
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.db import transaction

from accounts.book_generations import Generation, generation_now
from billing.record_decoding import records_checked
from billing.record_validation import INVALID_RECORD, InvalidRecord, RecordDraft
from billing.selectors.subscriptions import billed_customers_locked
from billing.followup import usage_followup_schedule
from catalog.event_pricing import PriceList, price_event
from catalog.resolution import resolve_prices
from core import clock
from core.errors import ServiceUnavailable
from core.hooks import Hooks
from core.ids import random_uuids, time_ordered_uuids
from core.scoping import owned
from core.serialization import decimal_text
from customers.ledger import PricesMoved, events_append
from customers.models import CODING_AGENT_CODE, EventStatus, Signal, UsageEvent
from customers.provisioning import identities_mark_internal, identities_provision
from matters.ingestion import MattersMoved, matters_attribute_new_events

# Run on commit of a batch that stored new events, with `book` and `events` (the new UsageEvent rows): the
# post-ingestion work of apps above billing (spend caps), registered in config/hooks.py, so billing never
# imports them.
usage_ingested = Hooks("usage ingested")

# Codes of `results.failed[]` (docs/decisions/usage-recording.md): `invalid_record` and `out_of_range` (not
# stored, fix and resend) from billing.record_validation and, for a cost beyond the maximum,
# catalog.event_pricing; `unknown_model` and `unpriced_usage` (stored with cost null) from catalog.event_pricing.


@dataclass
class RecordingOutcome:
    processed: int
    success: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    new_events: list[UsageEvent] = field(default_factory=list)


def _echo(draft: RecordDraft) -> dict:
    single = None if draft.is_multi_service else draft.services[0]
    return {"customerExternalId": draft.customer_external_id, "agentCode": draft.agent_code,
            "signalName": draft.signal_name, "model": single.model if single else None,
            "modelProvider": single.model_provider if single else None}


# Read once: on Python 3.11 each access to an enum member goes through the enum's descriptor, once a record here.
_PROCESSED, _NEEDS_COST_BACKFILL = EventStatus.PROCESSED.value, EventStatus.NEEDS_COST_BACKFILL.value


def _event_row(draft: RecordDraft, identities, priced, event_id, raw_event_id) -> dict:
    """The new event as the ledger takes it: every column by attname but those the ledger stamps (the book
    and the instant, customers.ledger.events_append). A single-service event keeps its one part's usage in
    columns, a multi-service event its parts in `services`."""
    if draft.is_multi_service:
        model = provider = service_id = tier = None
        input_tokens = output_tokens = cache_read = cache_write = cache_write_1h = None
        services = priced.services_json()
    else:
        usage = draft.services[0]
        model, provider, tier = usage.model, usage.model_provider, usage.service_tier
        input_tokens, output_tokens = usage.input_tokens, usage.output_tokens
        cache_read, cache_write, cache_write_1h = (usage.cache_read_tokens, usage.cache_write_tokens,
                                                   usage.cache_write_1h_tokens)
        service = priced.parts[0].service
        service_id = service.id if service is not None else None
        services = None
    agent_code = draft.agent_code
    return {
        "id": event_id, "raw_event_id": raw_event_id,
        "customer_id": identities.customer_ids[draft.customer_external_id],
        "agent_id": identities.agent_ids[agent_code],
        "signal_id": identities.signals[(agent_code, draft.signal_name)].id,
        "customer_external_id": draft.customer_external_id, "agent_code": agent_code,
        "signal_name": draft.signal_name, "model": model, "model_provider": provider, "service_id": service_id,
        "input_tokens": input_tokens, "output_tokens": output_tokens, "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write, "cache_write_1h_tokens": cache_write_1h, "service_tier": tier,
        "priced_at_standard_tier": priced.priced_at_standard, "services": services,
        "quantity": draft.quantity, "usage_cost": priced.total,
        "event_status": _PROCESSED if priced.total is not None else _NEEDS_COST_BACKFILL,
        "usage_date": draft.usage_date, "environment": draft.environment, "idempotency_key": draft.idempotency_key,
        "metadata": draft.metadata,
    }


def _sort_signals_into_cost_categories(book, drafts: list[RecordDraft], identities) -> None:
    """Spec §2: the first event carrying `environment` sorts its signal into a cost category."""
    first_environment: dict = {}
    for draft in drafts:  # in request order
        signal = identities.signals[(draft.agent_code, draft.signal_name)]
        if draft.environment and signal.cost_category is None:
            first_environment.setdefault(signal.id, draft.environment)
    by_category: dict[str, list] = {}
    for signal_id, environment in first_environment.items():
        by_category.setdefault(environment, []).append(signal_id)
    for category, signal_ids in by_category.items():
        # Conditional: a concurrent batch that sorted the signal first wins.
        owned(Signal, book).filter(pk__in=signal_ids, cost_category__isnull=True).update(cost_category=category)


def _store(book, drafts: list[RecordDraft], priced_by_index: dict, *, now: datetime, generation: Generation,
           outcome: RecordingOutcome) -> tuple[list, dict]:
    """Provision, append and attribute the batch in one transaction; its `Appended` results in the order of the drafts
    stored (`outcome.new_events`: the new ones, for the work after the commit), and the drafts refused (with their
    messages): records under the coding agent naming a billed customer."""
    # A commit whose answer was lost answers what PostgreSQL did (core/postgresql): a 503 for a stored batch
    # would be sent again by the client, and stored twice without idempotency keys.
    with transaction.atomic():
        identities = identities_provision(
            book=book,
            customer_external_ids={d.customer_external_id for d in drafts},
            agent_codes={d.agent_code for d in drafts},
            signal_keys={(d.agent_code, d.signal_name) for d in drafts},
            internal_external_ids={d.customer_external_id for d in drafts if d.agent_code == CODING_AGENT_CODE},
            generation=generation,
        )
        refused = _billed_customers_as_developers(book, drafts, identities)
        if refused:
            billed = {identities.customer_ids[d.customer_external_id] for d, _ in refused.values()}
            identities = replace(identities, newly_internal=tuple(pk for pk in identities.newly_internal
                                                                   if pk not in billed))
            drafts = [d for d in drafts if d.index not in refused]
            if not drafts:
                return [], refused
        rows = [_event_row(d, identities, priced_by_index[d.index], event_id, raw_event_id)
                for d, event_id, raw_event_id in zip(drafts, time_ordered_uuids(len(drafts)),
                                                     random_uuids(len(drafts)))]
        appended = events_append(book=book, rows=rows, now=now, generation=generation)
        # Updates of identities come after the events: they write the book's generation row, which a batch
        # may write only once it holds its price lock (customers.provisioning.identities_mark_internal).
        identities_mark_internal(book=book, identities=identities)
        _sort_signals_into_cost_categories(book, drafts, identities)
        outcome.new_events = [a.event for a in appended if not a.replayed]
        # Spec §4: tags and routing rules attach events to matters at record time.
        matters_attribute_new_events(book=book, events=outcome.new_events, generation=generation)
    return appended, refused


def _billed_customers_as_developers(book, drafts: list[RecordDraft], identities) -> dict[int, tuple]:
    """Records under the internal coding agent naming an existing customer the book bills, by index, each with its
    failure message: they fail alone, since storing one would mark the customer internal and take its subscriptions and
    invoices out of every revenue figure (docs/decisions/usage-recording.md). Only customers not internal yet are
    looked at (`newly_internal`, almost always none): a developer's usual batch reads nothing more."""
    if not identities.newly_internal:
        return {}
    billed = billed_customers_locked(book=book, customer_ids=identities.newly_internal)
    return {d.index: (d, f"customerExternalId: '{d.customer_external_id}' is a billed customer (it has a "
                         f"subscription); usage under {CODING_AGENT_CODE} is a developer's own and would make the "
                         "customer internal. Record it under the developer's own id.")
            for d in drafts if d.agent_code == CODING_AGENT_CODE
            and identities.customer_ids[d.customer_external_id] in billed}


# A batch is priced again when prices change between its pricing and its storing (customers.ledger.PricesMoved).
# Each attempt reads what committed before it; more than a few in a row would mean prices changing without pause.
PRICING_ATTEMPTS = 5


def usage_record(*, book, body, now: datetime, generation: Generation | None = None) -> RecordingOutcome:
    """Record a batch; a malformed request (size, shape) is a 400 before anything is stored. `generation`: the
    book's generations read with the request's API key (accounts/book_generations.py), so that the batch's
    identities and prices come from this process's caches where they hold them; without one, they are read now.
    `body`: as the view's parser gives it (billing/record_decoding.py)."""
    checked = records_checked(body, now=now)
    generation = generation or generation_now(book)
    for _ in range(PRICING_ATTEMPTS):
        try:
            return _record(book, checked, now=now, generation=generation, processed=len(checked))
        except PricesMoved as moved:
            generation = moved.generation
        except MattersMoved:  # a matter it routed to was deleted meanwhile: routed again, nothing stored
            pass
    raise ServiceUnavailable("Prices kept changing while the batch was priced; nothing was stored. Retry.",
                             headers={"Retry-After": "1"})


def _record(book, checked: list, *, now: datetime, generation: Generation, processed: int) -> RecordingOutcome:
    """One attempt at recording the validated batch at `generation`: PricesMoved, with nothing stored, when other
    prices were in force by the time it was stored."""
    drafts = [item for item in checked if isinstance(item, RecordDraft)]
    outcome = RecordingOutcome(processed=processed)
    failures_by_index: dict[int, dict] = {
        item.index: {"index": item.index, **item.echo, "code": item.code,
                     "message": item.errors, "stored": False}
        for item in checked if isinstance(item, InvalidRecord)
    }
    successes_by_index: dict[int, dict] = {}
    if drafts:
        # Priced before anything is written: an event costing more than the maximum is refused alone (not
        # stored, nothing provisioned for it), like an invalid record.
        prices = PriceList(*resolve_prices(book=book, pairs={part.key for d in drafts for part in d.services},
                                           generation=generation))
        priced_by_index = {d.index: price_event(d.services, prices, at=d.usage_date) for d in drafts}
        failures_by_index.update({
            d.index: {"index": d.index, **_echo(d), "code": priced_by_index[d.index].failure_code,
                      "message": priced_by_index[d.index].failure_message, "stored": False}
            for d in drafts if not priced_by_index[d.index].storable})
        drafts = [d for d in drafts if priced_by_index[d.index].storable]
    if drafts:
        appended, refused = _store(book, drafts, priced_by_index, now=now, generation=generation, outcome=outcome)
        failures_by_index.update({d.index: {"index": d.index, **_echo(d), "code": INVALID_RECORD, "message": message,
                                            "stored": False} for d, message in refused.values()})
        drafts = [d for d in drafts if d.index not in refused]
        timestamps = clock.instants_text([result.event.usage_date for result in appended])
        for draft, result, timestamp in zip(drafts, appended, timestamps):
            event = result.event
            # UUIDs as they are: the renderer writes their canonical text (core/api_json.py).
            entry = {"index": draft.index, **_echo(draft), "eventId": event.id, "rawEventId": event.raw_event_id,
                     "totalCostUsd": decimal_text(event.usage_cost), "timestamp": timestamp}
            if result.replayed:
                entry["replayed"] = True
            if event.usage_cost is None:
                priced = priced_by_index[draft.index]
                failures_by_index[draft.index] = {**entry, "code": priced.failure_code,
                                                  "message": priced.failure_message, "stored": True}
            else:
                successes_by_index[draft.index] = entry
    if outcome.new_events:
        customer_ids = {event.customer_id for event in outcome.new_events}
        # Robust: the batch is committed, so its answer is a 200 whatever the follow-up's broker does; the
        # scheduled jobs sweep what a failed hand-over left (docs/decisions/reliability.md).
        transaction.on_commit(lambda: usage_followup_schedule(book_id=str(book.pk), customer_ids=customer_ids),
                              robust=True)
        transaction.on_commit(lambda: usage_ingested.run(book=book, events=outcome.new_events), robust=True)
    outcome.success = [successes_by_index[i] for i in sorted(successes_by_index)]
    outcome.failed = [failures_by_index[i] for i in sorted(failures_by_index)]
    return outcome
