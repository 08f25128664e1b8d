"""A PATCH of a matter or a routing rule meeting a DELETE of the same record: the PATCH answers 404 like any unknown
id once the record is deleted; the deleted record is never written back."""
import pytest
from django.db.models.signals import pre_save

from matters.models import Matter, MatterRule
from tests.factories import MatterFactory
from tests.row_races import Meanwhile, at_signal, patch_during_delete

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_matter_patch_arriving_during_its_delete_waits_for_it_and_is_404(api):
    resp = api.post("/v1/matters", {"matterNumber": "2025-001", "name": "Smith v Jones", "clientName": "Smith"})
    matter_id = resp.json()["id"]
    url = f"/v1/matters/{matter_id}"
    resp = patch_during_delete(api, url, {"status": "closed"}, model=Matter, pk=matter_id, delete_status=200)
    # It was a 200: the save found no row to update and inserted the matter again.
    assert resp.status_code == 404, resp.json()
    assert resp.json() == {"message": "Matter not found"}
    assert not Matter.objects.filter(pk=matter_id).exists()


def test_a_rule_patch_arriving_during_its_delete_waits_for_it_and_is_404(api, book):
    matter = MatterFactory(book=book, matter_number="2025-001", name="Smith v Jones")
    resp = api.post("/v1/matter-rules", {"matterId": str(matter.id), "agentCode": "drafter"})
    rule_id = resp.json()["id"]
    url = f"/v1/matter-rules/{rule_id}"
    resp = patch_during_delete(api, url, {"priority": 9}, model=MatterRule, pk=rule_id, delete_status=200)
    assert resp.status_code == 404, resp.json()
    assert resp.json() == {"message": "Matter rule not found"}
    assert not MatterRule.objects.filter(pk=rule_id).exists()


def test_a_rule_delete_arriving_during_its_patch_waits_for_it_and_the_rule_stays_deleted(api, book):
    # Before the PATCH locked the rule, a DELETE committed between its read and its save, and the save inserted the
    # rule again (a 200 for a rule that was gone).
    matter = MatterFactory(book=book, matter_number="2025-001", name="Smith v Jones")
    resp = api.post("/v1/matter-rules", {"matterId": str(matter.id), "agentCode": "drafter"})
    rule_id = resp.json()["id"]
    url = f"/v1/matter-rules/{rule_id}"
    delete = Meanwhile(api, lambda client: client.delete(url))
    waiting = []
    with at_signal(pre_save, MatterRule, rule_id, lambda: waiting.append(delete.start_and_wait_for_a_lock())):
        assert api.patch(url, {"priority": 9}).status_code == 200
    assert waiting == [1] and delete.answer().status_code == 200
    assert not MatterRule.objects.filter(pk=rule_id).exists()


def test_two_patches_of_one_rule_keep_both_changes(api, book):
    # Unlocked, the second PATCH read the rule before the first saved it and wrote back the priority the first had
    # changed (each 200, the first's answer showing a priority the rule no longer had).
    matter = MatterFactory(book=book, matter_number="2025-001", name="Smith v Jones")
    resp = api.post("/v1/matter-rules", {"matterId": str(matter.id), "agentCode": "drafter", "signalPattern": "pages",
                                         "priority": 100})
    rule_id = resp.json()["id"]
    url = f"/v1/matter-rules/{rule_id}"
    other = Meanwhile(api, lambda client: client.patch(url, {"signalPattern": None}))
    waiting = []
    with at_signal(pre_save, MatterRule, rule_id, lambda: waiting.append(other.start_and_wait_for_a_lock())):
        assert api.patch(url, {"priority": 1}).status_code == 200
    assert waiting == [1] and other.answer().status_code == 200
    rule = MatterRule.objects.get(pk=rule_id)
    assert (rule.priority, rule.signal_pattern, rule.agent_code) == (1, None, "drafter")
