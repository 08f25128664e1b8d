"""Auto-provisioning of the identities a batch of usage records names (spec §1).

An unseen `customerExternalId` creates a customer (named after it), an unseen `agentCode` an agent,
an unseen `signalName` a signal of that agent (name and shortName both that string). One round of
lookups per batch, then one `INSERT ... ON CONFLICT DO NOTHING` per kind for what is missing, then one
re-read of what was inserted: two requests creating the same name at the same moment both end up with
the one row the database kept (no duplicates, no error).
"""
from dataclasses import dataclass

from django.db.models import Q

from config.core.scoping import owned
from customers.models import Agent, Customer, Signal


@dataclass
class Identities:
    customers: dict[str, Customer]  # by external id
    agents: dict[str, Agent]  # by agent code
    signals: dict[tuple[str, str], Signal]  # by (agent code, signal name)


def _ensure(book, model, field: str, wanted: set[str], build, extra=Q()) -> dict:
    rows = {getattr(row, field): row for row in owned(model, book).filter(extra, **{f"{field}__in": wanted})}
    missing = sorted(wanted - rows.keys())  # a stable order keeps concurrent inserts from deadlocking
    if missing:
        model.objects.bulk_create([build(value) for value in missing], ignore_conflicts=True)
        rows.update({getattr(row, field): row
                     for row in owned(model, book).filter(extra, **{f"{field}__in": missing})})
    return rows


def identities_provision(*, book, customer_external_ids: set[str], agent_codes: set[str],
                         signal_keys: set[tuple[str, str]], internal_external_ids: set[str]) -> Identities:
    """Every customer, agent and signal the batch names, created when unseen.

    `internal_external_ids` are the developers whose records came under the internal coding agent
    (`svc-coding-agent`): their customers are marked internal (never billed, never watch targets).
    """
    customers = _ensure(book, Customer, "external_id", customer_external_ids,
                        lambda ext: Customer(book=book, external_id=ext, name=ext,
                                             is_internal=ext in internal_external_ids),
                        extra=Q(deleted_at__isnull=True))
    newly_internal = [customer.pk for ext, customer in customers.items()
                      if ext in internal_external_ids and not customer.is_internal]
    if newly_internal:
        owned(Customer, book).filter(pk__in=newly_internal).update(is_internal=True)
        for ext in internal_external_ids:
            customers[ext].is_internal = True
    agents = _ensure(book, Agent, "agent_code", agent_codes,
                     lambda code: Agent(book=book, agent_code=code, name=code))
    signals = _signals_ensure(book, agents, signal_keys)
    return Identities(customers=customers, agents=agents, signals=signals)


def _signals_ensure(book, agents: dict[str, Agent], signal_keys: set[tuple[str, str]]) -> dict:
    """Signals are matched by shortName first, then by name (a signal created through the API may have a
    shortName that differs from its name)."""
    by_agent_id = {agents[code].id: code for code, _ in signal_keys}
    names = {name for _, name in signal_keys}
    found: dict[tuple[str, str], Signal] = {}

    def collect(rows):
        for signal in rows:
            code = by_agent_id[signal.agent_id]
            if (code, signal.short_name) in signal_keys:
                found[(code, signal.short_name)] = signal
            if (code, signal.name) in signal_keys:
                found.setdefault((code, signal.name), signal)

    query = Q(short_name__in=names) | Q(name__in=names)
    collect(owned(Signal, book).filter(query, agent_id__in=by_agent_id))
    missing = sorted(signal_keys - found.keys())
    if missing:
        Signal.objects.bulk_create(
            [Signal(book=book, agent=agents[code], name=name, short_name=name) for code, name in missing],
            ignore_conflicts=True)
        missing_names = {name for _, name in missing}
        collect(owned(Signal, book).filter(Q(short_name__in=missing_names) | Q(name__in=missing_names),
                                           agent_id__in={agents[code].id for code, _ in missing}))
    return found
