"""The daily usage rollup (`UsageDailyRollup`): the ledger summed by day and month, always exact together
with its backlog (`RollupBacklog`, the events not yet added).

One SQL definition says what an event contributes (`contributions_sql`): its UTC day, customer, agent,
signal and model, split per model for multi-service events (each part's cost to its model; the
event-level figures to the model of its first part). Grouping sets sum the contributions to every grain
of `RollupGrain` at once, so each writer is one statement however many grains there are. Every writer
goes through it:

- recording a batch inserts its new events into the backlog in the statement that inserts the events
  (customers/ledger.py); `analytics_rollup_catch_up` moves a book's backlog into the rollup, ONE
  statement that reads the waiting events, deletes the backlog rows of the events it read (`DELETE ...
  RETURNING`) and adds exactly those (`INSERT ... ON CONFLICT ... DO UPDATE SET x = x + EXCLUDED.x`). It runs in a debounced task after recording, in a periodic job, and at the start of every
  analytics read, so reads always see every committed event; recording does not pay for the rollup (its
  upsert would be a large part of a batch's database time, docs/performance.md) and many batches are added
  at once;
- re-pricing (cost backfill): `analytics_rollup_subtract` with the events as they were, the update, then
  `analytics_rollup_add` with the events as they are; events still in the backlog are left to the
  catch-up, which adds them as they are then;
- rebuilding a book (benchmark seeding, repair): `analytics_rollup_rebuild`, one `INSERT ... SELECT`.

The catch-up, the re-pricing and the rebuild of a book hold one transaction-level advisory lock per book,
so none of them sees the backlog change under it. Reads that need instants inside a day (edge scans) use
the same contributions over the events. Rows are written in key order, so concurrent writers lock
shared rows in the same order (no deadlock).
"""
import logging
from collections.abc import Iterable, Sequence
from uuid import UUID

from django.db import DatabaseError, connection, connections, transaction

from catalog.models import ServiceEntry
from core.database import advisory_xact_lock, advisory_xact_lock_if_free, reading_one_snapshot
from core.jobs import BookFailures
from core.replica import pin_to_primary, read_database
from core.scoping import book_sql, owned
from customers.models import Agent, RollupBacklog, Signal, UsageDailyRollup, UsageEvent

logger = logging.getLogger("billing.rollup")

EVENTS = UsageEvent._meta.db_table
CATALOG = ServiceEntry._meta.db_table
ROLLUP = UsageDailyRollup._meta.db_table
BACKLOG = RollupBacklog._meta.db_table
KEY_COLUMNS = ("book_id", "grain", "day", "customer_id", "agent_id", "signal_id", "model")
MEASURES = ("event_count", "unpriced_count", "quantity", "cost", "model_event_count", "model_cost")

# What one (event, model) pair contributes. A part's model is the canonical name of the catalog entry
# that priced it, null for a non-LLM entry (isApi) or an unresolved part. Part costs are rounded to the
# stored 12 places one by one, so adding batch after batch equals summing everything at once.
_PARTS = """
    SELECT e.book_id, e.usage_date, e.customer_id, e.agent_id, e.signal_id, e.quantity, e.usage_cost,
           {label} AS label, {model_of_service} AS model, 1 AS first_part, e.usage_cost AS part_cost
    FROM {events} e {join}{service_join}
    WHERE e.services IS NULL AND {where}
  UNION ALL
    SELECT e.book_id, e.usage_date, e.customer_id, e.agent_id, e.signal_id, e.quantity, e.usage_cost,
           {label} AS label, part.model, min(part.position), sum(part.cost)
    FROM {events} e {join}
    CROSS JOIN LATERAL (
        SELECT {model_of_part} AS model, item.position, round((item.value ->> 'costUsd')::numeric, 12) AS cost
        FROM jsonb_array_elements(e.services) WITH ORDINALITY AS item(value, position)
    ) part
    WHERE e.services IS NOT NULL AND {where}
    GROUP BY e.id, e.book_id, e.usage_date, e.customer_id, e.agent_id, e.signal_id, e.quantity, e.usage_cost,
             8, 9  -- one row per (event, label, model); every column named, as a CTE has no primary key
"""
# The columns of an event that `_PARTS` reads (a catch-up reads only these into its CTE): keep in step.
_CONTRIBUTING_COLUMNS = ("id, book_id, usage_date, customer_id, agent_id, signal_id, quantity, usage_cost, service_id, "
                         "services")
