"""The operator console lists, searches and filters plans, strategies and subscriptions, scoped by membership."""
import pytest
from django.test import Client

from billing.models import CreditGrant, CreditPoolAlert, PlanAgent
from accounts.models import Membership
from tests.billing.conftest import NOW
from tests.billing.pools import pool_subscription, run_jobs, topup, use
from tests.billing.support import create_strategies, create_subscription, recurring
from tests.customers.test_admin import UNSTORABLE_JSON, posted_form
from tests.factories import AgentFactory, PlanFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator(org):
    """A staff member of `org` (not a superuser) signed in to the console."""
    user = UserFactory(email="ops@acme.example", is_staff=True)
    Membership.objects.create(organization=org, user=user, role="owner")
    client = Client()
    client.force_login(user)
    return client


def test_console_pages_of_plans_strategies_and_subscriptions_render(api, operator, chain):
    strategy, = create_strategies(api, chain.plan["id"], [recurring(chain)])
    subscription = create_subscription(api, chain)
    pages = [
        "/admin/billing/pricingplan/", f"/admin/billing/pricingplan/{chain.plan['id']}/change/",
        "/admin/billing/pricingplan/?q=Pro&is_active__exact=1",
        "/admin/billing/pricingstrategy/", f"/admin/billing/pricingstrategy/{strategy['id']}/change/",
        "/admin/billing/pricingstrategy/?charge_type__exact=recurring",
        "/admin/billing/subscription/", f"/admin/billing/subscription/{subscription['id']}/change/",
        "/admin/billing/subscription/?status__exact=active&billing_cycle__exact=monthly&q=Main",
        "/admin/billing/subscriptionchange/?kind__exact=created",
    ]
    for page in pages:
        resp = operator.get(page)
        assert resp.status_code == 200, page
    listing = operator.get("/admin/billing/subscription/?status__exact=active").content.decode()
    assert "Main" in listing
    change_page = operator.get(f"/admin/billing/subscription/{subscription['id']}/change/").content.decode()
    assert "Subscription created (active)" in change_page  # the changelog inline


def test_console_links_an_agent_to_a_plan_in_the_plans_book(operator, book, chain):
    second = AgentFactory(book=book)
    url = f"/admin/billing/pricingplan/{chain.plan['id']}/change/"
    data = {
        "book": str(book.id), "name": "Pro", "description": "", "features_list": "{}", "is_active": "on",
        "agent_links-TOTAL_FORMS": "2", "agent_links-INITIAL_FORMS": "1",
        "agent_links-0-id": str(PlanAgent.objects.get(plan_id=chain.plan["id"]).id),
        "agent_links-0-plan": chain.plan["id"], "agent_links-0-agent": str(chain.agent.id),
        "agent_links-1-plan": chain.plan["id"], "agent_links-1-agent": str(second.id),
        "strategies-TOTAL_FORMS": "0", "strategies-INITIAL_FORMS": "0",
    }
    resp = operator.post(url, data)
    assert resp.status_code == 302, resp.content.decode()[:2000]
    link = PlanAgent.objects.get(plan_id=chain.plan["id"], agent=second)
    assert link.book_id == book.id


@pytest.mark.parametrize("text", UNSTORABLE_JSON.values(), ids=UNSTORABLE_JSON.keys())
def test_a_features_list_that_cannot_be_stored_is_a_form_error(operator, book, text):
    plan = PlanFactory(book=book, name="Pro", features_list={"seats": 5})
    url = f"/admin/billing/pricingplan/{plan.id}/change/"
    resp = operator.post(url, posted_form(operator, url, features_list=text, name="Renamed"))
    assert resp.status_code == 200  # the form again, with the text as typed
    assert list(resp.context["adminform"].form.errors) == ["features_list"]
    plan.refresh_from_db()
    assert (plan.name, plan.features_list) == ("Pro", {"seats": 5})


def test_console_hides_other_organizations_plans(operator, other_book):
    foreign = PlanFactory(book=other_book, name="Their secret plan")
    assert "Their secret plan" not in operator.get("/admin/billing/pricingplan/").content.decode()
    assert operator.get(f"/admin/billing/pricingplan/{foreign.id}/change/").status_code == 302  # redirected away


def test_console_lists_credit_grants_and_pool_alerts(api, operator, chain, frozen_now,
                                                     django_capture_on_commit_callbacks):
    subscription = pool_subscription(api, chain)
    assert topup(api, subscription, 5, key="console-key", note="goodwill").status_code == 201
    use(chain, 99)
    with django_capture_on_commit_callbacks(execute=True):
        run_jobs(NOW.isoformat())
    grant = CreditGrant.objects.get(kind="topup")
    alert = CreditPoolAlert.objects.get(outcome="emailed")
    pages = ["/admin/billing/creditgrant/", "/admin/billing/creditgrant/?kind__exact=topup&q=console-key",
             f"/admin/billing/creditgrant/{grant.id}/change/", "/admin/billing/creditpoolalert/",
             "/admin/billing/creditpoolalert/?outcome__exact=emailed&stage__exact=80",
             f"/admin/billing/creditpoolalert/{alert.id}/change/"]
    for page in pages:
        assert operator.get(page).status_code == 200, page
    assert "console-key" in operator.get("/admin/billing/creditgrant/?q=console-key").content.decode()


def test_a_grants_period_is_written_in_the_days_of_its_subscriptions_timezone(api, operator, chain, frozen_now):
    """June 1 to July 1 at Los Angeles midnight: 2025-06-01 to 2025-06-30 there, as its subscription's current period;
    read in UTC it was "2025-06-01 to 2025-07-01"."""
    subscription = pool_subscription(api, chain, start="2025-06-01T07:00:00Z", timezone="America/Los_Angeles")
    assert topup(api, subscription, 5).status_code == 201  # opens June's grant
    listed = operator.get("/admin/billing/creditgrant/?kind__exact=period").content.decode()
    inline = operator.get(f"/admin/billing/subscription/{subscription['id']}/change/").content.decode()
    inline = inline.split('id="credit_grants-group"')[1].split('id="changes-group"')[0]
    for shown in (listed, inline):
        assert "2025-06-30" in shown and "2025-07-01" not in shown


def test_a_one_time_fee_shows_no_billing_frequency(api, operator, chain):
    """Not "Onetime ... Monthly": a one-time fee is charged once."""
    fee, monthly = create_strategies(api, chain.plan["id"], [
        {"name": "Onboarding", "agentId": str(chain.agent.id), "chargeType": "onetime", "rate": "500"},
        recurring(chain)])
    listing = operator.get("/admin/billing/pricingstrategy/").content.decode()
    rows = {name: row for row in listing.split("<tr")[1:] for name in ("Onboarding", "platform fee") if name in row}
    assert 'field-strategy_frequency">-<' in rows["Onboarding"]
    assert 'field-strategy_frequency">Monthly<' in rows["platform fee"]
    plan_page = operator.get(f"/admin/billing/pricingplan/{chain.plan['id']}/change/")
    assert plan_page.status_code == 200
