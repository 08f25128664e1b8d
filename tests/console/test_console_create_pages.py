"""The console's pages that create what the API creates: a plan's pricing strategy (from the plan's page) and a
subscription (from the subscription list), each through the API's own serializer and service."""
import pytest

from accounts.api import MONEY_ROLES
from billing.models import PricingStrategy, Subscription
from billing.views.strategies import StrategyListApi
from billing.views.subscriptions import SubscriptionListCreateApi
from tests.billing.support import create_plan, error, ok
from tests.console.conftest import messages_of
from tests.factories import AgentFactory, CustomerFactory, SignalFactory, book_of

pytestmark = pytest.mark.django_db

VOLATILE = ("id", "planId", "createdAt", "updatedAt")  # what differs between two creations of one strategy


@pytest.fixture
def priced(api, book):
    """A plan sold to one agent with a signal; a second agent, not linked to the plan, with a signal of its own."""
    agent = AgentFactory(book=book, name="Support bot")
    signal = SignalFactory(book=book, agent=agent, name="tickets_resolved", short_name="tickets resolved")
    stranger = AgentFactory(book=book, name="Sales bot")
    SignalFactory(book=book, agent=stranger, name="leads", short_name="leads")
    plan = create_plan(api, agent.id, name="Support")
    return plan, agent, signal


def add_page(plan) -> str:
    return f"/admin/billing/pricingplan/{plan['id']}/add-strategy/"


def strategies_of(api, plan) -> list[dict]:
    listed = ok(api.get(f"/v1/pricing-plans/{plan['id']}/pricing-strategies", {"limit": 100}))["results"]
    return [{key: value for key, value in strategy.items() if key not in VOLATILE} for strategy in listed]


def test_the_plan_page_offers_the_add_strategy_page_with_the_plans_agents_only(console, priced):
    plan, agent, signal = priced
    shown = console.get(f"/admin/billing/pricingplan/{plan['id']}/change/").content.decode()
    assert add_page(plan) in shown and "checked as the API checks\nthem" in shown
    form = console.get(add_page(plan))
    assert form.status_code == 200
    assert [label for _, label in form.context["form"].fields["agent"].choices] == ["-", str(agent)]
    # Signals are offered under their agent, the plan's agents only.
    assert form.context["form"].fields["signal"].choices == [("", "-"), (str(agent), [(str(signal.pk), str(signal))])]
    assert "One tier a line: lower, upper, rate" in form.content.decode()


@pytest.mark.parametrize("tiers_text", [
    "0, 1000, 0.002\n1000, , 0.0015",
    '[{"lower": 0, "upper": 1000, "rate": 0.002}, {"lower": 1000, "upper": null, "rate": 0.0015}]',
], ids=["lines", "json"])
def test_a_strategy_added_from_the_console_equals_what_the_api_creates(console, api, priced, tiers_text):
    plan, agent, signal = priced
    resp = console.post(add_page(plan), {
        "name": "tickets", "agent": str(agent.pk), "charge_type": "usage", "pricing_model": "graduated",
        "tiers": tiers_text, "billing_frequency": "monthly", "signal": str(signal.pk), "minimum_commitment": "100",
        "active": "on", "tags": "support, tiered"}, follow=True)
    assert resp.redirect_chain[-1][0] == f"/admin/billing/pricingplan/{plan['id']}/change/"
    assert messages_of(resp) == ["Pricing strategy 'tickets' added (Usage)."]

    twin = create_plan(api, agent.id, name="Support (API)")
    ok(api.post(f"/v1/pricing-plans/{twin['id']}/pricing-strategies", [{
        "name": "tickets", "agentId": str(agent.pk), "chargeType": "usage", "pricingModel": "graduated",
        "tiers": [{"lower": 0, "upper": 1000, "rate": "0.002"}, {"lower": 1000, "upper": None, "rate": "0.0015"}],
        "signalId": str(signal.pk), "minimumCommitment": 100, "tags": ["support", "tiered"]}]), 201)
    from_console = strategies_of(api, plan)
    assert from_console == strategies_of(api, twin)
    assert from_console[0]["tiers"] == [{"lower": 0, "upper": 1000, "rate": 0.002},
                                        {"lower": 1000, "upper": None, "rate": 0.0015}]
    # Written by the service: the operator is the changelog's actor.
    assert PricingStrategy.objects.get(plan_id=plan["id"]).name == "tickets"


