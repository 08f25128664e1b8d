"""Matters CRUD, detail, delete, Unassigned and access (spec §2 Matter, §4 Matters, §5.3, §5.5)."""
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from accounts.services import member_ensure
from matters.models import AttributionSource, Matter, MatterAttribution, MatterRule
from tests.factories import MatterFactory, MatterRuleFactory

pytestmark = pytest.mark.django_db

ROLES_MESSAGE = "owner, admin, finance or legal"


def create_matter(api, **fields):
    body = {"matterNumber": "2025-001", "name": "Smith v Jones", "clientName": "Smith", **fields}
    resp = api.post("/v1/matters", body)
    assert resp.status_code == 201, resp.json()
    return resp.json()


# --------------------------------------------------------------------------- create, read, update


def test_create_returns_the_matter_open_by_default(api, book):
    body = create_matter(api)
    assert body["matterNumber"] == "2025-001" and body["name"] == "Smith v Jones" and body["clientName"] == "Smith"
    assert body["status"] == "open" and body["responsibleUserId"] is None
    assert {"id", "createdAt", "updatedAt"} <= set(body)
    assert Matter.objects.get(pk=body["id"]).book == book


@pytest.mark.parametrize("missing", ["matterNumber", "name", "clientName"])
def test_create_without_a_required_field_is_400_naming_it(api, missing):
    body = {"matterNumber": "2025-001", "name": "Smith v Jones", "clientName": "Smith"}
    del body[missing]
    resp = api.post("/v1/matters", body)
    assert resp.status_code == 400
    assert any(message.startswith(f"{missing}:") for message in resp.json()["message"])


def test_create_with_an_unknown_status_is_400(api):
    resp = api.post("/v1/matters", {"matterNumber": "X", "name": "N", "clientName": "C", "status": "archived"})
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith("status:")


def test_duplicate_matter_number_is_409_on_create(api):
    create_matter(api)
    resp = api.post("/v1/matters", {"matterNumber": "2025-001", "name": "Other", "clientName": "Other"})
    assert resp.status_code == 409
    assert "matterNumber" in resp.json()["message"]


def test_the_same_matter_number_may_exist_in_another_organization(api, other_api):
    create_matter(api)
    create_matter(other_api)


def test_responsible_user_must_be_a_member_of_the_organization(api, org, other_org):
    member = member_ensure(organization=org, email="lawyer@acme.example.com", role="legal")
    stranger = member_ensure(organization=other_org, email="stranger@other.example.com", role="owner")
    body = create_matter(api, responsibleUserId=str(member.user_id))
    assert body["responsibleUserId"] == str(member.user_id)
    resp = api.post("/v1/matters", {"matterNumber": "2025-002", "name": "N", "clientName": "C",
                                    "responsibleUserId": str(stranger.user_id)})
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith("responsibleUserId:")


def test_patch_changes_only_sent_fields_and_null_clears_the_responsible_user(api, org):
    member = member_ensure(organization=org, email="lawyer@acme.example.com", role="legal")
    matter = create_matter(api, responsibleUserId=str(member.user_id))
    resp = api.patch(f"/v1/matters/{matter['id']}", {"status": "closed"})
    assert resp.status_code == 200
    body = resp.json()
    assert body["status"] == "closed"
    assert (body["matterNumber"], body["name"], body["clientName"]) == ("2025-001", "Smith v Jones", "Smith")
    assert body["responsibleUserId"] == str(member.user_id)
    resp = api.patch(f"/v1/matters/{matter['id']}", {"responsibleUserId": None})
    assert resp.status_code == 200 and resp.json()["responsibleUserId"] is None
    assert Matter.objects.get(pk=matter["id"]).responsible_user_id is None


def test_patch_to_a_matter_number_already_taken_is_409_and_changes_nothing(api):
    first = create_matter(api)
    second = create_matter(api, matterNumber="2025-002")
    resp = api.patch(f"/v1/matters/{second['id']}", {"matterNumber": first["matterNumber"], "name": "Renamed"})
    assert resp.status_code == 409
    assert Matter.objects.get(pk=second["id"]).name == "Smith v Jones"


def test_patch_with_null_for_a_required_field_is_400(api):
    matter = create_matter(api)
    resp = api.patch(f"/v1/matters/{matter['id']}", {"name": None})
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith("name:")


