"""A PATCH of a customer, agent or signal meeting a DELETE of the same record: whichever commits first, the PATCH
answers 404 like any unknown id once the record is deleted, never 200 or a 500 (spec §4)."""
import pytest
from django.db.models.signals import pre_save

from customers.models import Agent, Customer, Signal
from tests.factories import AgentFactory
from tests.row_races import at_signal, patch_during_delete

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_customer_patch_arriving_during_its_delete_waits_for_it_and_is_404(api):
    customer_id = api.post("/v1/customers", {"name": "Globex", "externalId": "globex"}).json()["id"]
    url = f"/v1/customers/{customer_id}"
    # The delete is a soft delete (a save of deletedAt): the PATCH starts once the delete holds the row.
    resp = patch_during_delete(api, url, {"name": "Renamed"}, model=Customer, pk=customer_id, delete_status=204,
                               signal=pre_save)
    # It was a 200 that renamed the customer just deleted.
    assert resp.status_code == 404, resp.json()
    assert resp.json() == {"message": "Customer not found"}
    customer = Customer.objects.get(pk=customer_id)
    assert (customer.name, customer.deleted_at is not None) == ("Globex", True)


def test_an_agent_patch_arriving_during_its_delete_waits_for_it_and_is_404(api):
    agent_id = api.post("/v1/agents", {"name": "Drafter", "agentCode": "drafter"}).json()["id"]
    url = f"/v1/agents/{agent_id}"
    resp = patch_during_delete(api, url, {"name": "Renamed"}, model=Agent, pk=agent_id, delete_status=204)
    # It was a 500: Django's "Save with update_fields did not affect any rows."
    assert resp.status_code == 404, resp.content
    assert resp.json() == {"message": "Agent not found"}
    assert not Agent.objects.filter(pk=agent_id).exists()


def test_a_signal_patch_arriving_during_its_delete_waits_for_it_and_is_404(api, book):
    agent = AgentFactory(book=book)
    signal_id = api.post("/v1/signals", {"agentId": str(agent.id), "name": "Pages"}).json()["id"]
    url = f"/v1/signals/{signal_id}"
    resp = patch_during_delete(api, url, {"name": "Pages delivered"}, model=Signal, pk=signal_id, delete_status=204)
    assert resp.status_code == 404, resp.content  # was a 500, as for agents
    assert resp.json() == {"message": "Signal not found"}
    assert not Signal.objects.filter(pk=signal_id).exists()


def test_an_agent_row_gone_when_its_update_saves_is_404_not_a_500(api):
    # Past the row lock only the PATCH's own transaction can delete the row; the save still says 404 rather than
    # Django's bare "Save with update_fields did not affect any rows." (the PATCH's rollback restores the row).
    agent_id = api.post("/v1/agents", {"name": "Drafter", "agentCode": "drafter"}).json()["id"]
    with at_signal(pre_save, Agent, agent_id, lambda: Agent.objects.filter(pk=agent_id).delete()) as fired:
        resp = api.patch(f"/v1/agents/{agent_id}", {"name": "Renamed"})
    assert fired and resp.status_code == 404, resp.content
    assert resp.json() == {"message": "Agent not found"}
    assert Agent.objects.get(pk=agent_id).name == "Drafter"