def test_a_fee_added_from_the_console_equals_what_the_api_creates(console, api, priced):
    plan, agent, _ = priced
    console.post(add_page(plan), {"name": "platform", "agent": str(agent.pk), "charge_type": "recurring",
                                  "rate": "49.90", "billing_frequency": "yearly", "active": "on"})
    twin = create_plan(api, agent.id, name="Support (API)")
    ok(api.post(f"/v1/pricing-plans/{twin['id']}/pricing-strategies", [{
        "name": "platform", "agentId": str(agent.pk), "chargeType": "recurring", "rate": "49.90",
        "billingFrequency": "yearly"}]), 201)
    assert strategies_of(api, plan) == strategies_of(api, twin) != []


@pytest.mark.parametrize("fields, api_item, field", [
    ({"charge_type": "usage", "pricing_model": "flat", "rate": "0.5"},
     {"chargeType": "usage", "pricingModel": "flat", "rate": 0.5}, "signal"),
    ({"charge_type": "usage", "pricing_model": "volume", "tiers": "0, 100, 1\n50, , 0.5", "signal": "SIGNAL"},
     {"chargeType": "usage", "pricingModel": "volume", "signalId": "SIGNAL",
      "tiers": [{"lower": 0, "upper": 100, "rate": 1}, {"lower": 50, "upper": None, "rate": 0.5}]}, "tiers"),
    ({"charge_type": "recurring", "rate": "-1"}, {"chargeType": "recurring", "rate": -1}, "rate"),
    ({"charge_type": "usage", "pricing_model": "flat", "rate": "0.5", "signal": "OTHER"},
     {"chargeType": "usage", "pricingModel": "flat", "rate": 0.5, "signalId": "OTHER"}, "signal"),
], ids=["usage-without-signal", "tiers-not-contiguous", "negative-rate", "signal-of-another-agent"])
def test_an_invalid_strategy_shows_the_apis_message_and_stores_nothing(console, api, book, priced, fields, api_item,
                                                                       field):
    plan, agent, signal = priced
    other_signal = SignalFactory(book=book, agent=AgentFactory(book=book), name="other", short_name="other")
    ok(api.post(f"/v1/pricing-plans/{plan['id']}/agents", {"agentId": str(other_signal.agent_id)}), 201)
    ids = {"SIGNAL": str(signal.pk), "OTHER": str(other_signal.pk)}
    item = {"name": "bad", "agentId": str(agent.pk),
            **{key: ids.get(value, value) if isinstance(value, str) else value for key, value in api_item.items()}}
    expected = error(api.post(f"/v1/pricing-plans/{plan['id']}/pricing-strategies", [item]), 400)
    posted = {"name": "bad", "agent": str(agent.pk), "billing_frequency": "monthly", "active": "on",
              **{key: ids.get(value, value) for key, value in fields.items()}}
    resp = console.post(add_page(plan), posted)
    assert resp.status_code == 200
    shown = resp.context["form"].errors[field]
    # The API's message, as the API words it for the same body (its "[0]." names the item of its array).
    assert [f"[0].{message}" for message in shown] == expected.split(" | ")
    assert shown[0] in resp.content.decode().replace("&#x27;", "'")
    assert not PricingStrategy.objects.filter(plan_id=plan["id"]).exists()


def test_unreadable_tier_lines_are_refused_on_the_form(console, priced):
    plan, agent, signal = priced
    resp = console.post(add_page(plan), {"name": "x", "agent": str(agent.pk), "charge_type": "usage",
                                         "pricing_model": "graduated", "tiers": "0, 100\n", "signal": str(signal.pk),
                                         "billing_frequency": "monthly"})
    assert "Line 1 ('0, 100'): write lower, upper, rate" in resp.context["form"].errors["tiers"][0]
    assert not PricingStrategy.objects.exists()


def test_an_agent_not_linked_to_the_plan_is_not_a_choice(console, book, priced):
    plan, _, _ = priced
    stranger = AgentFactory(book=book)
    resp = console.post(add_page(plan), {"name": "x", "agent": str(stranger.pk), "charge_type": "recurring",
                                         "rate": "1", "billing_frequency": "monthly"})
    assert "Select a valid choice" in resp.context["form"].errors["agent"][0]
    assert not PricingStrategy.objects.exists()