# A catalog entry's model name, looked up by primary key (one index probe per part).
_MODEL_OF = "(SELECT CASE WHEN svc.is_api THEN NULL ELSE svc.canonical_name END FROM {catalog} svc WHERE svc.id = {id})"
# The same for single-service events as a join of the catalog (`catalog_join`): the planner may hash the catalog
# once instead of probing it for every event.
_SERVICE_JOIN = " LEFT JOIN {catalog} svc ON svc.id = e.service_id"
_MODEL_OF_JOINED = "CASE WHEN svc.is_api THEN NULL ELSE svc.canonical_name END"

_CONTRIBUTIONS = """
    SELECT book_id, label, (usage_date AT TIME ZONE 'UTC')::date AS day, customer_id, agent_id, signal_id, model,
           count(*) FILTER (WHERE first_part = 1) AS event_count,
           count(*) FILTER (WHERE first_part = 1 AND usage_cost IS NULL) AS unpriced_count,
           coalesce(sum(quantity) FILTER (WHERE first_part = 1), 0) AS quantity,
           coalesce(sum(usage_cost) FILTER (WHERE first_part = 1), 0) AS cost,
           count(*) AS model_event_count,
           coalesce(sum(part_cost) FILTER (WHERE usage_cost IS NOT NULL), 0) AS model_cost
    FROM ({parts}) AS parts
    GROUP BY book_id, label, day, customer_id, agent_id, signal_id, model
"""


# What an event contributes when nothing reads its model: one row, model NULL, its parts neither expanded nor
# looked up in the catalog. Its event_count, unpriced_count, quantity and cost equal `_PARTS`'s summed over
# models; its per-model measures do not (they count the event, not its parts), so only a read that sums
# none of them and groups by no model may use it.
_EVENTS_WITHOUT_MODEL = """
    SELECT e.book_id, e.usage_date, e.customer_id, e.agent_id, e.signal_id, e.quantity, e.usage_cost,
           {label} AS label, NULL::text AS model, 1 AS first_part, e.usage_cost AS part_cost
    FROM {events} e {join}
    WHERE {where}
"""


def contributions_sql(where: str, params: Sequence, *, join: str = "", label: str = "NULL::text",
                      events: str = EVENTS, models: bool = True, catalog_join: bool = False) -> tuple[str, list]:
    """SQL for what the events matching `where` (over alias `e`, after an optional `join`) contribute to
    the rollup, grouped by (book_id, label, day, customer_id, agent_id, signal_id, model) with the rollup's
    measures. `params` are the parameters of `join` and `where` together, in that order. `events` is the
    ledger table, or a CTE of the statement holding ledger rows. `models=False`: without the model
    (`_EVENTS_WITHOUT_MODEL`: per-model measures are not the rollup's). `catalog_join`: single-service events
    find their model by a join of the catalog (alias `svc`) rather than a probe each, for statements that run
    with nested loops off (a catch-up)."""
    if not models:
        parts = _EVENTS_WITHOUT_MODEL.format(events=events, join=join, where=where, label=label)
        return _CONTRIBUTIONS.format(parts=parts), [*params]
    parts = _PARTS.format(events=events, join=join, where=where, label=label,
                          service_join=_SERVICE_JOIN.format(catalog=CATALOG) if catalog_join else "",
                          model_of_service=(_MODEL_OF_JOINED if catalog_join
                                            else _MODEL_OF.format(catalog=CATALOG, id="e.service_id")),
                          model_of_part=_MODEL_OF.format(catalog=CATALOG, id="(item.value ->> 'serviceId')::uuid"))
    return _CONTRIBUTIONS.format(parts=parts), [*params, *params]


