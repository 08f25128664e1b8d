"""Writes of customers, agents and signals (explicit API calls; auto-provisioning from usage is elsewhere).

Uniqueness (customer externalId, agentCode, signal name and shortName per agent) is refereed by the
database constraints of `customers.models`; an `IntegrityError` becomes a 409 naming the field.
"""
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError, RestrictedError

from core.errors import BadRequest, Conflict
from core.hooks import Hooks
from core.scoping import existing_row_save, get_owned, owned
from customers.models import Agent, Customer, Signal
from customers.selectors import customers_live

# Constraint name -> (camelCase field, 409 message).
UNIQUE_MESSAGES = {
    "customer_external_id_uniq": ("externalId", "A customer with this externalId already exists."),
    "agent_code_uniq": ("agentCode", "An agent with this agentCode already exists."),
    "signal_agent_name_uniq": ("name", "This agent already has a signal with this name."),
    "signal_agent_short_name_uniq": ("shortName", "This agent already has a signal with this shortName."),
}

# Subscriptions in these states still bill (or will): their customer cannot be deleted.
UNFINISHED_SUBSCRIPTION_STATUSES = ("upcoming", "active")


# Called, inside the transaction that marks an existing customer internal by hand (the console's "Is internal"),
# with `book` and `customer_id`; a registered function raises ValueError, saying why, when the customer must stay
# billed (config/hooks.py registers billing's: a customer with a subscription, whose invoices an internal mark would
# take out of every revenue figure). Recording guards its own marks (billing/recording.py).
customer_marking_internal = Hooks("customer marking internal")


def violated_constraint(error: IntegrityError) -> str | None:
    diag = getattr(error.__cause__, "diag", None)
    return getattr(diag, "constraint_name", None)


def conflict_from(error: IntegrityError, *, prefix: str = "") -> Conflict:
    """The 409 for a unique constraint this module knows; anything else is not a client error."""
    known = UNIQUE_MESSAGES.get(violated_constraint(error))
    if known is None:
        raise error
    field, message = known
    return Conflict([f"{prefix}{field}: {message}"])


def _save(instance, fields=None):
    """Insert a new row (`fields` None) or update the listed fields of an existing one (404 when it is gone); a
    clash with a unique constraint is a 409."""
    try:
        with transaction.atomic():
            if fields is None:
                instance.save()
            else:
                existing_row_save(instance, fields)
    except IntegrityError as error:
        raise conflict_from(error) from None
    return instance


def _assign(instance, data: dict) -> list[str]:
    for field, value in data.items():
        setattr(instance, field, value)
    return [*data, "updated_at"]


# --------------------------------------------------------------------------- customers

def customer_create(*, book, data: dict) -> Customer:
    """A customer in the caller's book; 409 when `externalId` is taken by a customer that is not deleted."""
    return _save(Customer(book=book, **data))


@transaction.atomic
def customer_update(*, book, customer_id, data: dict) -> Customer:
    """Change the fields in `data`. The row is held until commit, so a concurrent delete either waits or, having
    committed first, makes this a 404 (no update of a deleted customer)."""
    # FOR NO KEY UPDATE, the lock the UPDATE takes anyway: recording usage (FOR KEY SHARE, the events' foreign key)
    # does not wait for it. A delete (FOR UPDATE) does; an update that waited for a delete finds no live row: 404.
    customer = get_owned(Customer, book, customer_id,
                         queryset=customers_live(book=book).select_for_update(no_key=True))
    return _save(customer, _assign(customer, data))


@transaction.atomic
def customer_delete(*, book, customer_id, now: datetime) -> Customer:
    """Soft delete: the row stays (its events, invoices and history still point at it) with `deleted_at`
    set; it is no longer listed, reads as 404 and frees its externalId. 409 while any subscription of the
    customer is upcoming or active."""
    customer = get_owned(Customer, book, customer_id, queryset=customers_live(book=book).select_for_update())
    unfinished = customer.subscriptions.filter(status__in=UNFINISHED_SUBSCRIPTION_STATUSES).count()
    if unfinished:
        raise Conflict(f"The customer has {unfinished} upcoming or active subscription(s); "
                       "end them before deleting the customer.")
    customer.deleted_at = now
    customer.save(update_fields=["deleted_at", "updated_at"])
    return customer


# --------------------------------------------------------------------------- agents

def agent_create(*, book, data: dict) -> Agent:
    return _save(Agent(book=book, **data))


@transaction.atomic
def agent_update(*, book, agent_id, data: dict) -> Agent:
    """Change the fields in `data`; an agent deleted meanwhile is a 404 (the row is held as in `customer_update`)."""
    agent = get_owned(Agent, book, agent_id, queryset=owned(Agent, book).select_for_update(no_key=True))
    return _save(agent, _assign(agent, data))


