"""The operator console for matters: pages render, rows stay inside the operator's organizations, and
deleting a matter there has the API's effects."""
import pytest
from django.test import Client

from accounts.models import User
from accounts.services import member_ensure
from matters.models import Matter, MatterAttribution, MatterRule
from tests.factories import MatterFactory, MatterRuleFactory, book_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def console(org):
    """A staff member of `org` signed in to the console."""
    member = member_ensure(organization=org, email="operator@acme.example.com", role="owner")
    User.objects.filter(pk=member.user_id).update(is_staff=True)
    client = Client()
    client.force_login(member.user)
    return client


@pytest.mark.parametrize("page", ["/admin/matters/matter/", "/admin/matters/matterrule/",
                                  "/admin/matters/matterattribution/", "/admin/matters/matter/add/"])
def test_console_pages_render(console, book, record, page):
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="agent-1")
    record(tag=matter.matter_number)
    assert console.get(page).status_code == 200


def test_console_lists_only_the_operators_organizations(console, book, other_book):
    MatterFactory(book=book, matter_number="MINE-1")
    MatterFactory(book=other_book, matter_number="THEIRS-1")
    page = console.get("/admin/matters/matter/").content.decode()
    assert "MINE-1" in page and "THEIRS-1" not in page


def test_deleting_a_matter_in_the_console_returns_its_events_and_deletes_its_rules(console, book, record):
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="agent-9")
    event = record(tag=matter.matter_number)
    resp = console.post(f"/admin/matters/matter/{matter.id}/delete/", {"post": "yes"})
    assert resp.status_code == 302
    assert not Matter.objects.filter(pk=matter.id).exists() and not MatterRule.objects.exists()
    attribution = MatterAttribution.objects.get(event=event)
    assert (attribution.matter_id, attribution.source) == (None, None)


def test_a_rule_without_a_matcher_is_refused_in_the_console_as_in_the_api(console, book):
    matter = MatterFactory(book=book)
    resp = console.post("/admin/matters/matterrule/add/", {"book": str(book.id), "matter": str(matter.id),
                                                          "priority": "100"})
    assert resp.status_code == 200  # the form again, with the service's message
    assert "at least one matcher" in resp.content.decode().lower()
    assert not MatterRule.objects.exists()


def test_a_responsible_user_outside_the_organization_is_refused_in_the_console(console, book, other_org):
    # The operator sees both organizations, so the other one's member is offered, but cannot be responsible here.
    member_ensure(organization=other_org, email="operator@acme.example.com", role="owner")
    outsider = member_ensure(organization=other_org, email="outsider@other.example.com", role="owner").user
    resp = console.post("/admin/matters/matter/add/", {
        "book": str(book.id), "matter_number": "M-1", "name": "Case", "client_name": "Client", "status": "open",
        "responsible_user": str(outsider.id), "rules-TOTAL_FORMS": "0", "rules-INITIAL_FORMS": "0"})
    assert resp.status_code == 200
    assert "Not a member of this organization." in resp.content.decode()
    assert not Matter.objects.exists()


def test_a_rule_of_the_test_book_cannot_point_at_a_matter_of_the_live_book(console, book):
    live_matter = MatterFactory(book=book_of(book.organization, "live"))
    resp = console.post("/admin/matters/matterrule/add/", {"book": str(book.id), "matter": str(live_matter.id),
                                                          "priority": "100", "agent_code": "agent-1"})
    assert resp.status_code == 200  # the form again
    assert resp.context["adminform"].form.errors["matter"] == [
        "Must belong to the same book (organization, test or live) as this record."]
    assert not MatterRule.objects.exists()


def test_a_rule_moved_to_a_matter_of_the_live_book_is_refused(console, book):
    rule = MatterRuleFactory(matter=MatterFactory(book=book), agent_code="agent-1")
    live_matter = MatterFactory(book=book_of(book.organization, "live"))
    resp = console.post(f"/admin/matters/matterrule/{rule.id}/change/", {
        "matter": str(live_matter.id), "priority": "100", "agent_code": "agent-1"})
    assert resp.status_code == 200
    assert "matter" in resp.context["adminform"].form.errors
    rule.refresh_from_db()
    assert rule.matter.book_id == book.id