def test_a_member_without_a_role_the_api_asks_is_refused(console_for, client_for, monkeypatch, priced):
    """The console asks the roles the API's view asks (today any member; with a money-role policy, a legal member is
    refused by both)."""
    plan, agent, _ = priced
    body = {"name": "fee", "agent": str(agent.pk), "charge_type": "recurring", "rate": "5",
            "billing_frequency": "monthly", "active": "on"}
    legal = console_for(role="legal")
    monkeypatch.setattr(StrategyListApi, "write_roles", MONEY_ROLES)
    api_item = [{"name": "fee", "agentId": str(agent.pk), "chargeType": "recurring", "rate": 5}]
    assert client_for(role="legal").post(f"/v1/pricing-plans/{plan['id']}/pricing-strategies",
                                         api_item).status_code == 403
    resp = legal.post(add_page(plan), body, follow=True)
    assert messages_of(resp) == ["Support: This needs the owner, admin or finance role in its organization."]
    assert not PricingStrategy.objects.exists()

    monkeypatch.setattr(StrategyListApi, "write_roles", None)  # the API's policy: any member
    legal.post(add_page(plan), body)
    assert PricingStrategy.objects.filter(plan_id=plan["id"], name="fee").count() == 1


def test_a_staff_member_of_another_organization_cannot_add_to_the_plan(console_for, other_org, priced):
    plan, agent, _ = priced
    outsider = console_for(organization=other_org)
    resp = outsider.post(add_page(plan), {"name": "fee", "agent": str(agent.pk), "charge_type": "recurring",
                                          "rate": "5", "billing_frequency": "monthly"}, follow=True)
    assert resp.redirect_chain[-1][0] == "/admin/" and "doesn’t exist" in messages_of(resp)[0]
    assert not PricingStrategy.objects.exists()


# --------------------------------------------------------------------------- subscriptions

ADD = "/admin/billing/subscription/add/"


@pytest.fixture
def sellable(api, book, priced):
    """A customer of the book, and the plan with a monthly fee for its agent."""
    plan, agent, _ = priced
    ok(api.post(f"/v1/pricing-plans/{plan['id']}/pricing-strategies",
                [{"name": "fee", "agentId": str(agent.pk), "chargeType": "recurring", "rate": 20}]), 201)
    return CustomerFactory(book=book, name="Globex", timezone="UTC"), plan, agent


def subscription_fields(book, customer, plan, agent, **fields) -> dict:
    return {"book": str(book.pk), "customer": str(customer.pk), "plan": plan["id"], "agent": str(agent.pk),
            "name": "Globex support", "start_date": "2025-06-01", "billing_cycle": "monthly",
            "billing_model": "subscription", **fields}


def test_the_subscription_list_offers_add_subscription_with_a_hint(console):
    shown = console.get("/admin/billing/subscription/").content.decode()
    assert 'href="/admin/billing/subscription/add/' in shown
    assert "the same checks as\n<code>POST /v1/subscriptions</code>" in shown


def test_a_subscription_created_from_the_console_shows_on_the_api_with_its_period(console, api, book, sellable,
                                                                                    frozen_now):
    customer, plan, agent = sellable
    page = console.get(ADD, {"book": str(book.pk)})
    assert [label for _, label in page.context["form"].fields["customer"].choices] == ["-", "Globex"]
    resp = console.post(f"{ADD}?book={book.pk}", subscription_fields(book, customer, plan, agent, billing_day="1",
                                                                    seats_count="3", net_terms="15",
                                                                    invoice_memo="PO 7", metadata='{"po": 7}'),
                        follow=True)
    subscription = Subscription.objects.get(customer=customer)
    assert resp.redirect_chain[-1][0] == f"/admin/billing/subscription/{subscription.pk}/change/"
    assert "Subscription Globex support created for Globex on plan 'Support' (active)." in messages_of(resp)[0]
    shown = ok(api.get(f"/v1/subscriptions/{subscription.pk}"))
    assert (shown["status"], shown["currentPeriodStart"], shown["currentPeriodEnd"]) == (
        "active", "2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z")
    assert (shown["seatsCount"], shown["netTerms"], shown["billingDay"], shown["invoiceMemo"], shown["metadata"]) == (
        3, 15, 1, "PO 7", {"po": 7})
    # What the API creates from the same body, field for field.
    twin = CustomerFactory(book=book, name="Initech", timezone="UTC")
    from_api = ok(api.post("/v1/subscriptions", {
        "name": "Globex support", "customerId": str(twin.pk), "planId": plan["id"], "agentId": str(agent.pk),
        "startDate": "2025-06-01", "billingDay": 1, "seatsCount": 3, "netTerms": 15, "invoiceMemo": "PO 7",
        "metadata": {"po": 7}}), 201)
    differing = {"id", "customerId", "createdAt", "updatedAt"}
    assert {key: value for key, value in shown.items() if key not in differing} == {
        key: value for key, value in from_api.items() if key not in differing}