def test_list_is_paginated_with_cost_fields_on_every_row(api, book, record):
    for n in range(3):
        create_matter(api, matterNumber=f"M-{n}")
    resp = api.get("/v1/matters", {"page": 2, "limit": 2})
    assert resp.status_code == 200
    body = resp.json()
    assert (body["page"], body["limit"], body["totalPages"], body["totalResults"]) == (2, 2, 2, 3)
    assert len(body["results"]) == 1
    row = body["results"][0]
    assert row["matterNumber"] == "M-0"  # newest first
    assert (row["actualCost"], row["eventCount"], row["eventsMissingCost"]) == (0, 0, 0)


def test_list_defaults_to_ten_rows_and_rejects_a_limit_over_100(api, book):
    for n in range(11):
        MatterFactory(book=book)
    body = api.get("/v1/matters").json()
    assert body["limit"] == 10 and len(body["results"]) == 10 and body["totalResults"] == 11
    assert api.get("/v1/matters", {"limit": 101}).status_code == 400
    assert api.get("/v1/matters", {"limit": 0}).status_code == 400


def test_cost_fields_sum_resolved_costs_and_count_unresolved_ones(api, book, record):
    matter = create_matter(api)
    record(tag="2025-001", cost="1.25")
    record(tag="2025-001", cost="0.000000000001")
    record(tag="2025-001", cost=None)
    record(cost="9")  # Unassigned: not in the matter's cost
    row = api.get("/v1/matters").json()["results"][0]
    assert row["actualCost"] == 1.250000000001
    assert (row["eventCount"], row["eventsMissingCost"]) == (3, 1)
    detail = api.get(f"/v1/matters/{matter['id']}").json()
    assert (detail["actualCost"], detail["eventCount"], detail["eventsMissingCost"]) == (1.250000000001, 3, 1)


# --------------------------------------------------------------------------- detail


def test_detail_returns_the_matter_its_totals_and_event_rows(api, book, record):
    matter = create_matter(api)
    event = record(tag="2025-001", cost="0.5", quantity="2.5", agent="drafter", signal="pages")
    unpriced = record(tag="2025-001", cost=None)
    resp = api.get(f"/v1/matters/{matter['id']}")
    assert resp.status_code == 200
    body = resp.json()
    assert body["matter"]["id"] == matter["id"] and body["matter"]["matterNumber"] == "2025-001"
    assert body["eventsCap"] == 100
    rows = {row["eventId"]: row for row in body["events"]}
    assert rows[str(event.id)] == {
        "eventId": str(event.id), "usageDate": event.usage_date.isoformat().replace("+00:00", "Z"),
        "agentName": "drafter name", "signalName": "pages", "quantity": "2.5", "usageCost": "0.5", "source": "tag"}
    assert rows[str(unpriced.id)]["usageCost"] is None


def test_detail_lists_the_100_most_recent_events_but_totals_cover_all(api, book, record):
    matter = create_matter(api)
    start = datetime(2025, 3, 1, tzinfo=timezone.utc)
    events = [record(tag="2025-001", cost="1", usage_date=start + timedelta(minutes=n)) for n in range(102)]
    body = api.get(f"/v1/matters/{matter['id']}").json()
    assert body["eventCount"] == 102 and body["actualCost"] == 102
    assert len(body["events"]) == 100
    assert [row["eventId"] for row in body["events"]] == [str(e.id) for e in reversed(events[2:])]


def test_detail_of_an_unknown_or_malformed_id_is_404(api):
    assert api.get(f"/v1/matters/{uuid.uuid4()}").status_code == 404
    assert api.get("/v1/matters/not-a-uuid").status_code == 404


def test_matter_of_another_organization_reads_as_404_everywhere(api, other_book):
    foreign = MatterFactory(book=other_book)
    assert api.get(f"/v1/matters/{foreign.id}").status_code == 404
    assert api.patch(f"/v1/matters/{foreign.id}", {"name": "Mine"}).status_code == 404
    assert api.delete(f"/v1/matters/{foreign.id}").status_code == 404
    assert Matter.objects.get(pk=foreign.id).name != "Mine"


def test_live_key_does_not_see_test_book_matters(api, client_for):
    matter = create_matter(api)
    live = client_for(environment="live")
    assert live.get(f"/v1/matters/{matter['id']}").status_code == 404
    assert live.get("/v1/matters").json()["totalResults"] == 0


# --------------------------------------------------------------------------- delete