def execute(sql: str, params: Sequence, *, group_by_hashing: bool = False, join_by_hashing: bool = False
            ) -> list[tuple]:
    """Run one rollup or ledger statement and return its rows. JIT compilation is off for it: the planner's
    estimates for these statements (jsonb expansion, grouping sets) are high enough to trigger JIT, whose
    compile time costs far more than the statements themselves; and sorts and hashes of a few hundred
    thousand rows get the memory to stay off disk.

    `group_by_hashing` keeps the planner from sorting rows to group them, for the statement only: over
    events picked by an array of ids (a catch-up's backlog) it guesses ten rows where there are tens of
    thousands, and sorted them on seven keys (a large share of a catch-up, docs/performance.md). Sorts
    with no other way to run, such as the upsert's key order, still run. `join_by_hashing` does the same for
    nested loops, on the same guess: the planner probed an index once for every event of a catch-up where one
    hash of the other side does.

    A statement outside a transaction is a read, and runs where the request's reads go (a streaming replica for
    analytics, core/replica.py); inside one it runs on the primary with the rest of the transaction."""
    alias = read_database()
    plans_off = [name for name, off in (("enable_sort", group_by_hashing), ("enable_nestloop", join_by_hashing)) if off]
    with transaction.atomic(using=alias), connections[alias].cursor() as cursor:
        cursor.execute("SET LOCAL jit = off; SET LOCAL work_mem = '64MB'"
                       + "".join(f"; SET LOCAL {name} = off" for name in plans_off))
        cursor.execute(sql, params)
        rows = cursor.fetchall() if cursor.description else []
        if plans_off:  # not for later statements of the caller's transaction
            cursor.execute("; ".join(f"RESET {name}" for name in plans_off))
        return rows


# Every grain from one grouping of the contributions. GROUPING(day, customer_id, signal_id, model) is the
# grain: the bits of what a grouping set sums away (customers.models.RollupGrain); month sets group by the
# month instead of the day.
_GRAIN_SETS = ("customer_id, agent_id, signal_id, model", "customer_id, agent_id, signal_id",
               "customer_id, agent_id", "agent_id, signal_id, model")
_GRAINS = """
    SELECT c.book_id, GROUPING(c.day, c.customer_id, c.signal_id, c.model) AS grain, coalesce(c.day, c.month) AS day,
           c.customer_id, c.agent_id, c.signal_id, c.model, {measures}
    FROM (SELECT *, date_trunc('month', day::timestamp)::date AS month FROM ({contributions}) AS d) AS c
    GROUP BY GROUPING SETS ({sets})
"""


def _grains_sql(where: str, params: Sequence, *, sign: int = 1, events: str = EVENTS,
                catalog_join: bool = False) -> tuple[str, list]:
    contributions, contribution_params = contributions_sql(where, params, events=events, catalog_join=catalog_join)
    measures = ", ".join(f"{sign} * sum(c.{measure}) AS {measure}" for measure in MEASURES)
    sets = ", ".join(f"(c.book_id, c.{period}, {', '.join('c.' + column for column in dimensions.split(', '))})"
                     for period in ("day", "month") for dimensions in _GRAIN_SETS)
    return _GRAINS.format(measures=measures, contributions=contributions, sets=sets), contribution_params


def _insert_sql(select: str, *, upsert: bool) -> str:
    columns = ", ".join((*KEY_COLUMNS, *MEASURES))
    # In key order: concurrent upserts lock shared rows in one order, and a rebuilt book's rows lie by
    # grain and day, as the range scans of reads want them.
    sql = (f"INSERT INTO {ROLLUP} AS r (id, created_at, updated_at, {columns}) "
           f"SELECT gen_random_uuid(), now(), now(), g.* FROM ({select}) AS g "
           f"ORDER BY {', '.join('g.' + key for key in KEY_COLUMNS[1:])}")
    if not upsert:
        return sql
    updates = ", ".join(f"{measure} = r.{measure} + EXCLUDED.{measure}" for measure in MEASURES)
    # Emptied: every measure at zero, not only the counts. A deleted agent's or signal's events stay under its id
    # where they were added, while a re-pricing takes them out and adds them back under null: that row holds the
    # difference of costs without an event, and a later orphan's re-pricing took its counts to zero, not its cost.
    emptied = " AND ".join(f"r.{measure} = 0" for measure in MEASURES)
    return (f"{sql} "
            f"ON CONFLICT ({', '.join(KEY_COLUMNS)}) DO UPDATE SET {updates}, updated_at = EXCLUDED.updated_at "
            f"RETURNING r.id, {emptied}")


def _upsert(where: str, params: Sequence, *, sign: int) -> list[UUID]:
    """Add (sign 1) or take away (sign -1) the contributions of the events matching `where`, at every grain,
    in one statement; returns the ids of the rows it left at zero."""
    select, select_params = _grains_sql(where, params, sign=sign)
    return [row_id for row_id, emptied in execute(_insert_sql(select, upsert=True), select_params) if emptied]


