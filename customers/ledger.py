"""Appending to the usage ledger: one bulk write per batch, idempotency decided by the database.

Every event is inserted with `INSERT ... ON CONFLICT DO NOTHING`; the unique constraint
`usage_event_idem_uniq` (book, idempotency_key) is the referee. A keyed event that the database did not
insert is a replay: the caller gets the event that holds the key (from an earlier request, a concurrent
one, or an earlier record of the same batch) and nothing new is stored.
"""
from dataclasses import dataclass

from config.core.scoping import owned
from customers.models import UsageEvent


@dataclass(frozen=True)
class Appended:
    event: UsageEvent  # the stored event (the original one on a replay)
    replayed: bool


def events_append(*, book, events: list[UsageEvent]) -> list[Appended]:
    """Insert `events` (built, unsaved, ids assigned); results in the same order."""
    UsageEvent.objects.bulk_create(events, ignore_conflicts=True)
    keys = {event.idempotency_key for event in events if event.idempotency_key is not None}
    holders = {}
    if keys:
        holders = {event.idempotency_key: event
                   for event in owned(UsageEvent, book).filter(idempotency_key__in=keys)}
    results = []
    for event in events:
        if event.idempotency_key is None:
            results.append(Appended(event=event, replayed=False))
            continue
        holder = holders[event.idempotency_key]
        results.append(Appended(event=holder, replayed=holder.pk != event.pk))
    return results