def test_delete_returns_events_to_unassigned_and_deletes_rules(api, book, record):
    matter = create_matter(api)
    rule = api.post("/v1/matter-rules", {"matterId": matter["id"], "agentCode": "drafter"}).json()
    tagged = record(tag="2025-001")
    routed = record(agent="drafter")
    manual = record()
    api.post("/v1/matters/assign", {"eventId": str(manual.id), "matterId": matter["id"]})
    resp = api.delete(f"/v1/matters/{matter['id']}")
    assert resp.status_code == 200
    assert resp.json() == {"deleted": True, "eventsReturnedToUnassigned": 3, "routingRulesDeleted": 1}
    assert not Matter.objects.filter(pk=matter["id"]).exists()
    assert not MatterRule.objects.filter(pk=rule["id"]).exists()
    unassigned = {row["eventId"]: row for row in api.get("/v1/matters/unassigned", {"limit": 100}).json()["results"]}
    assert {str(tagged.id), str(routed.id), str(manual.id)} <= set(unassigned)
    assert unassigned[str(tagged.id)]["source"] is None
    assert api.get(f"/v1/matters/{matter['id']}").status_code == 404


def test_events_returned_by_a_deletion_are_not_swept_by_apply(api, book, record):
    doomed = create_matter(api)
    keeper = create_matter(api, matterNumber="2025-002")
    event = record(tag="2025-001", agent="drafter")
    api.delete(f"/v1/matters/{doomed['id']}")
    api.post("/v1/matter-rules", {"matterId": keeper["id"], "agentCode": "drafter"})
    assert api.post("/v1/matter-rules/apply").json()["assigned"] == 0
    attribution = MatterAttribution.objects.get(event=event)
    assert (attribution.matter_id, attribution.source) == (None, None)


def test_delete_of_a_matter_without_events_or_rules_reports_zero(api):
    matter = create_matter(api)
    resp = api.delete(f"/v1/matters/{matter['id']}")
    assert resp.json() == {"deleted": True, "eventsReturnedToUnassigned": 0, "routingRulesDeleted": 0}


# --------------------------------------------------------------------------- Unassigned


def test_unassigned_totals_cover_every_unassigned_event_not_just_the_page(api, book, record):
    create_matter(api)
    for cost in ["1.10", "2.20", "3.30", None, None]:
        record(cost=cost)
    record(tag="2025-001", cost="100")  # assigned: not counted
    body = api.get("/v1/matters/unassigned", {"page": 1, "limit": 2}).json()
    assert len(body["results"]) == 2
    assert (body["page"], body["limit"], body["totalPages"], body["totalResults"]) == (1, 2, 3, 5)
    assert body["totalCost"] == 6.6 and body["eventsMissingCost"] == 2
    last = api.get("/v1/matters/unassigned", {"page": 3, "limit": 2}).json()
    assert len(last["results"]) == 1 and last["totalCost"] == 6.6 and last["totalResults"] == 5


def test_unassigned_rows_are_most_recent_first_and_include_manual_unassignments(api, book, record):
    create_matter(api)
    older = record(usage_date=datetime(2025, 1, 1, tzinfo=timezone.utc))
    newer = record(tag="2025-001", usage_date=datetime(2025, 2, 1, tzinfo=timezone.utc))
    api.post("/v1/matters/assign", {"eventId": str(newer.id), "matterId": None})
    rows = api.get("/v1/matters/unassigned").json()["results"]
    assert [(row["eventId"], row["source"]) for row in rows] == [(str(newer.id), "manual"), (str(older.id), None)]


def test_unassigned_is_scoped_to_the_organization(api, other_book, record):
    record(into=other_book)
    body = api.get("/v1/matters/unassigned").json()
    assert (body["totalResults"], body["totalCost"], body["eventsMissingCost"], body["results"]) == (0, 0, 0, [])


# --------------------------------------------------------------------------- manual assignment


def test_assign_files_an_event_manually(api, book, record):
    matter = create_matter(api)
    event = record()
    resp = api.post("/v1/matters/assign", {"eventId": str(event.id), "matterId": matter["id"]})
    assert resp.status_code == 201
    assert resp.json() == {"assigned": True, "eventId": str(event.id), "matterId": matter["id"], "source": "manual"}
    attribution = MatterAttribution.objects.get(event=event)
    assert (str(attribution.matter_id), attribution.source) == (matter["id"], AttributionSource.MANUAL)
    assert attribution.assigned_by == f"api-key:{api.key.id}"


def test_assign_with_null_unassigns(api, book, record):
    create_matter(api)
    event = record(tag="2025-001")
    resp = api.post("/v1/matters/assign", {"eventId": str(event.id), "matterId": None})
    assert resp.status_code == 201
    assert resp.json() == {"assigned": True, "eventId": str(event.id), "matterId": None, "source": "manual"}
    assert str(event.id) in {row["eventId"] for row in api.get("/v1/matters/unassigned").json()["results"]}