def _event_ids(events: Iterable[UsageEvent]) -> list[UUID]:
    return sorted({event.pk for event in events})


def _check_book(book, events: list[UsageEvent]) -> None:
    if any(event.book_id != book.pk for event in events):
        raise ValueError("The rollup of a book takes only that book's events.")


# Events by primary key alone: with a book condition beside it the planner may walk the book's index (its
# statistics lag behind a growing book). Each row is keyed by its event's own book. Events still in the
# backlog are the catch-up's to add.
_BY_IDS_ADDED = f"e.id = ANY(%s) AND NOT EXISTS (SELECT 1 FROM {BACKLOG} b WHERE b.event_id = e.id)"
# The advisory-lock namespace of a book's rollup (the second key is the book's hash).
_LOCK_NAMESPACE = 7301


def _lock_book(book_id, *, wait: bool = True) -> bool:
    """Hold the book's rollup lock until the surrounding transaction ends; `wait=False`: only if nobody holds it
    (False, at once, if somebody does)."""
    if not wait:
        return advisory_xact_lock_if_free(_LOCK_NAMESPACE, str(book_id))
    advisory_xact_lock(_LOCK_NAMESPACE, str(book_id))
    return True


def analytics_rollup_catch_up(*, book_id, unless_busy: bool = False) -> int | None:
    """Move the book's backlog into the rollup (one statement under the book's lock); returns the number
    of events added. Safe to run at any time and as often as wanted: a backlog row is added once. Inside a read of
    one snapshot (core/database.py `one_snapshot`) it does nothing: that read cannot see what it would add, and the
    read's caller caught the rollup up before opening it.

    `unless_busy`: None at once, nothing done, while another transaction holds the book's lock (a catch-up, a
    re-pricing), instead of waiting for it and then catching up what came meanwhile. For a follow-up that runs
    again soon: without a broker each web process runs its own follow-ups, and at the same moments
    (billing/followup.py)."""
    if reading_one_snapshot():
        return 0
    if not owned(RollupBacklog, book_id).exists():
        return 0  # the usual case for reads: one index probe, no lock
    # The rollup changes on the primary: a read that asked for this catch-up reads it there, as a replica that
    # showed this backlog may not have replayed the catch-up yet.
    pin_to_primary()
    # The pending events are read once (an index probe each) into `pending`, which both the single- and the
    # multi-service branch of the contributions then scan: reading the ledger in each cost a second probe
    # per event (docs/performance.md). The backlog's span of usage_date keeps the ledger's partitions of
    # other months out of the read (pruned when the statement starts); a row without a date (written before
    # the ledger was partitioned) opens the span to every month.
    # A backlog row is deleted only when its event was read and counted by this same statement (`counted`): an
    # event the read did not find stays in the backlog for the next catch-up, and `ledger_verify` reports a row
    # whose event never turns up. Draining first and reading after lost events whenever the read missed them.
    # Over this many events the catalog is joined once and the backlog rows found by hashing (`join_by_hashing`),
    # not probed an event at a time.
    select, params = _grains_sql("TRUE", [], events="counted", catalog_join=True)
    backlog_in_book, book_params = book_sql(book_id)
    sql = (f"WITH waiting AS MATERIALIZED (SELECT event_id, usage_date FROM {BACKLOG} WHERE {backlog_in_book}), "
           f"pending AS MATERIALIZED (SELECT {_CONTRIBUTING_COLUMNS} FROM {EVENTS} "
           f"WHERE id = ANY(ARRAY(SELECT event_id FROM waiting)) "
           f"AND usage_date >= (SELECT CASE WHEN count(usage_date) = count(*) THEN min(usage_date) "
           f"ELSE '-infinity' END FROM waiting) "
           f"AND usage_date <= (SELECT CASE WHEN count(usage_date) = count(*) THEN max(usage_date) "
           f"ELSE 'infinity' END FROM waiting)), "
           f"drained AS (DELETE FROM {BACKLOG} WHERE {backlog_in_book} AND event_id IN (SELECT id FROM pending) "
           f"RETURNING event_id), "
           f"counted AS MATERIALIZED (SELECT * FROM pending WHERE id IN (SELECT event_id FROM drained)), "
           f"written AS ({_insert_sql(select, upsert=True)}) "
           f"SELECT count(*) FROM drained")
    with transaction.atomic():
        if not _lock_book(book_id, wait=not unless_busy):
            return None
        ((added,),) = execute(sql, [*book_params, *book_params, *params], group_by_hashing=True,
                              join_by_hashing=True)
    return added


