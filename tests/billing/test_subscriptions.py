"""Subscriptions over HTTP (spec sections 2, 3, 4 "Subscriptions", 7; contract "Subscription status",
"Status codes", "Periods", "Lists the spec calls arrays")."""
from datetime import datetime, timezone

import pytest

from billing.models import Subscription
from tests.billing.support import (changelog, create_plan, create_subscription, error, ok, subscription_body)
from tests.factories import AgentFactory, CustomerFactory, PlanAgentFactory

pytestmark = pytest.mark.django_db

NO_SUCH_ID = "00000000-0000-4000-8000-000000000000"


def test_create_with_a_future_start_is_upcoming_with_the_defaults(api, chain, frozen_now):
    body = create_subscription(api, chain, startDate="2025-07-01T00:00:00Z")
    assert (body["planId"], body["agentId"], body["customerId"]) == (chain.plan["id"], str(chain.agent.id),
                                                                     str(chain.customer.id))
    assert (body["status"], body["billingCycle"], body["billingModel"]) == ("upcoming", "monthly", "subscription")
    assert (body["netTerms"], body["seatsCount"], body["isForever"], body["timezone"]) == (30, 0, False, "UTC")
    assert (body["startDate"], body["endDate"], body["billingDay"]) == ("2025-07-01T00:00:00Z", None, None)
    assert body["currentPeriodStart"] is None and body["currentPeriodEnd"] is None


def test_create_with_a_past_start_is_active_with_the_period_in_force(api, chain, frozen_now):
    body = create_subscription(api, chain, startDate="2025-01-15T00:00:00Z")
    assert body["status"] == "active"
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-05-15T00:00:00Z", "2025-06-15T00:00:00Z")


def test_explicit_status_is_kept(api, chain, frozen_now):
    assert create_subscription(api, chain, startDate="2025-09-01", status="active")["status"] == "active"


def test_every_field_is_stored_and_returned(api, chain, frozen_now):
    created = create_subscription(api, chain, startDate="2025-03-01", endDate="2026-03-01", billingModel="hybrid",
                                  netTerms=45, seatsCount=7, billingDay=15, invoiceMemo="PO 4411",
                                  metadata={"crm": "x1"}, subscriptionDetails={"note": "pilot"},
                                  proratedAmount="12.345", timezone="Europe/Paris")
    body = ok(api.get(f"/v1/subscriptions/{created['id']}"))
    assert body == created
    assert (body["billingModel"], body["netTerms"], body["seatsCount"], body["billingDay"]) == ("hybrid", 45, 7, 15)
    assert (body["invoiceMemo"], body["metadata"], body["subscriptionDetails"]) == ("PO 4411", {"crm": "x1"},
                                                                                    {"note": "pilot"})
    assert body["proratedAmount"] == 12.345
    # bare dates are local midnight in the subscription's time zone (Paris: UTC+1 in winter)
    assert (body["startDate"], body["endDate"]) == ("2025-02-28T23:00:00Z", "2026-02-28T23:00:00Z")
    # billing day 15 at Paris midnight: 2025-05-15 is summer time (+2)
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-05-14T22:00:00Z", "2025-06-14T22:00:00Z")


def test_timezone_defaults_to_the_customers(api, chain):
    chain.customer.timezone = "America/New_York"
    chain.customer.save()
    body = create_subscription(api, chain, startDate="2025-01-01")
    assert (body["timezone"], body["startDate"]) == ("America/New_York", "2025-01-01T05:00:00Z")


def test_an_end_at_the_last_second_of_a_day_means_the_next_midnight(api, chain):
    assert create_subscription(api, chain, endDate="2025-01-31T23:59:59Z")["endDate"] == "2025-02-01T00:00:00Z"


@pytest.mark.parametrize("field", ["name", "planId", "agentId", "customerId", "startDate"])
def test_create_without_a_required_field_is_400_naming_it(api, chain, field):
    body = subscription_body(chain)
    del body[field]
    assert error(api.post("/v1/subscriptions", body), 400).startswith(f"{field}:")


