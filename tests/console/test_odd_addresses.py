"""Addresses and forms a reviewer found answered 500 in the console, each now the list's "invalid filter" notice
or a form error: an operator's odd link or a tampered form never breaks a page."""
import pytest

from billing.models import Payment, Refund, Subscription
from tests.billing.invoice_support import billing_chain, draft, recurring
from tests.billing.pools import another_chain, pool_strategy
from tests.billing.support import create_plan, create_strategies, ok
from tests.console.conftest import messages_of

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("address", [
    "/admin/billing/invoice/?book=not-an-id",
    "/admin/billing/subscription/?book=12345",
    "/admin/customers/customer/?organization=not-an-id",
    "/admin/billing/subscription/?pool_left=NaN",
    "/admin/billing/subscription/?pool_left=Infinity",
    "/admin/billing/subscription/?pool_left=lots",
    # Django's own lookups, passed through to Python or PostgreSQL
    "/admin/billing/invoice/?issued_at__year=9999",
    "/admin/billing/invoice/?issued_at__year=9999&issued_at__month=12",
    "/admin/billing/invoice/?issued_at__year=9999&issued_at__month=12&issued_at__day=31",
    "/admin/billing/invoice/?issued_at__year=99999999999999999999",
    "/admin/billing/invoice/?period_start__year=99999",
    "/admin/billing/invoice/?status__exact=%00",
    "/admin/customers/customer/?metadata=%00",
    "/admin/billing/invoice/?id__regex=(",
    "/admin/accounts/apirequestlog/?ip=abc",
    # lists outside a book's scope: the catalog, the people
    "/admin/catalog/serviceentry/?updated_at__year=9999&updated_at__month=12",
    "/admin/catalog/serviceentry/?external_id=%00",
    "/admin/catalog/serviceentry/?input_cost__gt=1e999999",
    "/admin/accounts/user/?email=%00",
])
def test_a_filter_value_that_means_nothing_is_the_lists_invalid_filter_notice(console, api, book, frozen_now,
                                                                              address):
    billing_chain(api, book, [recurring("10")])  # a row to list, and a subscription to filter
    resp = console.get(address)
    assert resp.status_code == 302 and resp["Location"].endswith("?e=1"), resp.status_code


@pytest.mark.parametrize("percent", ["1e999999", "101", "-1e30"])
def test_a_pool_left_beyond_a_percent_is_the_invalid_filter_notice(console, api, book, frozen_now, percent):
    """With a credit pool to compare, 1e999999 overflowed the exact comparison (decimal.Overflow, a 500)."""
    chain = another_chain(api, book)
    create_strategies(api, chain.plan["id"], [pool_strategy(chain)])
    ok(api.post("/v1/subscriptions", {"name": "Pool", "planId": chain.plan["id"], "agentId": str(chain.agent.id),
                                      "customerId": str(chain.customer.id), "startDate": "2025-06-01T00:00:00Z"}),
       201)
    resp = console.get(f"/admin/billing/subscription/?pool_left={percent}")
    assert resp.status_code == 302 and resp["Location"].endswith("?e=1"), resp.status_code


@pytest.mark.parametrize("target", ["app_label=customers&model_name=signal&field_name=agent",
                                    "app_label=matters&model_name=matterrule&field_name=matter",
                                    "app_label=accounts&model_name=membership&field_name=user",
                                    "app_label=billing&model_name=planagent&field_name=agent"])
def test_an_autocomplete_search_for_a_nul_finds_nothing(console, api, book, frozen_now, target):
    billing_chain(api, book, [recurring("10")])
    resp = console.get(f"/admin/autocomplete/?term=%00&{target}")
    assert resp.status_code == 200 and resp.json()["results"] == []


def test_a_refund_naming_no_payment_of_the_invoice_says_so(console, api, book, frozen_now):
    chain = billing_chain(api, book, [recurring("10")])
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    resp = console.post(f"/admin/billing/invoice/{invoice['id']}/act/refund/", {"payment": "not-an-id"},
                        follow=True)
    assert resp.status_code == 200
    assert any("choose one of its payments to refund" in message for message in messages_of(resp))
    assert not Refund.objects.exists() and not Payment.objects.exists()


def test_a_plan_change_beyond_the_years_the_api_takes_is_a_form_error(console, api, book, frozen_now):
    chain = billing_chain(api, book, [recurring("20")], billingDay=1)
    pro = create_plan(api, chain.agent.id, name="Pro")
    create_strategies(api, pro["id"], [{"name": "pro fee", "agentId": str(chain.agent.id), **recurring("50")}])
    resp = console.post(f"/admin/billing/subscription/{chain.subscription['id']}/change-plan/",
                        {"plan": pro["id"], "when": "at", "effective_at": "9999-12-31 23:00", "preview": "Preview"})
    assert resp.status_code == 200
    assert resp.context["form"].errors["effective_at"] == ["Must lie between the years 1900 and 9000."]
    assert Subscription.objects.count() == 1
