"""Every event type reaches a real receiver on loopback, signed (verified by the Standard Webhooks reference
library), its `data` being what the API's GET answered for the object right after the change."""
import json
from datetime import datetime, timezone
from decimal import Decimal
from types import SimpleNamespace

import pytest
from django.core.management import call_command

from billing.services.invoices import invoices_mark_overdue
from webhooks.events import emit_subscription_plan_changed
from tests.billing.invoice_support import billing_chain, draft, event, pay, recurring, usage
from tests.billing.pools import pool_subscription, use
from tests.billing.support import ok
from tests.webhooks.support import create_endpoint

pytestmark = pytest.mark.django_db


def as_json(resp) -> dict:
    """An API answer with its numbers read exactly, as the receiver reads deliveries."""
    return json.loads(resp.content, parse_float=Decimal)


@pytest.fixture
def hooked(api, receiver, django_capture_on_commit_callbacks, settings):
    """An endpoint of every type on the receiver; `hooked.call(f)` runs f with its on-commit work done (as a
    request's commit would); `hooked.events(type)` the verified bodies the receiver got of that type."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    endpoint = create_endpoint(api, receiver.url)

    def call(function, *args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return function(*args, **kwargs)

    def events(event_type=None) -> list[dict]:
        bodies = [request.verified(endpoint["secret"]) for request in receiver.requests]
        return [body for body in bodies if event_type is None or body["type"] == event_type]
    return SimpleNamespace(endpoint=endpoint, call=call, events=events)


def only(hooked, event_type) -> dict:
    [body] = hooked.events(event_type)
    assert body["id"].startswith("evt_") and body["createdAt"]
    return body


@pytest.fixture
def chain(api, book):
    chain = billing_chain(api, book, [recurring("20"), usage("1")])
    event(chain, 4, "2025-01-10T12:00:00Z")
    return chain


def test_invoice_created_carries_the_draft_as_get_shows_it(api, hooked, chain):
    invoice = hooked.call(draft, api, chain)
    body = only(hooked, "invoice.created")
    assert body["data"] == as_json(api.get(f"/v1/invoices/{invoice['id']}"))
    assert (body["data"]["status"], body["data"]["total"]) == ("draft", Decimal("24.00"))


def test_sending_a_draft_reports_issued_then_sent(api, hooked, chain):
    invoice = hooked.call(draft, api, chain)
    hooked.call(api.post, f"/v1/invoices/{invoice['id']}/send", {})
    issued, sent = only(hooked, "invoice.issued"), only(hooked, "invoice.sent")
    assert issued["data"]["status"] == sent["data"]["status"] == "issued"
    assert sent["data"] == as_json(api.get(f"/v1/invoices/{invoice['id']}"))
    hooked.call(api.post, f"/v1/invoices/{invoice['id']}/send", {})  # a resend: sent again, not issued again
    assert len(hooked.events("invoice.sent")) == 2 and len(hooked.events("invoice.issued")) == 1


def test_a_payment_in_full_reports_payment_succeeded_and_invoice_paid(api, hooked, chain, client, settings):
    settings.STRIPE_WEBHOOK_SECRET, settings.STRIPE_SECRET_KEY = "whsec_test_invoices", ""
    invoice = hooked.call(draft, api, chain)
    hooked.call(api.post, f"/v1/invoices/{invoice['id']}/send", {})
    hooked.call(pay, client, invoice, payment_intent="pi_hooked_1")
    paid = only(hooked, "invoice.paid")
    assert paid["data"] == as_json(api.get(f"/v1/invoices/{invoice['id']}"))
    assert (paid["data"]["status"], paid["data"]["amountPaid"]) == ("paid", Decimal("24.00"))
    payment = only(hooked, "payment.succeeded")["data"]
    assert (payment["amount"], payment["providerPaymentId"], payment["invoiceId"]) == (
        Decimal("24.00"), "pi_hooked_1", invoice["id"])
    assert {key: value for key, value in payment.items() if key != "invoiceId"} == paid["data"]["payments"][0]


def test_a_full_refund_reports_payment_refunded_and_invoice_refunded(api, hooked, chain, client, settings):
    settings.STRIPE_WEBHOOK_SECRET, settings.STRIPE_SECRET_KEY = "whsec_test_invoices", ""
    invoice = hooked.call(draft, api, chain)
    hooked.call(api.post, f"/v1/invoices/{invoice['id']}/send", {})
    hooked.call(pay, client, invoice, payment_intent="pi_hooked_2")
    payment_id = ok(api.get(f"/v1/invoices/{invoice['id']}"))["payments"][0]["id"]
    hooked.call(api.post, f"/v1/invoices/{invoice['id']}/payments/{payment_id}/refund", {})
    refunded = only(hooked, "invoice.refunded")
    assert refunded["data"] == as_json(api.get(f"/v1/invoices/{invoice['id']}"))
    payment = only(hooked, "payment.refunded")["data"]
    assert (payment["status"], payment["refundedAmount"]) == ("refunded", Decimal("24.00"))


def test_voiding_reports_invoice_voided(api, hooked, chain):
    invoice = hooked.call(draft, api, chain)
    hooked.call(api.post, f"/v1/invoices/{invoice['id']}/void", {"reason": "duplicate"})
    voided = only(hooked, "invoice.voided")
    assert voided["data"] == as_json(api.get(f"/v1/invoices/{invoice['id']}"))
    assert (voided["data"]["status"], voided["data"]["voidReason"]) == ("void", "duplicate")


def test_the_overdue_job_reports_invoice_overdue(api, hooked, chain):
    invoice = hooked.call(draft, api, chain)
    hooked.call(api.post, f"/v1/invoices/{invoice['id']}/send", {})
    hooked.call(invoices_mark_overdue, now=datetime(2099, 1, 1, tzinfo=timezone.utc))
    overdue = only(hooked, "invoice.overdue")
    assert overdue["data"] == as_json(api.get(f"/v1/invoices/{invoice['id']}"))
    assert overdue["data"]["status"] == "overdue"
    assert overdue["createdAt"] == "2099-01-01T00:00:00Z"


def test_creating_and_ending_a_subscription_are_reported(api, hooked, book):
    chain = hooked.call(billing_chain, api, book, [recurring("20")])
    created = only(hooked, "subscription.created")
    subscription_id = chain.subscription["id"]
    assert created["data"]["id"] == subscription_id and created["data"]["status"] == "active"
    hooked.call(api.patch, f"/v1/subscriptions/{subscription_id}", {"status": "ended"})
    ended = only(hooked, "subscription.ended")
    assert ended["data"] == as_json(api.get(f"/v1/subscriptions/{subscription_id}"))
    assert ended["data"]["status"] == "ended"


def test_a_subscription_created_ended_is_reported_created_and_ended(api, hooked, book):
    """No job moves it to ended later: the receiver learns it here, or never."""
    chain = hooked.call(billing_chain, api, book, [recurring("20")], status="ended",
                        endDate="2025-03-01T00:00:00Z")
    assert only(hooked, "subscription.created")["data"]["status"] == "ended"
    ended = only(hooked, "subscription.ended")
    assert ended["data"] == as_json(api.get(f"/v1/subscriptions/{chain.subscription['id']}"))


def test_a_subscription_reaching_its_end_date_is_reported_by_the_scheduled_job(api, hooked, book):
    chain = hooked.call(billing_chain, api, book, [recurring("20")], endDate="2025-03-01T00:00:00Z")
    hooked.call(call_command, "run_scheduled_jobs", "--now", "2025-03-02T00:00:00Z")
    ended = only(hooked, "subscription.ended")
    assert ended["data"] == as_json(api.get(f"/v1/subscriptions/{chain.subscription['id']}"))


def test_moving_a_subscription_to_another_plan_reports_plan_changed(api, hooked, book):
    from tests.billing.support import create_plan
    chain = hooked.call(billing_chain, api, book, [recurring("20")])
    other_plan = create_plan(api, chain.agent.id, name="Pro plus")
    subscription_id = chain.subscription["id"]
    hooked.call(api.patch, f"/v1/subscriptions/{subscription_id}", {"planId": other_plan["id"]})
    changed = only(hooked, "subscription.plan_changed")
    assert changed["data"] == as_json(api.get(f"/v1/subscriptions/{subscription_id}"))
    assert changed["data"]["planId"] == other_plan["id"]
    hooked.call(api.patch, f"/v1/subscriptions/{subscription_id}", {"name": "Renamed"})
    assert len(hooked.events("subscription.plan_changed")) == 1  # other changes are not plan changes


def test_a_plan_change_reports_plan_changed_with_the_new_subscription_and_the_old_ones_end(api, hooked, book):
    from tests.billing.support import create_plan
    chain = hooked.call(billing_chain, api, book, [recurring("20")])
    other_plan = create_plan(api, chain.agent.id, name="Pro")
    old_id = chain.subscription["id"]
    replacement = hooked.call(api.post, f"/v1/subscriptions/{old_id}/change-plan",
                              {"planId": other_plan["id"], "effectiveAt": "2025-01-17T00:00:00Z"})
    assert replacement.status_code == 201, replacement.content
    new_id = replacement.json()["id"]
    changed = only(hooked, "subscription.plan_changed")
    assert changed["data"] == as_json(api.get(f"/v1/subscriptions/{new_id}"))
    assert (changed["data"]["planId"], changed["data"]["previousSubscriptionId"]) == (other_plan["id"], old_id)
    assert [body["data"]["id"] for body in hooked.events("subscription.created")][-1] == new_id
    ended = only(hooked, "subscription.ended")
    assert ended["data"] == as_json(api.get(f"/v1/subscriptions/{old_id}"))
    assert ended["data"]["nextSubscriptionId"] == new_id


def test_a_plan_change_voiding_a_draft_past_it_reports_invoice_voided(api, hooked, book):
    from tests.billing.invoice_support import FEB
    from tests.billing.support import create_plan
    chain = hooked.call(billing_chain, api, book, [recurring("20")])
    february = hooked.call(draft, api, chain, FEB)
    other_plan = create_plan(api, chain.agent.id, name="Pro")
    replacement = hooked.call(api.post, f"/v1/subscriptions/{chain.subscription['id']}/change-plan",
                              {"planId": other_plan["id"], "effectiveAt": "2025-01-17T00:00:00Z"})
    assert replacement.status_code == 201, replacement.content
    voided = only(hooked, "invoice.voided")
    assert voided["data"] == as_json(api.get(f"/v1/invoices/{february['id']}"))
    assert voided["data"]["status"] == "void" and "Plan changed" in voided["data"]["voidReason"]


def test_a_scheduled_change_replaced_or_withdrawn_reports_its_subscription_deleted(api, hooked, book, frozen_now):
    # The receiver was told of each scheduled successor (created, plan_changed); without this it kept two
    # subscriptions that answer 404.
    from tests.billing.support import create_plan
    chain = hooked.call(billing_chain, api, book, [recurring("20")])
    pro, team = create_plan(api, chain.agent.id, name="Pro"), create_plan(api, chain.agent.id, name="Team")
    path = f"/v1/subscriptions/{chain.subscription['id']}/change-plan"
    first = hooked.call(api.post, path, {"planId": pro["id"], "effectiveAt": "2099-01-01T00:00:00Z"}).json()
    seen = as_json(api.get(f"/v1/subscriptions/{first['id']}"))
    second = hooked.call(api.post, path, {"planId": team["id"], "effectiveAt": "2099-02-01T00:00:00Z"}).json()
    [deleted] = hooked.events("subscription.deleted")
    assert deleted["data"] == seen and deleted["data"]["status"] == "upcoming"
    assert hooked.call(api.delete, path).status_code == 200
    assert [body["data"]["id"] for body in hooked.events("subscription.deleted")] == [first["id"], second["id"]]
    assert api.get(f"/v1/subscriptions/{second['id']}").status_code == 404


def test_plan_changed_is_emitted_by_the_function_the_plan_change_calls(api, hooked, book):
    chain = hooked.call(billing_chain, api, book, [recurring("20")])
    subscription = as_json(api.get(f"/v1/subscriptions/{chain.subscription['id']}"))
    hooked.call(emit_subscription_plan_changed, book, subscription)
    assert only(hooked, "subscription.plan_changed")["data"] == subscription


def test_a_credit_pool_crossing_reports_the_highest_stage_passed(api, hooked, book, frozen_now):
    from tests.billing.pools import another_chain
    chain = another_chain(api, book)
    subscription = hooked.call(pool_subscription, api, chain)
    use(chain, 85)
    hooked.call(call_command, "run_scheduled_jobs", "--now", "2025-06-10T12:00:00Z")
    crossed = only(hooked, "credit_pool.threshold_crossed")["data"]
    assert (crossed["stage"], crossed["stagesPassed"]) == (80, [50, 80])
    assert (crossed["subscriptionId"], crossed["remainingUnits"]) == (subscription["id"], Decimal("15"))
    use(chain, 15)
    hooked.call(call_command, "run_scheduled_jobs", "--now", "2025-06-10T12:05:00Z")
    assert [body["data"]["stage"] for body in hooked.events("credit_pool.threshold_crossed")] == [80, "empty"]


def test_a_spend_cap_threshold_is_reported(api, hooked, book):
    from tests.controls.conftest import NOW
    from tests.factories import CustomerFactory
    from tests.controls.conftest import _usage
    from customers.models import CODING_AGENT_CODE
    cap = ok(api.post("/v1/control/caps", {"scope": "org", "providerScope": "all", "amountUsd": 100,
                                           "period": "month", "mode": "track"}), 201)
    developer = CustomerFactory(book=book, name="alice@acme.example.com", external_id="alice@acme.example.com",
                                is_internal=True)
    _usage(book, developer, CODING_AGENT_CODE, "55", NOW)
    hooked.call(call_command, "run_scheduled_jobs", "--now", NOW.isoformat())
    crossed = only(hooked, "spend_cap.threshold_crossed")["data"]
    assert (crossed["cap"]["id"], crossed["thresholdPercent"], crossed["spentUsd"]) == (cap["id"], 50, Decimal("55"))
    assert crossed["cap"] == as_json(api.get("/v1/control/caps"))[0]
    # Instants as the API writes them (docs/webhooks.md), not as Python's isoformat does ("+00:00").
    assert (crossed["windowStart"], crossed["windowEnd"]) == ("2025-03-01T00:00:00Z", "2025-04-01T00:00:00Z")


def test_a_customer_watch_firing_is_reported(api, hooked, book):
    from tests.controls.conftest import NOW, _usage
    from tests.factories import CustomerFactory
    customer = CustomerFactory(book=book, name="Globex", external_id="globex")
    watch = ok(api.post("/v1/customer-alerts", {"customerId": str(customer.id), "metric": "cost", "thresholdUsd": 10,
                                                "windowMode": "month",
                                                "notifyEmail": "owner@acme-agents.example.com"}), 201)
    _usage(book, customer, "support-agent", "10.5", NOW)
    hooked.call(call_command, "run_scheduled_jobs", "--now", NOW.isoformat())
    fired = only(hooked, "customer_alert.triggered")["data"]
    assert (fired["alert"]["id"], fired["valueUsd"], fired["thresholdUsd"]) == (watch["id"], Decimal("10.5"),
                                                                               Decimal("10"))
    assert fired["alert"] == as_json(api.get("/v1/customer-alerts"))[0]
    assert (fired["windowStart"], fired["windowEnd"]) == ("2025-03-01T00:00:00Z", "2025-04-01T00:00:00Z")


def test_jobs_report_succeeded_and_failed(api, hooked, book, monkeypatch):
    from tests.jobs.test_jobs import map_model, record_unknown
    from tests.factories import ServiceEntryFactory
    from customers import backfill
    llm = ServiceEntryFactory(canonical_name="mapped-llm", provider="mapai", input_cost=Decimal("0.000002"),
                              output_cost=Decimal("0.00001"))
    record_unknown(api, 2)
    body = hooked.call(map_model, api, llm)
    succeeded = only(hooked, "job.succeeded")["data"]
    assert succeeded == as_json(api.get(f"/v1/jobs/{body['jobId']}"))
    assert (succeeded["status"], succeeded["result"]) == ("succeeded", {"eventsPriced": 2})

    def breaks(book, events, **options):
        raise RuntimeError("the disk is full")
    monkeypatch.setattr(backfill, "_price_and_save", breaks)
    api.post("/v1/usage/record", {"records": [{"customerExternalId": "c", "agentCode": "a", "signalName": "s",
                                               "model": "other-model", "modelProvider": "inhouse",
                                               "inputTokens": 1, "outputTokens": 1}]})
    hooked.call(api.post, "/v1/events/map-model", {"model": "other-model", "modelProvider": "inhouse",
                                                     "serviceId": str(llm.id)})
    failed = only(hooked, "job.failed")["data"]
    assert failed == as_json(api.get(f"/v1/jobs/{failed['id']}"))
    assert failed["status"] == "failed" and "RuntimeError" in failed["error"]


def test_an_endpoint_receives_only_its_event_types(api, receiver, second_receiver, chain,
                                                   django_capture_on_commit_callbacks):
    paid_only = create_endpoint(api, second_receiver.url, eventTypes=["invoice.paid"])
    everything = create_endpoint(api, receiver.url)
    with django_capture_on_commit_callbacks(execute=True):
        draft(api, chain)
    assert [request.verified(everything["secret"])["type"] for request in receiver.requests] == ["invoice.created"]
    assert second_receiver.requests == [] and paid_only["eventTypes"] == ["invoice.paid"]