@pytest.mark.parametrize("fields, name", [
    ({"planId": "plan-1"}, "planId"),
    ({"customerId": "12"}, "customerId"),
    ({"startDate": "next tuesday"}, "startDate"),
    ({"startDate": "2025-02-30"}, "startDate"),
    ({"endDate": "soon"}, "endDate"),
    ({"billingDay": 32}, "billingDay"),
    ({"billingDay": 0}, "billingDay"),
    ({"status": "paused"}, "status"),
    ({"billingCycle": "weekly"}, "billingCycle"),
    ({"timezone": "Mars/Olympus"}, "timezone"),
    ({"seatsCount": -1}, "seatsCount"),
    ({"metadata": "text"}, "metadata"),
    ({"currentPeriodStart": "2025-01-01"}, "currentPeriodStart"),
])
def test_create_with_a_malformed_field_is_400_naming_it(api, chain, fields, name):
    assert error(api.post("/v1/subscriptions", subscription_body(chain, **fields)), 400).startswith(f"{name}:")
    assert not Subscription.objects.exists()


@pytest.mark.parametrize("field", ["customerId", "agentId", "planId"])
def test_create_with_an_unknown_reference_is_404(api, chain, field):
    error(api.post("/v1/subscriptions", subscription_body(chain, **{field: NO_SUCH_ID})), 404)


def test_a_deleted_customer_is_404(api, chain):
    from core import clock
    chain.customer.deleted_at = clock.now()
    chain.customer.save()
    error(api.post("/v1/subscriptions", subscription_body(chain)), 404)


def test_an_internal_coding_agent_customer_takes_no_subscription(api, chain):
    recorded = api.post("/v1/usage/record", {"records": [{"customerExternalId": chain.customer.external_id,
                                                         "agentCode": "svc-coding-agent", "signalName": "session",
                                                         "model": "gpt-4o", "modelProvider": "openai"}]})
    assert recorded.status_code == 200 and recorded.json()["successful"] == 1, recorded.content
    assert error(api.post("/v1/subscriptions", subscription_body(chain)), 400).startswith("customerId:")
    assert not Subscription.objects.exists()


def test_an_agent_not_linked_to_the_plan_is_400(api, book, chain):
    stranger = AgentFactory(book=book)
    assert error(api.post("/v1/subscriptions", subscription_body(chain, agentId=str(stranger.id))),
                 400).startswith("agentId: The agent is not linked to this plan")


def test_an_agent_of_another_organization_is_422(api, other_book, chain):
    foreign = AgentFactory(book=other_book)
    assert "another organization" in error(api.post("/v1/subscriptions",
                                                    subscription_body(chain, agentId=str(foreign.id))), 422)


@pytest.mark.parametrize("fields, message", [
    ({"endDate": "2024-12-15"}, "endDate: Must be after startDate."),
    ({"endDate": "2025-01-01T00:00:00Z"}, "endDate: Must be after startDate."),
    ({"billingCycle": "custom"}, "customCycleDays: Required when billingCycle is custom."),
    ({"customCycleDays": 10}, "customCycleDays: Only used with billingCycle custom."),
    ({"billingCycle": "custom", "customCycleDays": 10, "billingDay": 5},
     "billingDay: Not used with billingCycle custom"),
])
def test_inconsistent_dates_or_cycle_are_422(api, chain, fields, message):
    assert error(api.post("/v1/subscriptions", subscription_body(chain, **fields)), 422).startswith(message)


def test_an_inactive_plan_takes_no_new_subscription(api, chain):
    ok(api.patch(f"/v1/pricing-plans/{chain.plan['id']}", {"isActive": False}))
    assert error(api.post("/v1/subscriptions", subscription_body(chain)), 422).startswith("planId:")


