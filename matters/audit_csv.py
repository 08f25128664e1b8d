"""The matters audit summary as a CSV file a law firm hands to its finance team.

Same rows as the JSON summary, in the same order (each matter, then Unassigned, then Total), costs as the
same exact decimal strings, so the two reconcile to the last digit.
"""
import csv
import io

from django.http import HttpResponse

from core.serialization import decimal_text
from core.spreadsheet import spreadsheet_safe
from matters.selectors import AuditRow, AuditSummary

HEADER = ["Matter number", "Matter name", "Client", "Status", "Events", "Events missing cost", "Cost (USD)"]


def _line(row: AuditRow) -> list[str]:
    return [spreadsheet_safe(row.matter_number), spreadsheet_safe(row.name), spreadsheet_safe(row.client_name),
            row.status or "", str(row.event_count), str(row.events_missing_cost), decimal_text(row.cost)]


def audit_csv_text(summary: AuditSummary) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(HEADER)
    for row in [*summary.matters, summary.unassigned, summary.totals]:
        writer.writerow(_line(row))
    return out.getvalue()


def audit_csv_response(summary: AuditSummary) -> HttpResponse:
    filename = f"matters-audit-{summary.start_date.isoformat()}-to-{summary.end_date.isoformat()}.csv"
    return HttpResponse(audit_csv_text(summary), content_type="text/csv; charset=utf-8",
                        headers={"Content-Disposition": f'attachment; filename="{filename}"'})
