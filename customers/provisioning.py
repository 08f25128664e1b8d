"""Auto-provisioning of the identities a batch of usage records names (spec §1).

An unseen `customerExternalId` creates a customer (named after it), an unseen `agentCode` an agent,
an unseen `signalName` a signal of that agent (name and shortName both that string). One round of
lookups per batch, then one `INSERT ... ON CONFLICT DO NOTHING` per kind for what is missing, then one
re-read of what was inserted: two requests creating the same name at the same moment both end up with
the one row the database kept (no duplicates, no error). Lookups read ids only, not whole rows: this
runs on the ingestion hot path.

When every name is known (the usual batch), the lookups are ONE statement (`_known`): raw SQL, each
branch scoped to the book by `book_sql` as `owned()` scopes the ORM, because the ORM took longer compiling
the three queries than PostgreSQL answering them (docs/performance.md). When this process has already read
every name at the book's current generation (`identities`, accounts/book_generations.py), not even that.
"""
from dataclasses import dataclass
from uuid import UUID

from django.db.models import Q

from accounts.book_generations import Generation, book_cache
from core.database import prepared_cursor
from core.scoping import book_sql, owned
from customers.models import Agent, Customer, Signal

# Every identity the batch names that exists, in one statement, each branch scoped to the book (`book_sql`).
# Customers are probed by name on the unique (book, external id) index, so the cost follows the batch, not the
# book: `external_id = ANY(names)` compared every customer of the book with every name once the planner chose
# to read the book. The name arrays are bound in binary (`%b`): in text form psycopg quotes each name of a
# batch with a regular expression.
def _known_statement(book, external_ids: list[str], codes: list[str], names: list[str]) -> tuple[str, list]:
    customer_in_book, customer_book = book_sql(book)
    agent_in_book, agent_book = book_sql(book)
    signal_in_book, signal_book = book_sql(book, "s.book_id")
    signal_agent_in_book, signal_agent_book = book_sql(book, "a.book_id")
    sql = f"""
        SELECT 'c', c.external_id, NULL, c.id, c.is_internal, NULL, NULL FROM unnest(%b::text[]) AS wanted(name)
        CROSS JOIN LATERAL (SELECT external_id, id, is_internal FROM {Customer._meta.db_table}
                            WHERE {customer_in_book} AND deleted_at IS NULL AND external_id = wanted.name LIMIT 1) c
        UNION ALL
        SELECT 'a', agent_code, NULL, id, NULL, NULL, NULL FROM {Agent._meta.db_table}
        WHERE {agent_in_book} AND agent_code = ANY(%b::text[])
        UNION ALL
        SELECT 's', a.agent_code, s.name, s.id, NULL, s.short_name, s.cost_category
        FROM {Signal._meta.db_table} s JOIN {Agent._meta.db_table} a ON a.id = s.agent_id
        WHERE {signal_in_book} AND {signal_agent_in_book} AND a.agent_code = ANY(%b::text[])
          AND (s.short_name = ANY(%b::text[]) OR s.name = ANY(%b::text[]))
    """.strip()
    return sql, [external_ids, *customer_book, *agent_book, codes, *signal_book, *signal_agent_book, codes, names,
                 names]


@dataclass(frozen=True)
class SignalRef:
    id: UUID
    cost_category: str | None


@dataclass
class Identities:
    customer_ids: dict[str, UUID]  # by external id
    agent_ids: dict[str, UUID]  # by agent code
    signals: dict[tuple[str, str], SignalRef]  # by (agent code, signal name)
    newly_internal: tuple = ()  # ids of existing customers the batch names under the internal coding agent


def _ensure(book, model, field: str, wanted: set[str], build, extra=Q(), columns=("id",)) -> dict:
    """{field value: row values} for every wanted value, inserting the missing ones."""
    def read(values):
        return {row[0]: row[1:] for row in owned(model, book).filter(extra, **{f"{field}__in": values})
                .values_list(field, *columns)}
    rows = read(wanted)
    missing = sorted(wanted - rows.keys())  # a stable order keeps concurrent inserts from deadlocking
    if missing:
        model.objects.bulk_create([build(value) for value in missing], ignore_conflicts=True)
        rows.update(read(missing))
    return rows


def _known(book, customer_external_ids: set[str], agent_codes: set[str],
           signal_keys: set[tuple[str, str]]) -> tuple[dict, dict, dict] | None:
    """(customers as {external id: (id, is internal)}, agent ids, signals) when every identity of the batch
    exists (one statement), else None."""
    codes, names = sorted(agent_codes), sorted({name for _, name in signal_keys})
    with prepared_cursor() as cursor:
        cursor.execute(*_known_statement(book, sorted(customer_external_ids), codes, names))
        rows = cursor.fetchall()
    customers, agent_ids, by_short_name, by_name = {}, {}, {}, {}
    for kind, key, name, row_id, is_internal, short_name, cost_category in rows:
        if kind == "c":
            customers[key] = (row_id, is_internal)
        elif kind == "a":
            agent_ids[key] = row_id
        else:  # matched by shortName first, then by name (as `_signals_ensure`)
            ref = SignalRef(row_id, cost_category)
            by_short_name[(key, short_name)] = ref
            by_name[(key, name)] = ref
    signals = {key: by_short_name.get(key) or by_name.get(key) for key in signal_keys}
    if len(customers) < len(customer_external_ids) or len(agent_ids) < len(agent_codes) or None in signals.values():
        return None
    return customers, agent_ids, signals