def test_custom_and_yearly_cycles_store_their_first_period(api, book, chain, frozen_now):
    custom = create_subscription(api, chain, billingCycle="custom", customCycleDays=45, startDate="2025-05-01")
    assert (custom["currentPeriodStart"], custom["currentPeriodEnd"]) == ("2025-05-01T00:00:00Z",
                                                                          "2025-06-15T00:00:00Z")
    customer = CustomerFactory(book=book)
    yearly = create_subscription(api, chain, customerId=str(customer.id), billingCycle="yearly", startDate="2024-02-29")
    assert (yearly["currentPeriodStart"], yearly["currentPeriodEnd"]) == ("2025-02-28T00:00:00Z",
                                                                          "2026-02-28T00:00:00Z")


def test_an_overlapping_live_subscription_for_the_same_customer_plan_and_agent_is_409(api, chain):
    first = create_subscription(api, chain, endDate="2025-06-01")
    assert first["id"] in error(api.post("/v1/subscriptions", subscription_body(chain, startDate="2025-05-01")), 409)
    after = create_subscription(api, chain, startDate="2025-06-01")  # starts where the first ends: no overlap
    assert after["status"] == "active"
    ok(api.patch(f"/v1/subscriptions/{first['id']}", {"status": "ended"}))
    ok(api.patch(f"/v1/subscriptions/{after['id']}", {"status": "ended"}))
    create_subscription(api, chain, startDate="2025-05-01")  # ended ones never block


def test_another_customer_or_agent_may_hold_the_same_plan_at_once(api, book, chain):
    create_subscription(api, chain)
    create_subscription(api, chain, customerId=str(CustomerFactory(book=book).id))
    other = PlanAgentFactory(book=book, plan_id=chain.plan["id"]).agent
    create_subscription(api, chain, agentId=str(other.id))


def test_list_is_a_bare_array_with_a_total_and_filters(api, book, chain, frozen_now):
    active = create_subscription(api, chain)
    upcoming = create_subscription(api, chain, customerId=str(CustomerFactory(book=book).id), startDate="2026-01-01")
    resp = api.get("/v1/subscriptions", {"customerId": str(chain.customer.id)})
    assert [row["id"] for row in ok(resp)] == [active["id"]] and resp["X-Total-Count"] == "1"
    assert [row["id"] for row in ok(api.get("/v1/subscriptions", {"status": "upcoming"}))] == [upcoming["id"]]
    assert ok(api.get("/v1/subscriptions", {"customerId": str(chain.customer.id), "status": "ended"})) == []
    assert len(ok(api.get("/v1/subscriptions", {"planId": chain.plan["id"], "agentId": str(chain.agent.id)}))) == 2
    paged = api.get("/v1/subscriptions", {"limit": 1, "offset": 1})
    assert len(ok(paged)) == 1 and paged["X-Total-Count"] == "2"


@pytest.mark.parametrize("params, name", [({"status": "paused"}, "status"), ({"customerId": "x"}, "customerId"),
                                          ({"limit": 0}, "limit"), ({"limit": 101}, "limit")])
def test_list_with_a_bad_parameter_is_400(api, params, name):
    assert error(api.get("/v1/subscriptions", params), 400).startswith(f"{name}:")


def test_subscriptions_of_another_organization_are_404(api, other_api, chain):
    subscription = create_subscription(api, chain)
    for path in ("", "/changelog"):
        error(other_api.get(f"/v1/subscriptions/{subscription['id']}{path}"), 404)
    error(other_api.patch(f"/v1/subscriptions/{subscription['id']}", {"name": "x"}), 404)
    error(other_api.patch(f"/v1/subscriptions/{subscription['id']}/invoice-dates", {"billingDay": 3}), 404)
    assert ok(other_api.get("/v1/subscriptions")) == []


def test_publishable_key_is_refused(client_for, chain):
    client = client_for(key_type="publishable")
    assert client.get("/v1/subscriptions").status_code == 403
    assert client.post("/v1/subscriptions", subscription_body(chain)).status_code == 403


