"""A PATCH of a pricing plan meeting a DELETE of the plan: the PATCH waits for the delete and answers 404 like any
unknown id; the deleted plan is never written back."""
import pytest

from billing.models import PlanAgent, PricingPlan
from tests.billing.support import create_plan, error
from tests.row_races import patch_during_delete

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_plan_patch_arriving_during_its_delete_waits_for_it_and_is_404(api, agent):
    plan_id = create_plan(api, agent_id=agent.id)["id"]
    url = f"/v1/pricing-plans/{plan_id}"
    answer = patch_during_delete(api, url, {"name": "Pro 2", "isActive": False}, model=PricingPlan, pk=plan_id,
                                 delete_status=204)
    # It was a 200: the save found no row to update and inserted the plan again, without its agent links.
    assert error(answer, 404) == "Pricing plan not found"
    assert not PricingPlan.objects.filter(pk=plan_id).exists()
    assert not PlanAgent.objects.exists()
    error(api.get(url), 404)