# The identities this process has read, per book at its generation: ("c", external id) -> (id, is internal),
# ("a", agent code) -> id, ("s", (agent code, signal name)) -> SignalRef.
identities = book_cache()


def _cached(book, generation: Generation | None, customer_external_ids: set[str], agent_codes: set[str],
            signal_keys: set[tuple[str, str]]) -> tuple[dict, dict, dict] | None:
    """`_known`'s answer from this process's cache when it holds every name at this generation, else None."""
    held = identities.entries(book, generation)
    if not held:
        return None
    try:
        return ({external_id: held["c", external_id] for external_id in customer_external_ids},
                {code: held["a", code] for code in agent_codes}, {key: held["s", key] for key in signal_keys})
    except KeyError:
        return None


def identities_provision(*, book, customer_external_ids: set[str], agent_codes: set[str],
                         signal_keys: set[tuple[str, str]], internal_external_ids: set[str],
                         generation: Generation | None = None) -> Identities:
    """Every customer, agent and signal the batch names, created when unseen.

    `internal_external_ids` are the developers whose records came under the internal coding agent
    (`svc-coding-agent`): their customers are marked internal (never billed, never watch targets).
    `generation`: the book's generations read with the request's key, for a caller that has changed none of
    these records in its transaction (recording): names read at it before are answered from this process.
    """
    cached = _cached(book, generation, customer_external_ids, agent_codes, signal_keys)
    known = cached if cached is not None else _known(book, customer_external_ids, agent_codes, signal_keys)
    if known is not None:
        customers, agent_ids, signals = known
    else:  # something is seen for the first time
        customers = _ensure(book, Customer, "external_id", customer_external_ids,
                            lambda ext: Customer(book=book, external_id=ext, name=ext,
                                                 is_internal=ext in internal_external_ids),
                            extra=Q(deleted_at__isnull=True), columns=("id", "is_internal"))
        agents = _ensure(book, Agent, "agent_code", agent_codes,
                         lambda code: Agent(book=book, agent_code=code, name=code))
        agent_ids = {code: row[0] for code, row in agents.items()}
        signals = _signals_ensure(book, agent_ids, signal_keys)
    if cached is None:
        identities.remember(book, generation, {**{("c", ext): row for ext, row in customers.items()},
                                   **{("a", code): agent_id for code, agent_id in agent_ids.items()},
                                   **{("s", key): ref for key, ref in signals.items()}})
    newly_internal = tuple(row[0] for ext, row in customers.items() if ext in internal_external_ids and not row[1])
    return Identities(customer_ids={ext: row[0] for ext, row in customers.items()}, agent_ids=agent_ids,
                      signals=signals, newly_internal=newly_internal)


def identities_mark_internal(*, book, identities: Identities) -> None:
    """Mark internal the existing customers the batch named under the internal coding agent. It moves the
    book's generation (what `identities_provision` just remembered is not read again), so recording calls it
    once its events are stored: the statement storing them takes the book's price lock shared, and a price
    change takes that lock before it writes the generation's row (accounts/book_generations.py), so a batch
    that wrote the row first would wait for the change while the change waits for the row."""
    if identities.newly_internal:
        owned(Customer, book).filter(pk__in=identities.newly_internal).update(is_internal=True)


def _signals_ensure(book, agent_ids: dict[str, UUID], signal_keys: set[tuple[str, str]]) -> dict:
    """Signals are matched by shortName first, then by name (a signal created through the API may have a
    shortName that differs from its name)."""
    code_of = {agent_ids[code]: code for code, _ in signal_keys}
    found: dict[tuple[str, str], SignalRef] = {}

    def collect(names, agent_id_set):
        rows = (owned(Signal, book).filter(Q(short_name__in=names) | Q(name__in=names), agent_id__in=agent_id_set)
                .values_list("id", "agent_id", "name", "short_name", "cost_category"))
        by_name = {}
        for signal_id, agent_id, name, short_name, cost_category in rows:
            ref = SignalRef(signal_id, cost_category)
            found[(code_of[agent_id], short_name)] = ref
            by_name[(code_of[agent_id], name)] = ref
        for key, ref in by_name.items():
            found.setdefault(key, ref)

    collect({name for _, name in signal_keys}, set(code_of))
    missing = sorted(signal_keys - found.keys())
    if missing:
        Signal.objects.bulk_create(
            [Signal(book=book, agent_id=agent_ids[code], name=name, short_name=name) for code, name in missing],
            ignore_conflicts=True)
        collect({name for _, name in missing}, {agent_ids[code] for code, _ in missing})
    return {key: found[key] for key in signal_keys}
