"""The console's plan change: from the subscription's page, a preview of both sides' amounts for the split period
(nothing kept), then the change itself through the API's service."""
import pytest

from billing.models import Invoice, Subscription
from tests.billing.invoice_support import billing_chain, recurring, usage
from tests.billing.support import create_plan, create_strategies, ok
from tests.console.conftest import messages_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def chain(api, book, frozen_now):
    """A customer on a 20/month plan (billing day 1) since January 2025; the clock reads 2025-06-10T12:00Z."""
    chain = billing_chain(api, book, [recurring("20"), usage("0.25")], billingDay=1)
    chain.pro = create_plan(api, chain.agent.id, name="Pro")
    create_strategies(api, chain.pro["id"], [{"name": "pro fee", "agentId": str(chain.agent.id), **recurring("50")}])
    return chain


def page(chain) -> str:
    return f"/admin/billing/subscription/{chain.subscription['id']}/change-plan/"


def test_the_subscription_page_links_to_the_plan_change(console, chain):
    resp = console.get(f"/admin/billing/subscription/{chain.subscription['id']}/change/")
    assert resp.status_code == 200
    assert page(chain) in resp.content.decode()
    form = console.get(page(chain))
    assert form.status_code == 200 and "Pro" in form.content.decode()


def test_the_preview_shows_both_sides_of_the_split_period_and_keeps_nothing(console, chain):
    choice = {"plan": chain.pro["id"], "when": "at", "effective_at": "2025-06-16 00:00", "preview": "Preview"}
    resp = console.post(page(chain), choice)
    assert resp.status_code == 200, resp.content[:400]
    old_side, new_side = resp.context["sides"]
    # June has 30 days: the old plan covers the 1st-15th (20 x 15/30), the new one the 16th-30th (50 x 15/30).
    assert (old_side.plan_name, old_side.total, new_side.plan_name, new_side.total) == (
        chain.plan["name"], 10, "Pro", 25)
    assert [amount for _, amount in old_side.lines] == [10, 0] and [a for _, a in new_side.lines] == [25]
    shown = resp.content.decode()  # money as the invoice page writes it
    assert "<th>total</th><th>$10.00</th>" in shown and "<th>total</th><th>$25.00</th>" in shown
    assert Subscription.objects.filter(customer_id=chain.customer.id).count() == 1
    assert not Invoice.objects.exists()
    assert Subscription.objects.get(pk=chain.subscription["id"]).end_date is None

    confirmed = console.post(page(chain), {**choice, "confirm": "Change plan",
                                           "previewed": resp.context["form"].data["previewed"]}, follow=True)
    new = Subscription.objects.get(previous_subscription_id=chain.subscription["id"])
    assert (new.plan_id.hex, new.start_date.isoformat()) == (chain.pro["id"].replace("-", ""),
                                                             "2025-06-16T00:00:00+00:00")
    assert any("moves to plan 'Pro'" in message for message in messages_of(confirmed))
    # The old subscription's page says the change is scheduled and that a new one replaces it.
    again = console.get(page(chain)).content.decode()
    assert "A change is already scheduled: from\n  2025-06-16 00:00 UTC" in again and "A new change replaces it" in again
    assert "current period 2025-06-01 00:00 to 2025-06-16 00:00 UTC" in again


def test_the_preview_compares_the_change_with_the_period_as_it_stands(console, chain):
    """Finance compares: without the change June bills 20.00 (the fee); with it, 10.00 + 25.00 = 35.00, 15.00 more.
    At the next period's start the change splits nothing: June and July without it (20 + 20) against June on the
    old plan and July on Pro (20 + 50)."""
    resp = console.post(page(chain), {"plan": chain.pro["id"], "when": "at", "effective_at": "2025-06-16 00:00",
                                      "preview": "Preview"})
    assert [side.total for side, *_ in resp.context["unchanged_sides"]] == [20]
    assert resp.context["comparison"] == {"without": "$20.00", "with": "$35.00", "difference": "$15.00"}
    shown = " ".join(resp.content.decode().split())
    # Each period as its invoice writes it: local days, a cut's local time.
    assert "Preview: the period the change falls in" in shown
    assert "<th>2025-06-01 to 2025-06-15</th>" in shown and "<th>2025-06-16 to 2025-06-30</th>" in shown
    assert ("Without the change the period bills $20.00; with it, the two invoices bill $35.00 together, a "
            "difference of $15.00.") in shown
    assert not Invoice.objects.exists() and Subscription.objects.filter(customer_id=chain.customer.id).count() == 1

    resp = console.post(page(chain), {"plan": chain.pro["id"], "when": "next_period", "preview": "Preview"})
    assert [(side.period_start.isoformat(), side.total) for side, *_ in resp.context["unchanged_sides"]] == [
        ("2025-06-01T00:00:00+00:00", 20), ("2025-07-01T00:00:00+00:00", 20)]
    assert resp.context["comparison"] == {"without": "$40.00", "with": "$70.00", "difference": "$30.00"}
    assert "Preview: the periods the change lies between" in resp.content.decode()
    assert not Invoice.objects.exists()