def test_patch_changes_ordinary_fields_and_logs_an_update(api, chain):
    subscription = create_subscription(api, chain)
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}",
                        {"name": "Renamed", "invoiceMemo": "memo", "seatsCount": 12, "metadata": {"a": 1}}))
    assert (body["name"], body["invoiceMemo"], body["seatsCount"]) == ("Renamed", "memo", 12)
    assert body["metadata"] == {"a": 1}
    entry = changelog(api, subscription["id"])[0]
    assert entry["kind"] == "update" and entry["changes"]["name"] == {"before": "Main", "after": "Renamed"}
    assert set(entry["changes"]) == {"name", "invoiceMemo", "seatsCount", "metadata"}


def test_patch_start_date_or_the_current_period_is_400_naming_each(api, chain):
    subscription = create_subscription(api, chain)
    message = error(api.patch(f"/v1/subscriptions/{subscription['id']}", {
        "startDate": "2025-04-01T00:00:00Z", "currentPeriodStart": "2025-04-01", "currentPeriodEnd": "2025-05-01",
        "name": "ignored"}), 400)
    assert all(field in message for field in ("startDate:", "currentPeriodStart:", "currentPeriodEnd:"))
    assert ok(api.get(f"/v1/subscriptions/{subscription['id']}")) == subscription


@pytest.mark.parametrize("fields, name", [({"billingCycle": "yearly"}, "billingCycle"),
                                          ({"customCycleDays": 3}, "customCycleDays"),
                                          ({"customerId": NO_SUCH_ID}, "customerId")])
def test_patch_of_fields_fixed_at_creation_is_400(api, chain, fields, name):
    subscription = create_subscription(api, chain)
    assert error(api.patch(f"/v1/subscriptions/{subscription['id']}", fields), 400).startswith(f"{name}:")


def test_patch_plan_logs_a_plan_change(api, chain):
    subscription = create_subscription(api, chain)
    other_plan = create_plan(api, chain.agent.id, name="Enterprise")
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"planId": other_plan["id"]}))
    assert body["planId"] == other_plan["id"]
    entry = changelog(api, subscription["id"], kind="plan_change")[0]
    assert entry["changes"] == {"planId": {"before": chain.plan["id"], "after": other_plan["id"]}}
    assert entry["summary"] == "Changed plan 'Pro' -> 'Enterprise'"
    unlinked_plan = create_plan(api, name="No agents")
    assert error(api.patch(f"/v1/subscriptions/{subscription['id']}", {"planId": unlinked_plan["id"]}),
                 400).startswith("agentId:")


def test_patch_end_date_null_clears_it_and_the_period_grows_back(api, chain, frozen_now):
    subscription = create_subscription(api, chain, endDate="2025-06-20")  # current period [Jun 1, Jun 20)
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"endDate": None}))
    assert (body["endDate"], body["currentPeriodEnd"]) == (None, "2025-07-01T00:00:00Z")
    sent_back = {"timezone": body["timezone"], "endDate": "2025-06-25"}  # the stored timezone sent back is no change
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}", sent_back))
    assert (body["endDate"], body["currentPeriodEnd"]) == ("2025-06-25T00:00:00Z", "2025-06-25T00:00:00Z")


def test_patch_end_date_inside_the_current_period_cuts_it(api, chain, frozen_now):
    subscription = create_subscription(api, chain)  # current period [2025-06-01, 2025-07-01)
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"endDate": "2025-06-20"}))
    assert (body["endDate"], body["currentPeriodEnd"]) == ("2025-06-20T00:00:00Z", "2025-06-20T00:00:00Z")
    entry = changelog(api, subscription["id"])[0]
    assert entry["kind"] == "date_adjustment"
    assert entry["changes"]["currentPeriodEnd"] == {"before": "2025-07-01T00:00:00Z", "after": "2025-06-20T00:00:00Z"}
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"isForever": True}))
    assert body["currentPeriodEnd"] == "2025-07-01T00:00:00Z"  # the cut period grows back to its cycle
    assert error(api.patch(f"/v1/subscriptions/{subscription['id']}", {"isForever": False, "endDate": "2025-05-20"}),
                 422).startswith("endDate: Must be after the current billing period's start")