def test_assign_needs_both_fields(api, book, record):
    event = record()
    resp = api.post("/v1/matters/assign", {"eventId": str(event.id)})
    assert resp.status_code == 400 and resp.json()["message"][0].startswith("matterId:")
    resp = api.post("/v1/matters/assign", {"matterId": None})
    assert resp.status_code == 400 and resp.json()["message"][0].startswith("eventId:")
    assert api.post("/v1/matters/assign", {"eventId": "nope", "matterId": None}).status_code == 400


def test_assign_of_an_event_or_matter_of_another_organization_is_404(api, book, other_book, record):
    matter = create_matter(api)
    mine = record()
    foreign_event = record(into=other_book)
    foreign_matter = MatterFactory(book=other_book)
    resp = api.post("/v1/matters/assign", {"eventId": str(foreign_event.id), "matterId": matter["id"]})
    assert resp.status_code == 404
    resp = api.post("/v1/matters/assign", {"eventId": str(mine.id), "matterId": str(foreign_matter.id)})
    assert resp.status_code == 404
    resp = api.post("/v1/matters/assign", {"eventId": str(uuid.uuid4()), "matterId": None})
    assert resp.status_code == 404
    assert not MatterAttribution.objects.exists()


# --------------------------------------------------------------------------- access


@pytest.mark.parametrize("role", ["owner", "admin", "finance", "legal"])
def test_owner_admin_finance_and_legal_users_reach_matters(client_for, role):
    client = client_for(role=role)
    assert client.get("/v1/matters").status_code == 200
    assert client.post("/v1/matters", {"matterNumber": f"M-{role}", "name": "N", "clientName": "C"}).status_code == 201


@pytest.mark.parametrize("method, path", [
    ("get", "/v1/matters"), ("post", "/v1/matters"), ("get", "/v1/matters/unassigned"),
    ("post", "/v1/matters/assign"), ("get", "/v1/matters/audit"), ("get", "/v1/matter-rules"),
    ("post", "/v1/matter-rules"), ("post", "/v1/matter-rules/apply"),
])
def test_member_is_403_naming_the_roles(client_for, method, path):
    resp = getattr(client_for(role="member"), method)(path)
    assert resp.status_code == 403
    assert ROLES_MESSAGE in resp.json()["message"]


def test_legal_key_reaches_every_matters_endpoint(client_for, book, record):
    legal = client_for(role="member", scope="legal")
    matter = legal.post("/v1/matters", {"matterNumber": "L-1", "name": "N", "clientName": "C"})
    assert matter.status_code == 201
    matter_id = matter.json()["id"]
    event = record()
    rule = legal.post("/v1/matter-rules", {"matterId": matter_id, "agentCode": "agent-1"})
    assert rule.status_code == 201
    assert legal.get("/v1/matters").status_code == 200
    assert legal.get(f"/v1/matters/{matter_id}").status_code == 200
    assert legal.patch(f"/v1/matters/{matter_id}", {"name": "M"}).status_code == 200
    assert legal.get("/v1/matters/unassigned").status_code == 200
    assert legal.post("/v1/matters/assign", {"eventId": str(event.id), "matterId": matter_id}).status_code == 201
    assert legal.get("/v1/matters/audit").status_code == 200
    assert legal.get("/v1/matter-rules").status_code == 200
    assert legal.patch(f"/v1/matter-rules/{rule.json()['id']}", {"priority": 5}).status_code == 200
    assert legal.post("/v1/matter-rules/apply").status_code == 201
    assert legal.delete(f"/v1/matter-rules/{rule.json()['id']}").status_code == 200
    assert legal.delete(f"/v1/matters/{matter_id}").status_code == 200


@pytest.mark.parametrize("method", ["get", "post"])
def test_publishable_key_is_403(client_for, method):
    resp = getattr(client_for(key_type="publishable"), method)("/v1/matters")
    assert resp.status_code == 403


def test_ingest_only_key_is_403(client_for):
    resp = client_for(scope="ingest").get("/v1/matters")
    assert resp.status_code == 403
    assert "ingest-only" in resp.json()["message"]


def test_missing_key_is_401(anonymous):
    assert anonymous.get("/v1/matters").status_code == 401


def test_rules_of_a_matter_are_counted_in_delete_only_for_that_matter(api, book):
    matter = MatterFactory(book=book)
    other = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="a")
    MatterRuleFactory(matter=matter, signal_pattern="b")
    MatterRuleFactory(matter=other, agent_code="a")
    body = api.delete(f"/v1/matters/{matter.id}").json()
    assert body["routingRulesDeleted"] == 2
    assert MatterRule.objects.filter(matter=other).count() == 1
