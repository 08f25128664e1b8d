"""A matter's detail and the Unassigned page read totals and rows in two statements; a batch (or an assignment)
committed from another connection between them on purpose: each answer counts it in none or all of its figures
(the reads share one snapshot of the ledger, customers/usage_sums.py `ledger_snapshot`). Transactional: the
interloper commits as it would in production."""
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from matters import selectors as matter_selectors
from tests.factories import MatterFactory
from tests.parallel import in_another_connection

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_matter_detail_counts_a_batch_filed_between_its_reads_in_none_or_all(api, book, record, monkeypatch):
    """The totals were read with the matter, then the events: a batch of 3 tagged with the matter and committed
    in between was listed (5 events) under totals of 2."""
    matter = MatterFactory(book=book, matter_number="M-1")
    record(tag="M-1", cost="1")
    record(tag="M-1", cost="2")
    rows, fired = matter_selectors.event_rows, []

    def rows_after_a_batch(**kwargs):
        if not fired:
            fired.append(True)
            in_another_connection(lambda: [record(tag="M-1", cost="5") for _ in range(3)])
        return rows(**kwargs)
    monkeypatch.setattr(matter_selectors, "event_rows", rows_after_a_batch)

    body = api.get(f"/v1/matters/{matter.id}").json()
    assert fired
    assert body["eventCount"] == len(body["events"]) == 2  # the batch came after this answer's snapshot
    assert Decimal(str(body["actualCost"])) == sum(Decimal(row["usageCost"]) for row in body["events"]) == 3
    after = api.get(f"/v1/matters/{matter.id}").json()  # the next answer counts it, in both
    assert after["eventCount"] == len(after["events"]) == 5 and after["actualCost"] == 18


def test_the_unassigned_page_counts_a_batch_recorded_between_its_reads_in_none_or_all(api, book, record,
                                                                                   monkeypatch):
    """The totals over every Unassigned event were read, then the count and the page: a batch of 3 committed in
    between made totalResults 5 and the page list 5 events under a totalCost of 2 events."""
    record(cost="1")
    record(cost="2")
    totals, fired = matter_selectors.event_totals, []

    def totals_then_a_batch(*args, **kwargs):
        answer = totals(*args, **kwargs)
        if not fired:
            fired.append(True)
            in_another_connection(lambda: [record(cost="5") for _ in range(3)])
        return answer
    monkeypatch.setattr(matter_selectors, "event_totals", totals_then_a_batch)

    body = api.get("/v1/matters/unassigned", {"limit": 100}).json()
    assert fired
    assert body["totalResults"] == len(body["results"]) == 2  # the batch came after this answer's snapshot
    assert body["totalCost"] == 3 and body["eventsMissingCost"] == 0
    after = api.get("/v1/matters/unassigned", {"limit": 100}).json()
    assert (after["totalResults"], len(after["results"]), after["totalCost"]) == (5, 5, 18)


def test_the_unassigned_page_and_its_totals_agree_on_an_event_assigned_between_them(api, book, record, monkeypatch):
    """An Unassigned event filed under a matter between the totals and the page was in the totals (cost 3) and
    in neither the count nor the rows."""
    matter = MatterFactory(book=book, matter_number="M-1")
    moved = record(cost="1")
    record(cost="2")
    totals, fired = matter_selectors.event_totals, []

    def totals_then_an_assignment(*args, **kwargs):
        answer = totals(*args, **kwargs)
        if not fired:
            fired.append(True)
            in_another_connection(lambda: api.post("/v1/matters/assign", {"eventId": str(moved.id),
                                                                          "matterId": str(matter.id)}))
        return answer
    monkeypatch.setattr(matter_selectors, "event_totals", totals_then_an_assignment)

    body = api.get("/v1/matters/unassigned", {"limit": 100}).json()
    assert fired
    assert body["totalResults"] == len(body["results"]) == 2 and body["totalCost"] == 3
    after = api.get("/v1/matters/unassigned", {"limit": 100}).json()
    assert (after["totalResults"], [row["usageCost"] for row in after["results"]], after["totalCost"]) == (1, ["2"], 2)


def test_each_unassigned_page_lists_its_own_rows_with_the_totals_of_every_page(api, book, record):
    """The page is read with the totals and handed to the envelope as read: each page its own rows, the last one
    short, one past the end empty, every one with the same totals."""
    start = datetime(2025, 3, 1, tzinfo=timezone.utc)
    newest_first = [str(record(cost="1", usage_date=start + timedelta(hours=n)).id) for n in range(5)][::-1]
    pages = [api.get("/v1/matters/unassigned", {"page": page, "limit": 2}).json() for page in (1, 2, 3, 4)]
    assert [[row["eventId"] for row in page["results"]] for page in pages] == [
        newest_first[:2], newest_first[2:4], newest_first[4:], []]
    assert {(page["totalResults"], page["totalPages"], page["totalCost"]) for page in pages} == {(5, 3, 5)}