def test_patch_status_ended_ends_now_and_ended_is_final(api, chain, frozen_now):
    subscription = create_subscription(api, chain)
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "ended"}))
    assert (body["status"], body["endDate"], body["currentPeriodEnd"]) == ("ended", "2025-06-10T12:00:00Z",
                                                                          "2025-06-10T12:00:00Z")
    assert changelog(api, subscription["id"], kind="status_transition")[0]["changes"] == \
        {"status": {"before": "active", "after": "ended"}}
    assert error(api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "active"}), 422).startswith("status:")
    error(api.patch(f"/v1/subscriptions/{subscription['id']}", {"endDate": "2025-12-01"}), 422)


def test_patch_status_active_starts_an_upcoming_subscription_with_its_period(api, chain, frozen_now):
    subscription = create_subscription(api, chain, startDate="2025-06-01T00:00:00Z", status="upcoming")
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "active"}))
    assert (body["status"], body["currentPeriodStart"]) == ("active", "2025-06-01T00:00:00Z")
    resp = api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "upcoming"})
    assert error(resp, 422).startswith("status:")


def test_invoice_dates_move_the_billing_day_from_the_next_period(api, chain, frozen_now):
    subscription = create_subscription(api, chain)  # current period [2025-06-01, 2025-07-01)
    body = ok(api.patch(f"/v1/subscriptions/{subscription['id']}/invoice-dates", {"billingDay": 15}))
    assert body["billingDay"] == 15
    assert (body["currentPeriodStart"], body["currentPeriodEnd"]) == ("2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z")
    entry = changelog(api, subscription["id"])[0]
    assert entry["kind"] == "date_adjustment" and entry["changes"] == {"billingDay": {"before": None, "after": 15}}
    assert "from 2025-07-01T00:00:00Z" in entry["summary"]


@pytest.mark.parametrize("body, status", [({}, 400), ({"billingDay": 40}, 400), ({"timezone": "Nowhere"}, 400)])
def test_invoice_dates_validation(api, chain, body, status):
    subscription = create_subscription(api, chain)
    error(api.patch(f"/v1/subscriptions/{subscription['id']}/invoice-dates", body), status)


def test_invoice_dates_with_the_fixed_period_fields_are_a_400_naming_them_and_change_nothing(api, chain, frozen_now):
    subscription = create_subscription(api, chain)
    resp = api.patch(f"/v1/subscriptions/{subscription['id']}/invoice-dates",
                     {"billingDay": 15, "currentPeriodEnd": "2025-07-15T00:00:00Z", "startDate": "2025-02-01"})
    message = error(resp, 400)
    assert "currentPeriodEnd" in message and "startDate" in message
    assert ok(api.get(f"/v1/subscriptions/{subscription['id']}"))["billingDay"] is None


def test_invoice_dates_on_a_custom_cycle_or_an_ended_subscription_are_422(api, chain):
    custom = create_subscription(api, chain, billingCycle="custom", customCycleDays=14)
    assert error(api.patch(f"/v1/subscriptions/{custom['id']}/invoice-dates", {"billingDay": 3}),
                 422).startswith("billingDay:")
    ok(api.patch(f"/v1/subscriptions/{custom['id']}", {"status": "ended"}))
    resp = api.patch(f"/v1/subscriptions/{custom['id']}/invoice-dates", {"timezone": "Asia/Tokyo"})
    assert "ended" in error(resp, 422)


