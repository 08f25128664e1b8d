"""What the ledger verifier (`manage.py ledger_verify`, console/verification.py) checks in matters.

A matter's cost, event count and event list are not stored: every read joins the attributions with the ledger
(matters/selectors.py), so they cannot drift from it. What is stored is one attribution row per event; a row
whose event is in no month of the ledger is drift (an attribution of nothing: the matter's figures, joined
from the ledger, leave it out), unless months were archived (`ArchivedMonth`, whether their tables are still in the database or
dropped), whose events keep their attributions by design (docs/decisions/ledger-partitions.md): then the check is
left to the operator, and says so. Repair deletes the orphans (never once a month was archived)."""
from core.scoping import owned
from customers.models import UsageEvent
from customers.models import ArchivedMonth
from customers.partitions import archived_months
from customers.verification import Finding
from matters.models import MatterAttribution


def attribution_orphans(*, book, repair: bool = False) -> list[Finding]:
    orphans = (owned(MatterAttribution, book)
               .exclude(event_id__in=owned(UsageEvent, book).values("id")).select_related("matter"))
    findings = [Finding(f"matter attribution of event {row.event_id}", "no such event",
                        f"attributed to {row.matter.matter_number if row.matter else 'Unassigned'}")
                for row in orphans[:1000]]
    if not findings:
        return []
    if archived_months() or ArchivedMonth.objects.exists():
        return []  # the orphans may be archived months' events, kept or dropped (module docstring)
    if repair:
        orphans.delete()
    return findings