def test_the_comparison_counts_a_change_already_scheduled(console, api, chain):
    """Pro (50/month) is scheduled from June 16; a change to Max (80/month) from June 11 replaces it. As June stands it
    bills 20 x 15/30 = 10.00 on the old plan and 50 x 15/30 = 25.00 on Pro; with the new change 20 x 10/30 = 6.67
    and 80 x 20/30 = 53.33."""
    ok(api.post(f"/v1/subscriptions/{chain.subscription['id']}/change-plan",
                {"planId": chain.pro["id"], "effectiveAt": "2025-06-16T00:00:00Z"}), 201)
    max_plan = create_plan(api, chain.agent.id, name="Max")
    create_strategies(api, max_plan["id"], [{"name": "max fee", "agentId": str(chain.agent.id), **recurring("80")}])
    resp = console.post(page(chain), {"plan": max_plan["id"], "when": "at", "effective_at": "2025-06-11 00:00",
                                      "preview": "Preview"})
    assert resp.status_code == 200, resp.content[:400]
    assert [(side.plan_name, side.total) for side, *_ in resp.context["unchanged_sides"]] == [
        (chain.plan["name"], 10), ("Pro", 25)]
    assert resp.context["comparison"] == {"without": "$35.00", "with": "$60.00", "difference": "$25.00"}
    shown = " ".join(resp.content.decode().split())
    assert "Preview: the period the change falls in" in shown
    assert "Without the change the period bills $35.00;" in shown
    assert not Invoice.objects.exists()
    assert Subscription.objects.filter(customer_id=chain.customer.id).count() == 2  # the scheduled change is kept


def test_the_next_period_is_the_cycles_not_a_scheduled_changes(console, api, chain):
    """Pro is scheduled from June 16, which cuts the stored period there; a change "at the start of the next billing
    period" replaces it from July 1, the start of the next period on the grid."""
    ok(api.post(f"/v1/subscriptions/{chain.subscription['id']}/change-plan",
                {"planId": chain.pro["id"], "effectiveAt": "2025-06-16T00:00:00Z"}), 201)
    max_plan = create_plan(api, chain.agent.id, name="Max")
    create_strategies(api, max_plan["id"], [{"name": "max fee", "agentId": str(chain.agent.id), **recurring("80")}])
    resp = console.post(page(chain), {"plan": max_plan["id"], "when": "next_period", "preview": "Preview"})
    assert resp.status_code == 200, resp.content[:400]
    old_side, new_side = resp.context["sides"]
    assert (old_side.period_start.isoformat(), old_side.total) == ("2025-06-01T00:00:00+00:00", 20)
    assert (new_side.period_start.isoformat(), new_side.plan_name, new_side.total) == (
        "2025-07-01T00:00:00+00:00", "Max", 80)


def test_a_confirm_without_a_preview_of_the_same_choice_previews_first(console, chain):
    resp = console.post(page(chain), {"plan": chain.pro["id"], "when": "next_period", "confirm": "Change plan",
                                      "previewed": "something else"})
    assert resp.status_code == 200 and resp.context["sides"] is not None
    old_side, new_side = resp.context["sides"]
    # At the next period start nothing is split: June whole on the old plan, July whole on Pro.
    assert (old_side.total, new_side.total) == (20, 50)
    assert Subscription.objects.filter(customer_id=chain.customer.id).count() == 1


def test_a_refused_change_is_an_error_on_the_page(console, chain, api):
    invoice = ok(api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                    "subscriptionId": chain.subscription["id"]}), 201)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    resp = console.post(page(chain), {"plan": chain.pro["id"], "when": "now", "preview": "Preview"})
    assert resp.status_code == 200 and invoice["invoiceNumber"] in resp.content.decode()
    assert resp.context["sides"] is None


def test_a_subscription_of_another_organization_reads_as_missing(console_for, other_org, chain):
    stranger = console_for(other_org)
    resp = stranger.get(page(chain))
    assert resp.status_code == 302 and "/admin/" in resp["Location"]
    assert stranger.post(page(chain), {"plan": chain.pro["id"], "when": "now", "confirm": "1"}).status_code == 302
    assert Subscription.objects.filter(customer_id=chain.customer.id).count() == 1