def test_an_invalid_subscription_shows_the_apis_message_and_stores_nothing(console, api, book, sellable,
                                                                           frozen_now):
    customer, plan, agent = sellable
    expected = error(api.post("/v1/subscriptions", {
        "name": "x", "customerId": str(customer.pk), "planId": plan["id"], "agentId": str(agent.pk),
        "startDate": "2025-06-01", "endDate": "2025-05-01"}), 422)
    resp = console.post(ADD, subscription_fields(book, customer, plan, agent, end_date="2025-05-01"))
    assert resp.context["form"].errors["end_date"] == [expected] == ["endDate: Must be after startDate."]
    expected = error(api.post("/v1/subscriptions", {
        "name": "x", "customerId": str(customer.pk), "planId": plan["id"], "agentId": str(agent.pk),
        "startDate": "2025-06-01", "timezone": "Mars/Base"}), 400)
    resp = console.post(ADD, subscription_fields(book, customer, plan, agent, timezone="Mars/Base"))
    assert resp.context["form"].errors["timezone"] == [expected]
    assert not Subscription.objects.exists()


def test_cross_organization_choices_are_refused(console, other_org, book, sellable):
    _, plan, agent = sellable
    other_book = book_of(other_org, "test")
    foreign = CustomerFactory(book=other_book, name="Foreign")
    page = console.get(ADD, {"book": str(book.pk)})
    assert "Foreign" not in page.content.decode()
    resp = console.post(ADD, subscription_fields(book, foreign, plan, agent))
    assert resp.context["form"].errors["customer"] == [
        "Not a customer of Acme Agents (test): a subscription's customer, plan and agent belong to one book."]
    # A book of an organization the operator is not a member of is not one to choose.
    resp = console.post(ADD, subscription_fields(other_book, foreign, plan, agent), follow=True)
    assert resp.context["form"] is None and "the book posted is not one you may add" in messages_of(resp)[0]
    assert not Subscription.objects.exists()


def test_a_superuser_chooses_the_book_and_a_mix_of_books_is_refused(console_for, other_org, book, sellable,
                                                                    frozen_now):
    customer, plan, agent = sellable
    root = console_for(superuser=True)
    other_book = book_of(other_org, "live")
    foreign = CustomerFactory(book=other_book, name="Foreign")
    first = root.get(ADD)
    assert first.context["form"] is None  # the book first
    assert {str(book), str(other_book)} <= {label for _, label in first.context["chooser"].fields["book"].choices}
    offered = root.get(ADD, {"book": str(other_book.pk)}).context["form"].fields["customer"].choices
    assert [label for _, label in offered] == ["-", "Foreign"]
    resp = root.post(ADD, subscription_fields(other_book, foreign, plan, agent))
    assert resp.context["form"].errors["plan"] == [
        "Not a plan of Other Org (live): a subscription's customer, plan and agent belong to one book."]
    assert not Subscription.objects.exists()
    root.post(ADD, subscription_fields(book, customer, plan, agent))
    assert Subscription.objects.get().book_id == book.pk


def test_subscriptions_ask_the_roles_the_api_asks(console_for, monkeypatch, book, sellable):
    customer, plan, agent = sellable
    legal = console_for(role="legal")
    monkeypatch.setattr(SubscriptionListCreateApi, "write_roles", MONEY_ROLES)
    assert 'href="/admin/billing/subscription/add/' not in legal.get("/admin/billing/subscription/").content.decode()
    resp = legal.post(ADD, subscription_fields(book, customer, plan, agent), follow=True)
    assert resp.context["form"] is None and "not one you may add" in messages_of(resp)[0]
    assert not Subscription.objects.exists()