def _books_with_backlog(backlog) -> list:
    return sorted(backlog.values_list("book_id", flat=True).distinct())


def analytics_rollup_catch_up_all(*, now=None) -> int:
    """Catch up every book with a backlog (the periodic job: nothing waits longer than its interval even
    if a task was lost); returns the number of events added."""
    added = 0
    failures = BookFailures("usage-rollup-catch-up")
    for book_id in _books_with_backlog(RollupBacklog.objects.all()):
        with failures.isolated(book_id):
            added += analytics_rollup_catch_up(book_id=book_id)
    return failures.finish(added)


def analytics_rollup_catch_up_books(*, books) -> None:
    """Catch up those of `books` (a queryset) that have a backlog: for a page that lists rollup rows of several books
    (the console), as every analytics read catches its book up first. A book whose catch-up fails is left as it is
    (logged): the page lists its rollup as it stands, and the periodic job catches it up."""
    for book_id in _books_with_backlog(RollupBacklog.objects.filter(book__in=books)):
        try:
            analytics_rollup_catch_up(book_id=book_id)
        except DatabaseError:
            logger.warning("rollup catch-up of book %s failed; listed as it stands", book_id, exc_info=True)


def analytics_rollup_add(*, book, events: Iterable[UsageEvent]) -> None:
    """Add these stored, re-priced events (as they are in the database now) to the rollup: one statement.
    Call it in the transaction that re-priced them, after `analytics_rollup_subtract`."""
    events = list(events)
    _check_book(book, events)
    event_ids = _event_ids(events)
    if event_ids:
        _lock_book(book.pk)
        _upsert(_BY_IDS_ADDED, [event_ids], sign=1)


def analytics_rollup_subtract(*, book, events: Iterable[UsageEvent]) -> None:
    """Take these stored events (as they are in the database now) out of the rollup, before they change;
    rows left at zero are deleted. Takes the book's lock for the rest of the transaction, so the backlog
    keeps the events it holds until the matching `analytics_rollup_add`."""
    events = list(events)
    _check_book(book, events)
    event_ids = _event_ids(events)
    if not event_ids:
        return
    _lock_book(book.pk)
    emptied = _upsert(_BY_IDS_ADDED, [event_ids], sign=-1)
    if emptied:
        owned(UsageDailyRollup, book).filter(pk__in=emptied).delete()


def analytics_rollup_rebuild(*, book) -> int:
    """Recompute the book's rollup from its whole ledger (one DELETE, one INSERT ... SELECT) and empty its
    backlog; returns the number of rows. For seeding and repair: concurrent recording into the book must
    be stopped."""
    with transaction.atomic():
        _lock_book(book.pk)
        owned(RollupBacklog, book).delete()
        owned(UsageDailyRollup, book).delete()
        select, params = _grains_sql(*book_sql(book, "e.book_id"))
        execute(_insert_sql(select, upsert=False), params)
    return owned(UsageDailyRollup, book).count()


# --------------------------------------------------------------------------- verification against the ledger

_KEY_LIST = ", ".join(KEY_COLUMNS)
# A deleted agent's or signal's id stays in the rollup, where reads take it for null, as the ledger's SET_NULL
# made it (customers/models.py): the comparison reads the rollup's ids the same way.
_IDENTITY_TABLES = {"agent_id": Agent._meta.db_table, "signal_id": Signal._meta.db_table}


def _folded(column: str, alias: str = "r") -> str:
    """The rollup's `column` as reads take it: an agent or signal id that no longer exists is null."""
    if column not in _IDENTITY_TABLES:
        return f"{alias}.{column}"
    return f"CASE WHEN {alias}.{column} IN (SELECT id FROM {_IDENTITY_TABLES[column]}) THEN {alias}.{column} END"


