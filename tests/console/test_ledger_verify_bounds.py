"""The ledger verifier's bounds (console/verification.py): what an archived month may not switch off in the check of
matter attributions (matters/verification.py)."""
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from console.verification import ledger_verify
from customers.partitions import archive_name, ledger_partition_detach, ledger_partitions_ensure
from matters.models import AttributionSource, MatterAttribution
from tests.factories import MatterFactory, UsageEventFactory

pytestmark = [pytest.mark.django_db, pytest.mark.ledger_drift_allowed]

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)
JUNE = datetime(2025, 6, 1, tzinfo=UTC)


def verify_command() -> tuple[int, str]:
    out = StringIO()
    try:
        call_command("ledger_verify", "--check=matter_attributions", stdout=out)
        return 0, out.getvalue()
    except SystemExit as exit_:
        return exit_.code, out.getvalue()


@pytest.fixture
def june_archived(book):
    """Three events filed under matter M-1: one of June 2025, whose month is then detached (its table kept), and two
    of November 2026, still in the ledger."""
    ledger_partitions_ensure(months=[JUNE, datetime(2026, 11, 1, tzinfo=UTC)])
    matter = MatterFactory(book=book, matter_number="M-1")
    archived, kept, gone = (UsageEventFactory(book=book, usage_date=when) for when in (
        datetime(2025, 6, 10, tzinfo=UTC), datetime(2026, 11, 10, tzinfo=UTC), datetime(2026, 11, 11, tzinfo=UTC)))
    for event in (archived, kept, gone):
        MatterAttribution.objects.create(book=book, event=event, matter=matter, source=AttributionSource.MANUAL,
                                         assigned_by="test")
    ledger_partition_detach(JUNE, now=NOW)
    return archived, kept, gone


def test_an_attribution_whose_event_left_a_current_month_is_reported_and_repaired_beside_an_archived_month(
        book, june_archived):
    archived, kept, gone = june_archived
    assert ledger_verify(now=NOW, book=book, checks=("matter_attributions",))[0].drift == 0
    with connection.cursor() as cursor:  # November's event leaves the ledger behind the service's back
        cursor.execute("DELETE FROM customers_usageevent WHERE id = %s", [gone.pk])
    [finding] = ledger_verify(now=NOW, book=book, checks=("matter_attributions",))[0].findings["matter_attributions"]
    assert (finding.subject, finding.ledger, finding.derived) == (
        f"matter attribution of event {gone.pk}", "no such event", "attributed to M-1")
    ledger_verify(now=NOW, book=book, checks=("matter_attributions",), repair=True)
    # The archived event's attribution stays: it is found again if the month is restored.
    assert set(MatterAttribution.objects.values_list("event_id", flat=True)) == {archived.pk, kept.pk}
    assert ledger_verify(now=NOW, book=book, checks=("matter_attributions",))[0].drift == 0


def test_once_an_archived_months_table_is_dropped_orphans_are_reported_not_checked_and_never_repaired(
        book, june_archived):
    _, _, gone = june_archived
    with connection.cursor() as cursor:  # the operator dumped and dropped June's table; an event left November
        cursor.execute(f"DROP TABLE {archive_name(JUNE)}")
        cursor.execute("DELETE FROM customers_usageevent WHERE id = %s", [gone.pk])
    status, output = verify_command()
    assert status == 1 and "1 book(s) verified, 1 difference(s)" in output, output
    [finding] = ledger_verify(now=NOW, book=book, checks=("matter_attributions",),
                              repair=True)[0].findings["matter_attributions"]
    assert finding.subject == "matter attributions whose event is in no month of the ledger (not checked)"
    assert finding.ledger == "not checked: the dropped table of archived month(s) 2025-06 may have held their events"
    assert finding.derived.startswith("2 attribution(s), kept")
    assert MatterAttribution.objects.count() == 3  # either may be June's: none is deleted
