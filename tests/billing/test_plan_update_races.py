"""A PATCH of a pricing plan meeting a DELETE of the plan: the PATCH waits for the delete and answers 404 like any
unknown id; the deleted plan is never written back."""
import pytest
from django.db.models.signals import pre_delete

from billing.models import PlanAgent, PricingPlan
from tests.billing.support import create_plan, error, ok
from tests.row_races import Meanwhile, at_signal

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_plan_patch_arriving_during_its_delete_waits_for_it_and_is_404(api, agent):
    plan_id = create_plan(api, agent_id=agent.id)["id"]
    url = f"/v1/pricing-plans/{plan_id}"
    patch = Meanwhile(api, lambda client: client.patch(url, {"name": "Pro 2", "isActive": False}))
    waiting = []
    with at_signal(pre_delete, PricingPlan, plan_id, lambda: waiting.append(patch.start_and_wait_for_a_lock())):
        ok(api.delete(url), 204)
    assert waiting == [1]
    # It was a 200: the save found no row to update and inserted the plan again, without its agent links.
    assert error(patch.answer(), 404) == "Pricing plan not found"
    assert not PricingPlan.objects.filter(pk=plan_id).exists()
    assert not PlanAgent.objects.exists()
    error(api.get(url), 404)