def _differences_sql(book_id) -> tuple[str, list]:
    """Rows of (key columns, then for each measure the ledger's figure and the rollup's) wherever the book's
    rollup differs from its ledger, the events still in the backlog left out (they are the catch-up's, not
    drift). One statement: the ledger's grains and the rollup's rows with their signs, summed per key."""
    in_book, book_params = book_sql(book_id, "e.book_id")
    expected, params = _grains_sql(f"{in_book} AND NOT EXISTS (SELECT 1 FROM {BACKLOG} b WHERE b.event_id = e.id)",
                                   book_params)
    rollup_in_book, rollup_params = book_sql(book_id, "r.book_id")
    sides = ", ".join(f"sum({measure}) FILTER (WHERE side = 'ledger') AS ledger_{measure}, "
                      f"sum({measure}) FILTER (WHERE side = 'rollup') AS rollup_{measure}" for measure in MEASURES)
    differs = " OR ".join(f"coalesce(sum({measure}) FILTER (WHERE side = 'ledger'), 0) <> "
                          f"coalesce(sum({measure}) FILTER (WHERE side = 'rollup'), 0)" for measure in MEASURES)
    # Both sides folded alike: a batch that named a signal being deleted stored its id, which reads take for null.
    ledger_columns = ", ".join(_folded(column, "g") + f" AS {column}" for column in (*KEY_COLUMNS, *MEASURES))
    sql = (f"SELECT {_KEY_LIST}, {sides} FROM ("
           f"SELECT 'ledger' AS side, {ledger_columns} "
           f"FROM ({expected}) AS g "
           f"UNION ALL SELECT 'rollup', {', '.join(_folded(c) for c in (*KEY_COLUMNS, *MEASURES))} "
           f"FROM {ROLLUP} r WHERE {rollup_in_book}) AS both_sides "
           f"GROUP BY {_KEY_LIST} HAVING {differs} ORDER BY grain, day, customer_id, agent_id, signal_id, model")
    return sql, [*params, *rollup_params]


def analytics_rollup_differences(*, book_id, repair: bool = False) -> list[dict]:
    """Where the book's rollup differs from what its ledger says (`ledger_verify`): one dict per rollup key with
    `ledger` and `rollup` measures. With `repair`, the rollup rows are set to the ledger's figures in the same
    transaction, under the book's rollup lock (no catch-up or re-pricing runs meanwhile, and recording only adds
    to the backlog, which the comparison leaves out); the ledger is never written."""
    sql, params = _differences_sql(book_id)
    with transaction.atomic():
        _lock_book(book_id)
        rows = execute(sql, params, group_by_hashing=True)
        differences = []
        for row in rows:
            key = dict(zip(KEY_COLUMNS, row[:len(KEY_COLUMNS)]))
            values = row[len(KEY_COLUMNS):]
            ledger = {m: values[2 * i] or 0 for i, m in enumerate(MEASURES)}
            rollup = {m: values[2 * i + 1] or 0 for i, m in enumerate(MEASURES)}
            differences.append({"key": key, "ledger": ledger, "rollup": rollup})
        if repair and differences:
            _set_to_ledger(book_id, differences)
    return differences


def _set_to_ledger(book_id, differences: list[dict]) -> None:
    """Replace the differing rollup rows by the ledger's figures: delete them, then insert the ledger's rows
    that are not zero (both in key order)."""
    kept = []
    with connection.cursor() as cursor:
        for difference in differences:
            key = difference["key"]
            # The row's whole key as the comparison read it, its book included: NULL parts (a grain's summed-away
            # columns, a deleted agent's or signal's id) match NULL.
            # The book, grain and day are never NULL: compared plainly, they reach the rows through the unique
            # index's leading columns instead of scanning every book's rollup per difference.
            in_book, book_params = book_sql(key["book_id"], f"{ROLLUP}.book_id")
            condition = " AND ".join(f"{_folded(column, ROLLUP)} IS NOT DISTINCT FROM %s" for column in KEY_COLUMNS)
            cursor.execute(f"DELETE FROM {ROLLUP} WHERE {in_book} AND grain = %s AND day = %s AND {condition}",
                           [*book_params, key["grain"], key["day"], *(key[column] for column in KEY_COLUMNS)])
            if any(difference["ledger"][measure] for measure in MEASURES):
                kept.append(difference)
        columns = ", ".join((*KEY_COLUMNS, *MEASURES))
        for difference in kept:
            values = [difference["key"][c] for c in KEY_COLUMNS] + [difference["ledger"][m] for m in MEASURES]
            cursor.execute(f"INSERT INTO {ROLLUP} (id, created_at, updated_at, {columns}) "
                           f"VALUES (gen_random_uuid(), now(), now(), {', '.join(['%s'] * len(values))})", values)
