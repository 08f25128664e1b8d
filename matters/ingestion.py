"""Attribution at record time, and the one place matters writes SQL by hand.

`matters_attribute_new_events` is the ingestion seam: recording calls it inside its transaction, right after
a batch's events are inserted. Its three statements are raw SQL, each scoped to the book by `book_sql`: the
read of the book's rules with the matters the batch's tags name, the lock of the matters it attributes to, and
the attributions' insert, which the rules sweep (matters/services.py) writes through too. Everything else of
matters goes through the ORM and `owned()`.

Most books have no matters. A web process that has read a book's rules and found it has no matter at all
remembers that under the book's generation (`without_matters`, accounts/book_generations.py); creating a matter
moves the generation (matters/migrations/0003), so recording at that generation skips the read: a batch of such
a book makes one statement fewer. A book with matters reads its rules every batch, as before.
"""
from uuid import UUID, uuid4

from django.db import connection

from accounts.book_generations import Generation, book_cache
from core import clock
from core.database import prepared_cursor
from core.scoping import book_sql
from customers.models import UsageEvent
from matters import routing
from matters.models import Matter, MatterAttribution, MatterRule


def _facts(event: UsageEvent) -> routing.EventFacts:
    return routing.EventFacts(agent_code=event.agent_code, customer_external_id=event.customer_external_id,
                              signal_name=event.signal_name, tag=routing.tag_of(event.metadata))


# Books seen without any matter, per process: {WITHOUT_MATTERS: True} at the generation they were read at.
without_matters = book_cache()
WITHOUT_MATTERS = "without matters"


# Every matter of the book that has rules or is tagged, a row per (matter, rule); rule columns null for a
# tagged matter without rules; and one row of nulls when the book has no matter at all. Raw SQL scoped to the
# book (`book_sql`): it runs once per recorded batch, and the ORM took longer to compile the join than
# PostgreSQL to answer it.
def _routing_statement(book, tags: set[str]) -> tuple[str, list]:
    matter_in_book, book_params = book_sql(book, "m.book_id")
    sql = f"""
        SELECT m.id, m.matter_number, r.id, r.priority, r.created_at, r.agent_code, r.customer_external_id,
               r.signal_pattern
        FROM {Matter._meta.db_table} m LEFT JOIN {MatterRule._meta.db_table} r ON r.matter_id = m.id
        WHERE {matter_in_book} AND (r.id IS NOT NULL OR m.matter_number = ANY(%s::text[]))
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
        WHERE NOT EXISTS (SELECT FROM {Matter._meta.db_table} m WHERE {matter_in_book})
    """.strip()
    return sql, [*book_params, sorted(tags), *book_params]


def _routing_inputs(*, book, tags: set[str]) -> tuple[list[routing.Rule], dict[str, UUID], bool]:
    """The book's rules in evaluation order, the ids of the matters these tags name, and whether the book has any
    matter, in ONE query."""
    with prepared_cursor() as cursor:
        cursor.execute(*_routing_statement(book, tags))
        rows = cursor.fetchall()
    rules, matter_ids_by_number = [], {}
    for matter_id, number, rule_id, priority, created_at, agent_code, customer_external_id, pattern in rows:
        if matter_id is None:  # the book has no matter
            return [], {}, False
        if number in tags:
            matter_ids_by_number[number] = matter_id
        if rule_id is not None:
            rules.append(routing.Rule(id=rule_id, matter_id=matter_id, priority=priority, created_at=created_at,
                                      agent_code=agent_code, customer_external_id=customer_external_id,
                                      signal_pattern=pattern))
    return routing.evaluation_order(rules), matter_ids_by_number, True


def matters_attribute_new_events(*, book, events: list[UsageEvent], generation: Generation | None = None) -> None:
    """Attribute freshly inserted usage events by tag, else by the first matching routing rule.

    The ingestion seam: called from the usage recording path inside its transaction, right after a
    batch's events are inserted (they must have their ids). One query reads the book's rules and the
    matters the batch's tags name; at most one bulk insert writes the attributions (ON CONFLICT DO
    NOTHING, so a repeated call changes nothing). Nothing else, whatever the batch size. `generation`: the
    book's generations read with the request's API key; a book this process has seen without matters at exactly
    that generation costs no query at all (see the module's docstring), else one (an empty index lookup).
    """
    if not events or without_matters.entries(book, generation).get(WITHOUT_MATTERS):
        return
    tags = {routing.tag_of(event.metadata) for event in events} - {None}
    ordered_rules, matter_ids_by_number, has_matters = _routing_inputs(book=book, tags=tags)
    if not has_matters:
        without_matters.remember(book, generation, {WITHOUT_MATTERS: True})
        return
    if not ordered_rules and not matter_ids_by_number:  # nothing this batch names routes by
        return
    decisions = []
    for event in events:
        decision = routing.attribute(_facts(event), ordered_rules=ordered_rules,
                                     matter_ids_by_number=matter_ids_by_number)
        if decision is not None:
            decisions.append((event.pk, decision.matter_id, decision.source))
    _hold_matters(book, {matter_id for _, matter_id, _ in decisions})
    attributions_insert_if_absent(book=book, decisions=decisions)


class MattersMoved(Exception):
    """A matter the batch routes to was deleted after its routing was read: the batch is routed again."""


def _hold_matters(book, matter_ids: set) -> None:
    """Lock the matters the batch attributes to against deletion until it commits (`FOR KEY SHARE`, which only a
    delete or a key change waits for): a matter deleted meanwhile would fail the attributions' foreign key at
    commit, losing the batch with a 500. A matter already gone is MattersMoved."""
    if not matter_ids:
        return
    in_book, params = book_sql(book)
    with connection.cursor() as cursor:  # Django's select_for_update has no KEY SHARE
        cursor.execute(f"SELECT id FROM {Matter._meta.db_table} WHERE {in_book} AND id = ANY(%s) FOR KEY SHARE",
                       [*params, list(matter_ids)])
        held = {row[0] for row in cursor.fetchall()}
    if held != matter_ids:
        raise MattersMoved()


ATTRIBUTION_COLUMNS = ("id", "created_at", "updated_at", "book", "event", "matter", "source", "assigned_by")


def attributions_insert_if_absent(*, book, decisions: list[tuple[UUID, UUID, str]]) -> int:
    """Write (event id, matter id, source) attributions in one INSERT ... ON CONFLICT (event) DO NOTHING;
    returns how many rows were inserted. The one-to-one constraint referees concurrent writers: the
    first one wins. Plain parameters, no model instances: this runs on the usage recording path."""
    if not decisions:
        return 0
    meta = MatterAttribution._meta
    fields = [meta.get_field(name) for name in ATTRIBUTION_COLUMNS]
    quote = connection.ops.quote_name
    row_placeholder = "(" + ", ".join(["%s"] * len(fields)) + ")"
    sql = (f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(field.column) for field in fields)}) "
           f"VALUES {', '.join([row_placeholder] * len(decisions))} "
           f"ON CONFLICT ({quote(meta.get_field('event').column)}) DO NOTHING")
    written_at = clock.now()
    params = [
        field.get_db_prep_save(value, connection)
        for event_id, matter_id, source in decisions
        for field, value in zip(fields, (uuid4(), written_at, written_at, book.pk, event_id, matter_id, source, ""))
    ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount
