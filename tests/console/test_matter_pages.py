"""A matter's usage in the console: its page says how many events it holds and what they cost, as
GET /v1/matters/{id} does, and links to the usage events list filtered to exactly those events; the matters list's
count is the same link; the attributions list says each event's date and cost."""
import html
import json
import re
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.db import transaction

from core import display
from matters.ingestion import matters_attribute_new_events
from tests.factories import MatterFactory
from tests.matters.conftest import usage_event

pytestmark = pytest.mark.django_db

JUNE_3 = datetime(2025, 6, 3, 9, 30, tzinfo=timezone.utc)
EVENTS_LINK = re.compile(r'href="(/admin/customers/usageevent/\?matter=[^"]+)"')


def record(book, **fields):
    """A usage event attributed at record time, as the recording path does (a `tag` names a matter number)."""
    with transaction.atomic():
        event = usage_event(book, **fields)
        matters_attribute_new_events(book=book, events=[event])
    return event


@pytest.fixture
def matter(book):
    """Matter M-1 with three events (one not priced yet), beside another matter's event and an unassigned one."""
    matter = MatterFactory(book=book, matter_number="M-1", name="Acme v. Beta")
    MatterFactory(book=book, matter_number="M-2", name="Other case")
    record(book, tag="M-1", cost="1.25", usage_date=JUNE_3)
    record(book, tag="M-1", cost="0.000375", signal="documents_reviewed")
    record(book, tag="M-1", cost=None)
    record(book, tag="M-2", cost="7.00")
    record(book, cost="3.00")
    return matter


def api_detail(api, matter) -> dict:
    resp = api.get(f"/v1/matters/{matter.id}")
    assert resp.status_code == 200, resp.content
    return json.loads(resp.content, parse_float=Decimal)


def readonly(page: str, name: str) -> str:
    """The text of a read-only field of a change page."""
    found = re.search(rf'class="form-row[^"]*field-{name}".*?<div class="readonly">(.*?)</div>', page, re.S)
    assert found, name
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(1))).strip()


def test_the_matter_page_shows_its_event_count_and_the_apis_actual_cost(console, api, matter):
    detail = api_detail(api, matter)
    assert (detail["eventCount"], detail["actualCost"], detail["eventsMissingCost"]) == (3, Decimal("1.250375"), 1)
    page = console.get(f"/admin/matters/matter/{matter.id}/change/").content.decode()
    assert readonly(page, "events") == display.quantity(detail["eventCount"]) == "3"
    assert readonly(page, "actual_cost") == (f"{display.price(detail['actualCost'])} "
                                             "(1 event without a cost yet, counted as 0)") == \
        "$1.250375 (1 event without a cost yet, counted as 0)"


def test_the_matter_pages_link_lists_exactly_its_events(console, api, matter):
    page = console.get(f"/admin/matters/matter/{matter.id}/change/").content.decode()
    [link] = EVENTS_LINK.findall(page)
    resp = console.get(html.unescape(link))
    assert resp.status_code == 200
    listed = {str(event.pk) for event in resp.context["cl"].result_list}
    assert listed == {row["eventId"] for row in api_detail(api, matter)["events"]} and len(listed) == 3
    assert "Usage events of matter M-1 Acme v. Beta" in resp.content.decode()


def test_the_matters_list_links_each_count_to_the_matters_events(console, matter):
    page = console.get("/admin/matters/matter/").content.decode()
    assert re.search(rf'<a href="/admin/customers/usageevent/\?matter={matter.id}">'
                     r'<span class="console-number">3</span></a>', page)


def test_the_matter_filter_lists_nothing_of_another_organization_and_refuses_a_non_id(console, other_book, matter):
    theirs = MatterFactory(book=other_book, matter_number="M-1")
    record(other_book, tag="M-1", cost="5.00")
    resp = console.get(f"/admin/customers/usageevent/?matter={theirs.id}")
    assert resp.status_code == 200 and list(resp.context["cl"].result_list) == []
    assert theirs.name not in resp.content.decode()
    odd = console.get("/admin/customers/usageevent/?matter=not-an-id")
    assert odd.status_code == 302 and odd["Location"].endswith("?e=1")


def row_text(page: str, pk) -> str:
    """The text of a list's row, found by its selection checkbox."""
    row = re.search(rf'<tr>(?:(?!</tr>).)*value="{pk}"(?:(?!</tr>).)*</tr>', page, re.S)
    assert row, pk
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", row.group(0))).split())


def test_the_attributions_list_shows_each_events_date_and_cost(console, matter):
    resp = console.get("/admin/matters/matterattribution/?q=M-1")
    page = resp.content.decode()
    rows = {attribution.event.usage_cost: attribution for attribution in resp.context["cl"].result_list}
    assert set(rows) == {Decimal("1.25"), Decimal("0.000375"), None}
    assert row_text(page, rows[Decimal("1.25")].pk).startswith("reports × 1 for cust-1 2025-06-03 09:30 UTC $1.25 M-1")
    assert "$0.000375" in row_text(page, rows[Decimal("0.000375")].pk)
    unpriced = row_text(page, rows[None].pk)
    assert re.search(r"UTC - M-1", unpriced), unpriced  # a dash while the event has no cost
