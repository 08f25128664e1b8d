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


def test_a_rule_deleted_while_its_patch_is_in_flight_is_404_and_stays_deleted(api, book):
    matter = MatterFactory(book=book, matter_number="2025-001", name="Smith v Jones")
    resp = api.post("/v1/matter-rules", {"matterId": str(matter.id), "agentCode": "drafter"})
    rule_id = resp.json()["id"]
    url = f"/v1/matter-rules/{rule_id}"
    delete = Meanwhile(api, lambda client: client.delete(url))
    # The DELETE runs and commits on its own connection just before the PATCH writes the rule it read.
    with at_signal(pre_save, MatterRule, rule_id, delete.start_and_finish) as fired:
        resp = api.patch(url, {"priority": 9})
    assert fired and delete.answer().status_code == 200
    # It was a 200: the save found no row to update and inserted the rule again.
    assert resp.status_code == 404, resp.json()
    assert resp.json() == {"message": "Matter rule not found"}
    assert not MatterRule.objects.filter(pk=rule_id).exists()
