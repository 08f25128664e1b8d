"""What the ledger verifier (`manage.py ledger_verify`, console/verification.py) checks in matters.

A matter's cost, event count and event list are not stored: every read joins the attributions with the ledger
(matters/selectors.py), so they cannot drift from it. What is stored is one attribution row per event; a row
whose event is in no month of the ledger is drift (an attribution of nothing: the matter's figures, joined
from the ledger, leave it out), unless its event is in a month archived out of the ledger (`ArchivedMonth`),
whose events keep their attributions by design (docs/decisions/ledger-partitions.md). The archived months'
tables still in the database are asked for the event, so an attribution whose event left a current month is
reported whatever was archived. A month whose table was dropped says nothing of which events it held (an
attribution carries no usage date, and neither its creation nor its event id's time places the event's month:
usage may be back-filled), so once one was dropped the rows without their event anywhere are reported as one
finding, not checked, with their number. Repair deletes the orphans of a checked book; it never deletes a row
whose event an archive table holds or a dropped one may have held."""
from django.db import connection, transaction

from core.scoping import book_sql
from customers.models import ArchivedMonth, UsageEvent
from customers.partitions import archived_months
from customers.verification import Finding
from matters.models import Matter, MatterAttribution

LEDGER = UsageEvent._meta.db_table
ATTRIBUTIONS = MatterAttribution._meta.db_table
MATTERS = Matter._meta.db_table
REPORTED = 1000  # orphans listed one by one, at most (a repair deletes them all)


def attribution_orphans(*, book, repair: bool = False) -> list[Finding]:
    quote = connection.ops.quote_name
    with transaction.atomic(), connection.cursor() as cursor:
        # A detach locks the ledger exclusively first (customers/partitions.py): none moves a month's events into
        # an archive table between the list of tables below and the statements that ask them.
        cursor.execute(f"LOCK TABLE ONLY {LEDGER} IN ACCESS SHARE MODE")
        kept = archived_months()
        dropped = [f"{month:%Y-%m}" for month, archive in
                   ArchivedMonth.objects.order_by("month").values_list("month", "archive") if archive not in kept]
        in_book, params = book_sql(book, "a.book_id")
        orphan = (f"{in_book} AND NOT EXISTS (SELECT 1 FROM {LEDGER} e WHERE e.id = a.event_id "
                  f"AND e.book_id = a.book_id)"
                  + "".join(f" AND NOT EXISTS (SELECT 1 FROM {quote(table)} x WHERE x.id = a.event_id)"
                            for table in kept))
        if dropped:
            cursor.execute(f"SELECT count(*) FROM {ATTRIBUTIONS} a WHERE {orphan}", params)
            unplaced = cursor.fetchone()[0]
            if not unplaced:
                return []
            return [Finding("matter attributions whose event is in no month of the ledger (not checked)",
                            f"not checked: the dropped table of archived month(s) {', '.join(dropped)} may have "
                            f"held their events",
                            f"{unplaced} attribution(s), kept (pg_restore the month's table from its dump to check "
                            f"them)")]
        cursor.execute(f"SELECT a.event_id, m.matter_number FROM {ATTRIBUTIONS} a "
                       f"LEFT JOIN {MATTERS} m ON m.id = a.matter_id WHERE {orphan} "
                       f"ORDER BY a.created_at DESC LIMIT %s", [*params, REPORTED])
        rows = cursor.fetchall()
        if repair and rows:
            cursor.execute(f"DELETE FROM {ATTRIBUTIONS} a WHERE {orphan}", params)
    return [Finding(f"matter attribution of event {event_id}", "no such event",
                    f"attributed to {matter_number or 'Unassigned'}") for event_id, matter_number in rows]
