"""Routing rules CRUD (spec §2 Routing rule, §4 /v1/matter-rules)."""
import uuid

import pytest

from matters.models import MatterRule
from tests.factories import MatterFactory, MatterRuleFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def matter(book):
    return MatterFactory(book=book, matter_number="2025-001", name="Smith v Jones")


def create_rule(api, matter, **fields):
    resp = api.post("/v1/matter-rules", {"matterId": str(matter.id), **fields})
    assert resp.status_code == 201, resp.json()
    return resp.json()


def test_create_answers_the_rule_with_matter_number_and_name_and_default_priority(api, matter):
    body = create_rule(api, matter, agentCode="drafter")
    assert body["matterId"] == str(matter.id)
    assert (body["matterNumber"], body["matterName"]) == ("2025-001", "Smith v Jones")
    assert body["priority"] == 100
    assert (body["agentCode"], body["customerExternalId"], body["signalPattern"]) == ("drafter", None, None)
    assert MatterRule.objects.get(pk=body["id"]).book_id == matter.book_id


def test_create_keeps_every_matcher_and_the_priority_sent(api, matter):
    body = create_rule(api, matter, priority=7, agentCode="drafter", customerExternalId="acme",
                       signalPattern="Review")
    assert (body["priority"], body["agentCode"], body["customerExternalId"], body["signalPattern"]) == (
        7, "drafter", "acme", "Review")


@pytest.mark.parametrize("matchers", [{}, {"agentCode": None, "customerExternalId": None, "signalPattern": None}])
def test_create_without_a_matcher_is_400(api, matter, matchers):
    resp = api.post("/v1/matter-rules", {"matterId": str(matter.id), **matchers})
    assert resp.status_code == 400
    assert "at least one matcher" in resp.json()["message"][0]
    assert not MatterRule.objects.exists()


@pytest.mark.parametrize("body, field", [
    ({"agentCode": ""}, "agentCode"),
    ({"agentCode": "a" * 256}, "agentCode"),
    ({"agentCode": "a", "priority": "high"}, "priority"),
    ({"agentCode": "a", "priority": 1.5}, "priority"),
    ({"agentCode": "a", "priority": 2**31}, "priority"),
])
def test_create_with_an_invalid_field_is_400_naming_it(api, matter, body, field):
    resp = api.post("/v1/matter-rules", {"matterId": str(matter.id), **body})
    assert resp.status_code == 400
    assert resp.json()["message"][0].startswith(f"{field}:")


def test_create_without_matter_id_is_400_and_with_an_unknown_one_404(api):
    assert api.post("/v1/matter-rules", {"agentCode": "a"}).status_code == 400
    resp = api.post("/v1/matter-rules", {"matterId": str(uuid.uuid4()), "agentCode": "a"})
    assert resp.status_code == 404
    assert resp.json()["message"] == "Matter not found"


def test_create_for_a_matter_of_another_organization_is_404(api, other_book):
    foreign = MatterFactory(book=other_book)
    assert api.post("/v1/matter-rules", {"matterId": str(foreign.id), "agentCode": "a"}).status_code == 404


def test_list_is_paginated_in_evaluation_order(api, matter):
    late = create_rule(api, matter, agentCode="late", priority=50)
    older_tie = create_rule(api, matter, agentCode="older", priority=10)
    newer_tie = create_rule(api, matter, agentCode="newer", priority=10)
    first = create_rule(api, matter, agentCode="first", priority=1)
    page_one = api.get("/v1/matter-rules", {"limit": 3}).json()
    assert (page_one["page"], page_one["limit"], page_one["totalPages"], page_one["totalResults"]) == (1, 3, 2, 4)
    page_two = api.get("/v1/matter-rules", {"limit": 3, "page": 2}).json()
    ids = [row["id"] for row in page_one["results"] + page_two["results"]]
    assert ids == [first["id"], older_tie["id"], newer_tie["id"], late["id"]]


def test_list_shows_only_the_callers_rules(api, other_book, matter):
    MatterRuleFactory(matter=MatterFactory(book=other_book), agent_code="theirs")
    create_rule(api, matter, agentCode="mine")
    body = api.get("/v1/matter-rules").json()
    assert [row["agentCode"] for row in body["results"]] == ["mine"]


def test_patch_changes_only_sent_fields(api, matter):
    rule = create_rule(api, matter, agentCode="drafter", customerExternalId="acme", priority=5)
    resp = api.patch(f"/v1/matter-rules/{rule['id']}", {"priority": 9})
    assert resp.status_code == 200
    body = resp.json()
    assert (body["priority"], body["agentCode"], body["customerExternalId"]) == (9, "drafter", "acme")


def test_patch_clears_a_matcher_sent_as_null_but_one_must_remain(api, matter):
    rule = create_rule(api, matter, agentCode="drafter", customerExternalId="acme")
    body = api.patch(f"/v1/matter-rules/{rule['id']}", {"customerExternalId": None}).json()
    assert (body["agentCode"], body["customerExternalId"]) == ("drafter", None)
    resp = api.patch(f"/v1/matter-rules/{rule['id']}", {"agentCode": None})
    assert resp.status_code == 400
    assert MatterRule.objects.get(pk=rule["id"]).agent_code == "drafter"


def test_patch_can_swap_the_last_matcher_for_another(api, matter):
    rule = create_rule(api, matter, agentCode="drafter")
    body = api.patch(f"/v1/matter-rules/{rule['id']}", {"agentCode": None, "signalPattern": "memo"}).json()
    assert (body["agentCode"], body["signalPattern"]) == (None, "memo")


def test_patch_moves_a_rule_to_another_matter(api, book, matter):
    other = MatterFactory(book=book, matter_number="2025-002", name="Doe v Roe")
    rule = create_rule(api, matter, agentCode="drafter")
    body = api.patch(f"/v1/matter-rules/{rule['id']}", {"matterId": str(other.id)}).json()
    assert (body["matterId"], body["matterNumber"], body["matterName"]) == (str(other.id), "2025-002", "Doe v Roe")
    assert api.patch(f"/v1/matter-rules/{rule['id']}", {"matterId": str(uuid.uuid4())}).status_code == 404


def test_rule_of_another_organization_is_404_on_patch_and_delete(api, other_book):
    foreign = MatterRuleFactory(matter=MatterFactory(book=other_book), agent_code="theirs")
    assert api.patch(f"/v1/matter-rules/{foreign.id}", {"priority": 1}).status_code == 404
    assert api.delete(f"/v1/matter-rules/{foreign.id}").status_code == 404
    assert api.delete("/v1/matter-rules/not-a-uuid").status_code == 404
    assert MatterRule.objects.get(pk=foreign.id).priority == 100


def test_delete_removes_the_rule(api, matter):
    rule = create_rule(api, matter, agentCode="drafter")
    resp = api.delete(f"/v1/matter-rules/{rule['id']}")
    assert resp.status_code == 200 and resp.json() == {"deleted": True}
    assert not MatterRule.objects.filter(pk=rule["id"]).exists()
    assert api.delete(f"/v1/matter-rules/{rule['id']}").status_code == 404