@transaction.atomic
def agent_delete(*, book, agent_id) -> None:
    """Permanent delete; 409 while signals, plan links or any other protected record point at the agent.
    Its usage events stay, with the agent reference cleared (they keep the agentCode they were recorded with)."""
    agent = get_owned(Agent, book, agent_id, queryset=owned(Agent, book).select_for_update())
    signals, plans = agent.signals.count(), agent.plan_links.count()
    if signals or plans:
        attached = [f"{count} {what}" for count, what in ((signals, "signal(s)"), (plans, "pricing plan(s)"))
                    if count]
        raise Conflict(f"The agent has {' and '.join(attached)} attached; delete or unlink them first.")
    try:
        with transaction.atomic():
            agent.delete()
    except (ProtectedError, RestrictedError) as error:
        rows = getattr(error, "protected_objects", None) or getattr(error, "restricted_objects", ())
        kinds = sorted({str(row._meta.verbose_name_plural) for row in rows})
        raise Conflict(f"The agent is still referenced by {', '.join(kinds)}; remove those first.") from None


# --------------------------------------------------------------------------- signals

def derived_short_name(name: str) -> str:
    """Spec §2: shortName is derived from name when omitted. Rule: the name itself (already trimmed),
    the same rule auto-provisioning uses for an unseen `signalName`, so usage events sent with the
    signal's name match it."""
    return name


def _new_signal(*, book, agent: Agent, fields: dict) -> Signal:
    return Signal(book=book, agent=agent, name=fields["name"],
                  short_name=fields.get("short_name") or derived_short_name(fields["name"]),
                  **({"type": fields["type"]} if "type" in fields else {}))


def signal_create(*, book, data: dict) -> Signal:
    """A signal of one of the caller's agents (unknown or foreign agent: 404)."""
    fields = dict(data)
    agent = get_owned(Agent, book, fields.pop("agent_id"))
    return _save(_new_signal(book=book, agent=agent, fields=fields))


@transaction.atomic
def signal_update(*, book, signal_id, data: dict) -> Signal:
    """Renames or retypes a signal; shortName is not re-derived from a new name (events match on it).
    `agentId` never changes: the same id is accepted (a client echoing the signal back), another is a 400.
    A signal deleted meanwhile is a 404 (the row is held as in `customer_update`)."""
    signal = get_owned(Signal, book, signal_id, queryset=owned(Signal, book).select_for_update(no_key=True))
    fields = dict(data)
    agent_id = fields.pop("agent_id", None)
    if agent_id is not None and agent_id != signal.agent_id:
        raise BadRequest(["agentId: A signal's agent cannot be changed; create a signal on the other agent."])
    return _save(signal, _assign(signal, fields))


@transaction.atomic
def signal_bulk_create(*, book, agent_id, items: list[dict]) -> list[Signal]:
    """Creates every item as a signal of one agent, all or nothing. Duplicates inside the request are a
    400 and clashes with existing signals a 409, each naming the item (`signals[2].shortName: ...`)."""
    agent = get_owned(Agent, book, agent_id)
    signals = [_new_signal(book=book, agent=agent, fields=item) for item in items]
    duplicates = []
    for field, attribute in (("name", "name"), ("shortName", "short_name")):
        first_index = {}
        for index, signal in enumerate(signals):
            value = getattr(signal, attribute)
            if value in first_index:
                duplicates.append(f"signals[{index}].{field}: Repeats signals[{first_index[value]}].{field}.")
            first_index.setdefault(value, index)
    if duplicates:
        raise BadRequest(duplicates)
    conflicts = []
    for index, signal in enumerate(signals):
        try:
            with transaction.atomic():  # a savepoint per item, so each clash is named by its index
                signal.save()
        except IntegrityError as error:
            conflicts.append(conflict_from(error, prefix=f"signals[{index}].").message[0])
    if conflicts:
        raise Conflict(conflicts)  # leaving the outer transaction with an error rolls every item back
    return signals


@transaction.atomic
def signal_delete(*, book, signal_id) -> None:
    """Permanent delete; the signal's usage events stay, orphaned (signal null, they keep `signalName`).
    409 while a pricing strategy prices the signal. Deleted strategies (soft-deleted, kept for their history) no
    longer price anything and lose their reference to it as the events do: they blocked the delete for good, as a
    deleted strategy cannot be changed."""
    signal = get_owned(Signal, book, signal_id, queryset=owned(Signal, book).select_for_update())
    if signal.strategies.filter(deleted_at__isnull=True).exists():
        raise Conflict("The signal is priced by a pricing strategy; remove it from the strategy first.")
    signal.strategies.filter(deleted_at__isnull=False).update(signal=None)
    try:
        with transaction.atomic():
            signal.delete()
    except (ProtectedError, RestrictedError):
        raise Conflict("The signal is still referenced by other records; remove those first.") from None
