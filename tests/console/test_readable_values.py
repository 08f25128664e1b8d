"""Names where people read names: a plan change's summary names the other subscription (linked in lists) and writes
its instant as the console writes instants, while the API keeps the ids and ISO 8601; a spend cap's page names the
member who created it by email."""
import html
import re

import pytest

from billing.models import Subscription, SubscriptionChange
from tests.billing.invoice_support import billing_chain, recurring
from tests.billing.support import create_plan, create_strategies, ok

pytestmark = pytest.mark.django_db


def text_of(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


@pytest.fixture
def plan_change(api, book, frozen_now):
    """Subscription "Main" moves to plan Pro on 2025-06-16 (the clock reads 2025-06-10): "Main on Pro" continues it."""
    chain = billing_chain(api, book, [recurring("20")], billingDay=1)
    pro = create_plan(api, chain.agent.id, name="Pro")
    create_strategies(api, pro["id"], [{"name": "pro fee", "agentId": str(chain.agent.id), **recurring("50")}])
    ok(api.post(f"/v1/subscriptions/{chain.subscription['id']}/change-plan",
                {"planId": pro["id"], "effectiveAt": "2025-06-16T00:00:00Z", "name": "Main on Pro"}), 201)
    old = Subscription.objects.get(pk=chain.subscription["id"])
    return old, Subscription.objects.get(previous_subscription=old)


def test_the_changes_list_names_and_links_the_other_subscription_and_writes_the_instant(console, api, plan_change):
    old, new = plan_change
    continues = SubscriptionChange.objects.get(subscription=new, kind="plan_change")
    assert str(old.id) in continues.summary and "2025-06-16T00:00:00Z" in continues.summary  # kept for the API
    page = console.get("/admin/billing/subscriptionchange/").content.decode()
    assert f'this subscription continues <a href="/admin/billing/subscription/{old.id}/change/">Main</a>' in page
    assert f'ends there and continues as <a href="/admin/billing/subscription/{new.id}/change/">Main on Pro</a>' in page
    text = text_of(page)
    assert "at 2025-06-16 00:00 UTC: this subscription continues Main (upcoming)" in text
    assert str(old.id) not in text and str(new.id) not in text and "2025-06-16T00:00:00Z" not in text
    changelog = ok(api.get(f"/v1/subscriptions/{new.id}/changelog"))  # the API's summary is unchanged
    assert continues.summary in [entry["summary"] for entry in changelog]


def test_the_subscription_page_and_the_change_page_name_the_other_subscription(console, plan_change):
    old, new = plan_change
    continues = SubscriptionChange.objects.get(subscription=new, kind="plan_change")
    for address in (f"/admin/billing/subscription/{new.id}/change/",
                    f"/admin/billing/subscriptionchange/{continues.id}/change/"):
        page = console.get(address).content.decode()
        # Django's breadcrumbs name a record by its stored text (the summary, cut short): left as they are.
        text = text_of(re.sub(r'<div class="breadcrumbs">.*?</div>', "", page, flags=re.S))
        assert "at 2025-06-16 00:00 UTC: this subscription continues Main (upcoming)" in text, address
        assert str(old.id) not in text and "2025-06-16T00:00:00Z" not in text, address
    heading = re.search(r"<h2>(.*?)</h2>", console.get(address).content.decode()).group(1)
    assert html.unescape(heading) == f"Plan change plan '{old.plan.name}' -> 'Pro' at 2025-06-16 00:00 UTC: " \
                                     "this subscription continues Main (upcoming)"


def test_the_spend_cap_page_names_its_creator_by_email(console, api):
    cap = ok(api.post("/v1/control/caps", {"scope": "org", "providerScope": "all", "amountUsd": 100,
                                           "period": "month", "mode": "track"}), 201)
    creator = api.key.membership.user
    assert cap["createdByUserId"] == str(creator.id)
    text = text_of(console.get(f"/admin/controls/spendcap/{cap['id']}/change/").content.decode())
    assert f"Created by: {creator.email}" in text and creator.email == "owner@acme-agents.example.com"
    assert str(creator.id) not in text and "Created by user id" not in text