def test_changelog_entries_have_the_documented_shape_newest_first(api, chain):
    subscription = create_subscription(api, chain)
    ok(api.patch(f"/v1/subscriptions/{subscription['id']}", {"name": "Second"}))
    resp = api.get(f"/v1/subscriptions/{subscription['id']}/changelog")
    latest, created = ok(resp)
    assert resp["X-Total-Count"] == "2"
    assert set(created) == {"id", "subscriptionId", "kind", "summary", "changes", "strategyId", "actor", "createdAt"}
    assert (created["kind"], created["subscriptionId"], created["strategyId"]) == ("created", subscription["id"], None)
    assert created["changes"]["status"] == {"before": None, "after": "active"}
    assert created["actor"] == f"api-key:{api.key.id}"
    assert latest["kind"] == "update"
    resp = api.get(f"/v1/subscriptions/{subscription['id']}/changelog", {"kind": "nope"})
    assert error(resp, 400).startswith("kind:")


def test_an_upcoming_subscription_ended_before_it_starts_never_bills_usage(api, book, frozen_now):
    # Ending an upcoming subscription left its life [startDate, open): as the earliest-started subscription of the
    # customer and agent (July 1, the one that runs July 2) it still took their usage, and the one that runs
    # billed nothing.
    from tests.billing.invoice_support import billing_chain, draft, event, usage

    chain = billing_chain(api, book, [usage("1.00")], start="2025-07-01T00:00:00Z", status="upcoming")
    cancelled = ok(api.patch(f"/v1/subscriptions/{chain.subscription['id']}", {"status": "ended"}))
    assert cancelled["status"] == "ended"
    assert cancelled["endDate"] == cancelled["startDate"] == "2025-07-01T00:00:00Z"
    chain.subscription = create_subscription(api, chain, startDate="2025-07-02")
    frozen_now(datetime(2025, 8, 5, tzinfo=timezone.utc))
    for day in range(2, 12):
        for _ in range(5):
            event(chain, 1, f"2025-07-{day:02d}T10:00:00Z")
    invoice = draft(api, chain, ("2025-07-01T00:00:00Z", "2025-07-31T23:59:59Z"))
    assert invoice["total"] == 50


def test_a_subscription_created_ended_ends_now_and_never_takes_the_usage_of_the_one_that_runs(api, book, frozen_now):
    # Created `ended` without an endDate, its life stayed open: as the earliest-started subscription of the customer
    # and agent it billed, on no invoice ever drafted, every later event the running subscription should bill.
    from tests.billing.invoice_support import billing_chain, draft, event, usage

    chain = billing_chain(api, book, [usage("1.00")], start="2025-06-01T00:00:00Z")
    running = chain.subscription
    earlier = create_plan(api, chain.agent.id, name="Earlier contract")
    ok(api.post(f"/v1/pricing-plans/{earlier['id']}/pricing-strategies",
                [{"name": "tickets", "agentId": str(chain.agent.id), "chargeType": "usage", "pricingModel": "flat",
                  "rate": 5, "signalId": str(chain.signal.id)}]), 201)
    imported = create_subscription(api, chain, planId=earlier["id"], startDate="2025-01-01T00:00:00Z", status="ended")
    assert (imported["status"], imported["endDate"], imported["isForever"]) == ("ended", "2025-06-10T12:00:00Z", False)

    frozen_now(datetime(2025, 7, 5, tzinfo=timezone.utc))
    for day in (11, 20, 30):
        event(chain, 2, f"2025-06-{day}T10:00:00Z")
    chain.subscription = running
    assert draft(api, chain, ("2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z"))["total"] == 6


def test_a_subscription_created_ended_over_the_life_of_one_on_its_plan_is_a_409(api, chain, frozen_now):
    running = create_subscription(api, chain, startDate="2025-03-01T00:00:00Z")
    message = error(api.post("/v1/subscriptions", subscription_body(chain, status="ended")), 409)
    assert running["id"] in message
    before = create_subscription(api, chain, status="ended", endDate="2025-03-01T00:00:00Z")
    assert (before["status"], before["endDate"]) == ("ended", "2025-03-01T00:00:00Z")
    upcoming = create_subscription(api, chain, status="ended", startDate="2025-09-01T00:00:00Z",
                                   planId=create_plan(api, chain.agent.id)["id"])
    assert upcoming["endDate"] == upcoming["startDate"] == "2025-09-01T00:00:00Z"
