"""Console actions: each calls the API's service, changes what the API would change, and reports every row as a
message; service errors and missing roles are error messages, never a 500."""
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from billing.models import (CreditGrant, Invoice, Payment, PricingPlan, PricingStrategy, Refund, Subscription,
                            SubscriptionChange)
from catalog.models import ModelAlias, ServiceEntry
from accounts.keys import key_digest
from accounts.models import ApiKey, Membership
from jobs.models import Job
from customers.models import EventStatus
from matters.models import Matter, MatterAttribution, MatterRule
from tests.billing.invoice_support import (JAN, WEBHOOK_SECRET, billing_chain, credit_pool, draft, pay, recurring,
                                           usage)
from tests.billing.support import create_plan, create_strategies, ok
from tests.console.conftest import NOW, action, apply_action, messages_of
from tests.factories import AgentFactory, CustomerFactory, MatterFactory, MatterRuleFactory, UsageEventFactory

pytestmark = pytest.mark.django_db

SUBSCRIPTIONS, INVOICES, PAYMENTS = ("/admin/billing/subscription/", "/admin/billing/invoice/",
                                     "/admin/billing/payment/")


@pytest.fixture(autouse=True)
def _console_settings(settings, frozen_now):
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET


@pytest.fixture
def chain(api, book):
    """A customer on a 20/month plan with 0.25 per unit of usage, active since January 2025."""
    return billing_chain(api, book, [recurring("20"), usage("0.25")])


def subscription_of(chain) -> Subscription:
    return Subscription.objects.get(pk=chain.subscription["id"])


def issued(api, chain, period=JAN) -> Invoice:
    invoice = draft(api, chain, period)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    return Invoice.objects.get(pk=invoice["id"])


# --------------------------------------------------------------------------- invoices

def test_generate_drafts_the_current_periods_invoice_of_each_selected_subscription(console, chain):
    resp = action(console, SUBSCRIPTIONS, "generate_invoices", [subscription_of(chain)])
    invoice = Invoice.objects.get(subscription_id=chain.subscription["id"])
    assert (invoice.status, invoice.period_start.isoformat(), invoice.total) == (
        "draft", "2025-06-01T00:00:00+00:00", Decimal("20.00"))
    assert messages_of(resp) == [f"{invoice.invoice_number} generated for Main: draft, total $20.00."]
    again = action(console, SUBSCRIPTIONS, "generate_invoices", [subscription_of(chain)])
    assert messages_of(again) == [f"{invoice.invoice_number} re-priced for Main: draft, total $20.00."]
    assert Invoice.objects.count() == 1


def test_generate_over_a_final_invoice_warns_that_nothing_was_generated_and_names_late_usage(console, api, chain):
    resp = action(console, SUBSCRIPTIONS, "generate_invoices", [subscription_of(chain)])
    invoice = Invoice.objects.get(subscription_id=chain.subscription["id"])
    assert api.post(f"/v1/invoices/{invoice.pk}/send", {}).status_code == 200
    again = action(console, SUBSCRIPTIONS, "generate_invoices", [subscription_of(chain)])
    assert messages_of(again) == [f"{invoice.invoice_number} already bills the period for Main: issued, total $20.00. "
                                  "Nothing was generated."]
    assert [message.level_tag for message in again.context["messages"]] == ["warning"]
    late = UsageEventFactory(book=chain.book, customer=chain.customer, signal=chain.signal, agent=chain.agent,
                             quantity=Decimal(4), usage_date=datetime(2025, 6, 5, tzinfo=UTC))
    late.created_at = NOW
    late.save(update_fields=["created_at"])
    warned = action(console, SUBSCRIPTIONS, "generate_invoices", [subscription_of(chain)])
    assert messages_of(warned) == [
        f"{invoice.invoice_number} already bills the period for Main: issued, total $20.00. Nothing was generated, "
        f"and usage recorded for the period since it was issued is not on it ({chain.signal.name}: billed 0, "
        "recorded 4): void it and generate the period again to bill it."]
    assert Invoice.objects.count() == 1 and resp.status_code == 200


def test_generate_reports_a_service_error_as_a_message(console, chain):
    chain.customer.is_internal = True  # internal customers are never invoiced (400 in the API)
    chain.customer.save()
    resp = action(console, SUBSCRIPTIONS, "generate_invoices", [subscription_of(chain)])
    assert resp.status_code == 200
    assert messages_of(resp) == ["Main: customerId: Internal coding-agent customers (developers) are never invoiced."]
    assert not Invoice.objects.exists()


def test_send_finalizes_and_emails_each_invoice_and_reports_unsendable_ones(console, api, chain, client):
    sendable = Invoice.objects.get(pk=draft(api, chain)["id"])
    paid = issued(api, chain, ("2025-02-01T00:00:00Z", "2025-02-28T23:59:59Z"))
    assert pay(client, {"id": str(paid.pk), "total": str(paid.total)}).status_code == 200
    resp = action(console, INVOICES, "send_invoices", [sendable, paid])
    sendable.refresh_from_db()
    assert (sendable.status, sendable.issued_at, sendable.last_sent_at) == ("issued", NOW, NOW)
    assert messages_of(resp) == [f"{sendable} sent to billing@client.example.com (issued).",
                                 f"{paid}: Invoice {paid} is paid and cannot be sent."]


def test_void_asks_for_a_reason_then_voids_drafts_and_refuses_paid_invoices(console, api, chain, client):
    open_invoice = Invoice.objects.get(pk=draft(api, chain)["id"])
    paid = issued(api, chain, ("2025-02-01T00:00:00Z", "2025-02-28T23:59:59Z"))
    assert pay(client, {"id": str(paid.pk), "total": str(paid.total)}).status_code == 200
    page = action(console, INVOICES, "void_invoices", [open_invoice, paid])
    assert page.status_code == 200 and "Void invoices" in page.content.decode() and 'name="reason"' in \
        page.content.decode()
    assert Invoice.objects.get(pk=open_invoice.pk).status == "draft"  # nothing happens before the confirmation
    resp = apply_action(console, INVOICES, "void_invoices", [open_invoice, paid], reason="billed twice")
    open_invoice.refresh_from_db()
    assert (open_invoice.status, open_invoice.void_reason, open_invoice.voided_at) == ("void", "billed twice", NOW)
    assert Invoice.objects.get(pk=paid.pk).status == "paid"
    assert messages_of(resp)[0] == f"{open_invoice} voided: billed twice."
    assert "a paid invoice is not voided, its payments are refunded" in messages_of(resp)[1]


def test_money_actions_need_the_roles_the_api_asks_for(console_for, api, chain):
    invoice = Invoice.objects.get(pk=draft(api, chain)["id"])
    member = console_for(role="member", email="member@acme.example.com")
    resp = apply_action(member, INVOICES, "void_invoices", [invoice], reason="")
    assert messages_of(resp) == [f"{invoice}: This needs the owner, admin or finance role in its organization."]
    assert Invoice.objects.get(pk=invoice.pk).status == "draft"


# --------------------------------------------------------------------------- refunds

def test_refund_records_the_amount_on_the_payment_and_the_invoice(console, api, chain, client):
    invoice = issued(api, chain)
    assert pay(client, {"id": str(invoice.pk), "total": str(invoice.total)}).status_code == 200
    payment = Payment.objects.get(invoice=invoice)
    page = action(console, PAYMENTS, "refund_payments", [payment])
    assert "Refund payments" in page.content.decode() and 'name="amount"' in page.content.decode()
    resp = apply_action(console, PAYMENTS, "refund_payments", [payment], amount="5.00", reason="goodwill")
    refund = Refund.objects.get(payment=payment)
    assert (refund.amount, refund.reason) == (Decimal("5.00"), "goodwill")
    payment.refresh_from_db()
    invoice.refresh_from_db()
    assert (payment.refunded_amount, payment.status) == (Decimal("5.00"), "partially_refunded")
    assert (invoice.amount_paid, invoice.status) == (Decimal("15.00"), "paid")
    assert messages_of(resp) == [f"Refunded $5.00 of payment {payment.provider_payment_id} ({invoice})."]


def test_a_refund_beyond_what_is_left_is_an_error_message(console, api, chain, client):
    invoice = issued(api, chain)
    assert pay(client, {"id": str(invoice.pk), "total": str(invoice.total)}).status_code == 200
    payment = Payment.objects.get(invoice=invoice)
    resp = apply_action(console, PAYMENTS, "refund_payments", [payment], amount="25.00")
    assert resp.status_code == 200
    assert messages_of(resp) == [f"{payment}: amount: Must be more than 0 and at most 20.00 (what is left of the "
                                 "payment)."]
    assert not Refund.objects.exists()


def test_a_bad_refund_amount_shows_the_form_again(console, api, chain, client):
    invoice = issued(api, chain)
    assert pay(client, {"id": str(invoice.pk), "total": str(invoice.total)}).status_code == 200
    payment = Payment.objects.get(invoice=invoice)
    resp = apply_action(console, PAYMENTS, "refund_payments", [payment], amount="-3")
    assert resp.status_code == 200 and "Ensure this value is greater than or equal to 0.01" in resp.content.decode()
    assert not Refund.objects.exists()


# --------------------------------------------------------------------------- credit pools

@pytest.fixture
def pool_chain(api, book):
    """A pool of 100 units for 50 (overage 0.75) sold since June 2025."""
    return billing_chain(api, book, [credit_pool(100, 50, "0.75")], start="2025-06-01T00:00:00Z")


def test_top_up_adds_units_once_per_submitted_form(console, pool_chain):
    subscription = subscription_of(pool_chain)
    page = action(console, SUBSCRIPTIONS, "top_up_credits", [subscription])
    form = page.context["form"]
    key = form.initial["idempotency_key"]
    assert key.startswith("console-") and 'name="units"' in page.content.decode()
    submission = {"units": "25", "note": "goodwill", "idempotency_key": key}
    resp = apply_action(console, SUBSCRIPTIONS, "top_up_credits", [subscription], **submission)
    grant = CreditGrant.objects.get(kind="topup")
    operator = Membership.objects.get(organization=subscription.book.organization, role="owner",
                                      user__is_staff=True).user
    assert (grant.units, grant.note, grant.created_by) == (Decimal("25"), "goodwill", f"user:{operator.pk}")
    assert messages_of(resp) == ["Main: 25 units added; 125 units left."]
    replay = apply_action(console, SUBSCRIPTIONS, "top_up_credits", [subscription], **submission)
    assert CreditGrant.objects.filter(kind="topup").count() == 1
    assert messages_of(replay) == ["Main: 25 units were already added by this form; 125 units left."]


def test_the_console_names_who_topped_up_by_email_and_by_key_name_and_the_csv_keeps_their_ids(console, api,
                                                                                               pool_chain):
    subscription = subscription_of(pool_chain)
    apply_action(console, SUBSCRIPTIONS, "top_up_credits", [subscription], units="25", note="goodwill",
                 idempotency_key="console-1")
    ApiKey.objects.filter(pk=api.key.pk).update(name="Backend")
    assert api.post(f"/v1/subscriptions/{subscription.pk}/credit-topup",
                    {"units": 5, "idempotencyKey": "api-1"}).status_code == 201
    operator = Membership.objects.get(organization=subscription.book.organization, role="owner",
                                      user__is_staff=True).user
    listing = console.get("/admin/billing/creditgrant/").content.decode()
    assert f'field-created_by">{operator.email}<' in listing
    assert f'field-created_by">Backend ({api.key.prefix}…)<' in listing
    assert f"user:{operator.pk}" not in listing and f"api-key:{api.key.pk}" not in listing
    grant = CreditGrant.objects.get(idempotency_key="api-1")
    assert f"Backend ({api.key.prefix}…)" in console.get(f"/admin/billing/creditgrant/{grant.pk}/change/").content.decode()
    csv_lines = action(console, "/admin/billing/creditgrant/", "export_csv", CreditGrant.objects.filter(kind="topup"))
    exported = b"".join(csv_lines.streaming_content).decode()
    assert f"user:{operator.pk}" in exported and f"api-key:{api.key.pk}" in exported


def test_a_superuser_who_is_no_member_is_named_by_email_too(console_for, pool_chain, other_org):
    """The README's first operator is a superuser, a member of no organization."""
    subscription = subscription_of(pool_chain)
    root = console_for(other_org, superuser=True, email="root@operator.example.com")
    resp = apply_action(root, SUBSCRIPTIONS, "top_up_credits", [subscription], units="25", note="goodwill",
                        idempotency_key="console-root")
    assert messages_of(resp) == ["Main: 25 units added; 125 units left."]
    grant = CreditGrant.objects.get(kind="topup")
    assert grant.created_by.startswith("user:")
    assert 'field-created_by">root@operator.example.com<' in root.get("/admin/billing/creditgrant/").content.decode()


def test_top_up_of_a_subscription_without_a_pool_is_an_error_message(console, chain):
    resp = apply_action(console, SUBSCRIPTIONS, "top_up_credits", [subscription_of(chain)], units="5",
                        idempotency_key="console-x")
    assert messages_of(resp) == ["Main: subscriptionId: The subscription's plan has no active credit-pool strategy "
                                 "for its agent, so it has no credit pool."]
    assert not CreditGrant.objects.filter(kind="topup").exists()


def test_top_up_refuses_units_that_are_not_positive(console, pool_chain):
    resp = apply_action(console, SUBSCRIPTIONS, "top_up_credits", [subscription_of(pool_chain)], units="0",
                        idempotency_key="console-x")
    assert "Must be greater than 0." in resp.content.decode()
    assert not CreditGrant.objects.filter(kind="topup").exists()


def test_pause_and_resume_pool_alerts_are_logged_on_the_subscription(console, pool_chain):
    subscription = subscription_of(pool_chain)
    paused = action(console, SUBSCRIPTIONS, "pause_pool_alerts", [subscription])
    assert messages_of(paused) == ["Main: pool alert emails paused."]
    assert Subscription.objects.get(pk=subscription.pk).pool_alerts_paused is True
    action(console, SUBSCRIPTIONS, "resume_pool_alerts", [subscription])
    assert Subscription.objects.get(pk=subscription.pk).pool_alerts_paused is False
    summaries = list(SubscriptionChange.objects.filter(subscription=subscription, kind="update")
                     .order_by("created_at").values_list("summary", "actor"))
    assert [summary for summary, _ in summaries] == ["Credit-pool alert emails paused",
                                                    "Credit-pool alert emails resumed"]
    assert all(actor.startswith("user:") for _, actor in summaries)


def test_the_subscription_page_shows_its_strategies_invoices_and_credit_pool(console, api, pool_chain):
    draft(api, pool_chain, ("2025-06-01T00:00:00Z", "2025-06-30T23:59:59Z"))
    page = console.get(f"{SUBSCRIPTIONS}{pool_chain.subscription['id']}/change/").content.decode()
    assert "strategy 0" in page  # the plan's strategy for this agent
    assert "INV-000001" in page  # the invoices inline
    assert ("100 units left, top-ups included (100% of the 100-unit pool of a period), 0 used this period "
            "(2025-06-01 to 2025-06-30).") in page


def test_the_changelog_names_rows_and_writes_instants_as_people_read_them(console, api, chain):
    """The API's changelog keeps field names, ids and ISO 8601; the console shows the field in words, the plan's name
    and the instant in UTC."""
    subscription_id = chain.subscription["id"]
    ok(api.patch(f"/v1/subscriptions/{subscription_id}", {"endDate": "2025-12-31T18:30:00Z"}))
    page = console.get(f"{SUBSCRIPTIONS}{subscription_id}/change/").content.decode()
    assert f"Plan: - → {chain.plan['name']}" in page
    assert "&quot;before&quot;" not in page and '"before"' not in page  # not the stored JSON
    assert f"Customer: - → {chain.customer.name}" in page
    assert "Start date: - → 2025-01-01 00:00 UTC" in page
    assert "End date: - → 2025-12-31 18:30 UTC" in page


def test_tiered_prices_read_as_spans_on_the_subscription_and_strategy_pages(console, api, pool_chain):
    pool = "a pool of 100 units for $50.00; $0.75 each beyond"
    page = console.get(f"{SUBSCRIPTIONS}{pool_chain.subscription['id']}/change/").content.decode()
    assert f"Usage, Credit pool, {pool}" in page
    strategy = pool_chain.strategies[0]["id"]
    assert pool in console.get(f"/admin/billing/pricingstrategy/{strategy}/change/").content.decode()
    plan = console.get(f"/admin/billing/pricingplan/{pool_chain.plan['id']}/change/").content.decode()
    assert pool in plan and "&quot;lower&quot;" not in plan


def test_a_period_grant_says_it_is_not_settled_until_its_period_is_and_then_what_it_drew(console, api, pool_chain):
    """A blank "consumed" beside a balance that counts the period's use read as nothing used."""
    subscription = Subscription.objects.get(pk=pool_chain.subscription["id"])
    subscription_page = f"{SUBSCRIPTIONS}{subscription.pk}/change/"
    grant = CreditGrant.objects.create(  # as the scheduled job grants a period: settled once the period ends
        book=subscription.book, subscription=subscription, kind="period", units=100,
        period_start=datetime(2025, 6, 1, tzinfo=UTC), period_end=datetime(2025, 7, 1, tzinfo=UTC))
    unsettled = "not settled yet (the credit pool&#x27;s balance counts this period&#x27;s use)"
    assert unsettled in console.get(subscription_page).content.decode()
    assert unsettled in console.get("/admin/billing/creditgrant/").content.decode()
    CreditGrant.objects.filter(pk=grant.pk).update(settled_at=NOW, consumed_units=Decimal("37.5"))
    for page in (console.get(subscription_page), console.get("/admin/billing/creditgrant/")):
        text = page.content.decode()
        assert unsettled not in text and ">37.5<" in text


def test_the_nearly_empty_pool_filter_lists_pools_with_20_percent_or_less_left(console, pool_chain, chain):
    UsageEventFactory(book=pool_chain.book, customer=pool_chain.customer, signal=pool_chain.signal,
                      quantity=Decimal(85), usage_date=NOW)
    resp = console.get(SUBSCRIPTIONS, {"pool_left": "20"})
    assert [row.pk for row in resp.context["cl"].result_list] == [subscription_of(pool_chain).pk]
    assert console.get(SUBSCRIPTIONS, {"pool_left": "many"}).status_code == 302  # ?e=1: a bad filter value


def test_filters_read_as_titles_and_codes_people_use(console, api, chain):
    """`isForever` is "By runs forever" (Django would write "By is forever"); currencies are codes in capitals."""
    issued(api, chain)
    subscriptions = console.get(SUBSCRIPTIONS).content.decode()
    assert "By runs forever" in subscriptions and "By is forever" not in subscriptions
    resp = console.get(INVOICES)
    (currency,) = [spec for spec in resp.context["cl"].filter_specs if spec.title == "currency"]
    assert [choice["display"] for choice in currency.choices(resp.context["cl"])] == ["All", "USD"]
    Subscription.objects.filter(pk=subscription_of(chain).pk).update(is_forever=True, end_date=None)
    other = billing_chain(api, chain.book, [recurring("5")])
    listed = {value: [row.pk for row in console.get(SUBSCRIPTIONS, {"is_forever__exact": value}).context["cl"]
                      .result_list] for value in ("1", "0")}
    assert listed == {"1": [subscription_of(chain).pk], "0": [subscription_of(other).pk]}


# --------------------------------------------------------------------------- matters, models, keys

def test_an_event_naming_no_model_says_why_and_pricing_again_leaves_it_unpriced(console, book):
    """Recording never stores one; an event written outside the API must not take the events pages down."""
    from catalog.event_pricing import NAMES_NOTHING
    event = UsageEventFactory(book=book, model=None, model_provider=None, services=None, usage_cost=None,
                              event_status=EventStatus.NEEDS_COST_BACKFILL)
    events = "/admin/customers/usageevent/"
    assert NAMES_NOTHING in console.get(events).content.decode()
    assert NAMES_NOTHING in console.get(f"{events}{event.pk}/change/").content.decode()
    resp = action(console, events, "price_again", [event])
    assert resp.status_code == 200 and messages_of(resp)
    event.refresh_from_db()
    assert (event.usage_cost, event.event_status) == (None, EventStatus.NEEDS_COST_BACKFILL)


def test_apply_rules_attributes_the_unassigned_events_of_the_books(console, book):
    matter = MatterFactory(book=book, matter_number="M-42")
    MatterRuleFactory(matter=matter, agent_code="contracts-bot")
    event = UsageEventFactory(book=book, agent_code="contracts-bot", usage_date=NOW)
    resp = action(console, "/admin/matters/matter/", "apply_matter_rules", [matter])
    assert MatterAttribution.objects.get(event=event).matter_id == matter.pk
    job = Job.objects.get(book=book)
    assert messages_of(resp) == [f'{book}: 1 events assigned by rule (<a href="/admin/jobs/job/{job.pk}/change/">'
                                 f'the job</a>).']
    assert (job.kind, job.status, job.done, job.result) == ("matter_rules_apply", "succeeded", 1, {"assigned": 1})


def test_apply_rules_needs_a_matters_role(console_for, book):
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="contracts-bot")
    UsageEventFactory(book=book, agent_code="contracts-bot", usage_date=NOW)
    resp = action(console_for(role="member", email="m@acme.example.com"), "/admin/matters/matter/",
                  "apply_matter_rules", [matter])
    assert messages_of(resp) == [f"{book}: This needs the owner, admin, finance or legal role in its organization."]
    assert not MatterAttribution.objects.exists()


def test_matters_and_rules_are_written_only_with_a_matters_role_and_read_by_every_operator(console_for, book):
    # A member added, changed and deleted them (a delete returns the matter's events to Unassigned); the matters
    # endpoints need the owner, admin, finance or legal role.
    matter = MatterFactory(book=book)
    rule = MatterRuleFactory(matter=matter, agent_code="contracts-bot")
    member = console_for(role="member", email="m@acme.example.com")
    for page in ("/admin/matters/matter/", f"/admin/matters/matter/{matter.pk}/change/", "/admin/matters/matterrule/"):
        assert member.get(page).status_code == 200
    assert member.get("/admin/matters/matter/add/").status_code == 403
    assert member.get("/admin/matters/matterrule/add/").status_code == 403
    assert member.post(f"/admin/matters/matter/{matter.pk}/delete/", {"post": "yes"}).status_code == 403
    assert member.post(f"/admin/matters/matterrule/{rule.pk}/delete/", {"post": "yes"}).status_code == 403
    deleted = member.post("/admin/matters/matter/", {"action": "delete_selected", "_selected_action": [matter.pk],
                                                     "post": "yes"})
    assert deleted.status_code in (302, 403)
    assert Matter.objects.filter(pk=matter.pk).exists() and MatterRule.objects.filter(pk=rule.pk).exists()
    legal = console_for(role="legal", email="l@acme.example.com")
    assert legal.get("/admin/matters/matter/add/").status_code == 200
    assert legal.post(f"/admin/matters/matterrule/{rule.pk}/delete/", {"post": "yes"}).status_code == 302
    assert not MatterRule.objects.filter(pk=rule.pk).exists()


def test_map_model_prefills_the_unknown_model_maps_it_and_prices_the_waiting_events(console, book):
    waiting = UsageEventFactory(book=book, model="house-llm", model_provider="acme", input_tokens=1_000_000,
                                output_tokens=0, usage_cost=None, event_status=EventStatus.NEEDS_COST_BACKFILL)
    service = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o")
    # Why it waits names the console's way to map it (this action), not the API's.
    how = "(select it and run &quot;Map the model to a catalog entry and price the waiting events&quot;)"
    for where in ("/admin/customers/usageevent/", f"/admin/customers/usageevent/{waiting.pk}/change/"):
        text = console.get(where).content.decode()
        assert "house-llm" in text and how in text and "/v1/events/map-model" not in text
    page = action(console, "/admin/customers/usageevent/", "map_model", [waiting])
    assert page.context["form"].initial == {"model": "house-llm", "model_provider": "acme"}
    resp = apply_action(console, "/admin/customers/usageevent/", "map_model", [waiting], model="house-llm",
                        model_provider="acme", service=str(service.pk))
    waiting.refresh_from_db()
    assert waiting.event_status == EventStatus.PROCESSED and waiting.usage_cost == service.input_cost * 1_000_000
    assert ModelAlias.objects.get(book=book, model="house-llm").service == service
    job = Job.objects.get(book=book)
    assert messages_of(resp) == [f"{book}: house-llm (acme) is priced as {service}; 1 unpriced events named it, "
                                 f'1 priced (<a href="/admin/jobs/job/{job.pk}/change/">the job</a>).']
    assert (job.kind, job.status, job.done, job.total) == ("cost_backfill", "succeeded", 1, 1)


def test_map_model_refuses_a_name_the_catalog_knows(console, book):
    event = UsageEventFactory(book=book, model="gpt-4o", model_provider="openai", usage_cost=None)
    service = ServiceEntry.objects.get(provider="openai", canonical_name="gpt-4o-mini")
    resp = apply_action(console, "/admin/customers/usageevent/", "map_model", [event], model="gpt-4o",
                        model_provider="openai", service=str(service.pk))
    assert "is already in the catalog" in messages_of(resp)[0]
    assert not ModelAlias.objects.exists()


def test_minting_a_key_shows_the_raw_key_once_and_stores_its_digest(console, org):
    membership = Membership.objects.get(organization=org, user__is_staff=True)
    resp = console.post("/admin/accounts/apikey/add/", {"membership": str(membership.pk), "name": "ci",
                                                        "key_type": "secret", "scope": "ingest",
                                                        "environment": "live"})
    raw_key = resp.context["raw_key"]
    key = ApiKey.objects.get(name="ci")
    assert raw_key in resp.content.decode() and raw_key.startswith("svc_sk_live_")
    assert (key.digest, key.scope, key.book.environment) == (key_digest(raw_key), "ingest", "live")
    assert raw_key not in console.get(f"/admin/accounts/apikey/{key.pk}/change/").content.decode()


def test_a_refused_key_shows_the_service_error_on_the_form(console, org):
    membership = Membership.objects.get(organization=org, user__is_staff=True)
    resp = console.post("/admin/accounts/apikey/add/", {"membership": str(membership.pk), "key_type": "publishable",
                                                        "scope": "legal", "environment": "test"})
    assert resp.status_code == 200 and "scope: Scopes apply to secret keys only." in resp.content.decode()
    assert not ApiKey.objects.filter(key_type="publishable").exists()


def test_only_owners_and_admins_mint_and_revoke_keys(console_for, org, api):
    member = console_for(role="finance", email="finance@acme.example.com")
    assert member.get("/admin/accounts/apikey/add/").status_code == 403
    resp = action(member, "/admin/accounts/apikey/", "revoke_keys", [api.key])
    assert messages_of(resp) == [f"{api.key}: This needs the owner or admin role in its organization."]
    assert ApiKey.objects.get(pk=api.key.pk).revoked_at is None
    owner_resp = action(console_for(), "/admin/accounts/apikey/", "revoke_keys", [api.key])
    assert ApiKey.objects.get(pk=api.key.pk).revoked_at == NOW
    assert messages_of(owner_resp) == [f"{api.key} revoked."]
    assert api.get("/v1/verify").status_code == 401


PLANS = "/admin/billing/pricingplan/"


def test_a_plan_in_use_is_not_deleted_and_the_page_says_why(console, api, chain):
    """Not Django's "no permission to delete subscription, pricing strategy" (said to a superuser too)."""
    plan = PricingPlan.objects.get(pk=chain.plan["id"])
    resp = console.get(f"{PLANS}{plan.pk}/delete/", follow=True)
    assert messages_of(resp) == [f"{plan} was not deleted: 1 upcoming or active subscription(s) are billed by it; "
                                 "end them first."]
    assert "permission" not in resp.content.decode()
    assert console.post(f"{PLANS}{plan.pk}/delete/", {"post": "yes"}).status_code == 302
    assert PricingPlan.objects.filter(pk=plan.pk).exists()
    Subscription.objects.filter(plan=plan).update(status="ended")
    ended = console.get(f"{PLANS}{plan.pk}/delete/", follow=True)
    assert messages_of(ended)[-1:] == [f'{plan} was not deleted: ended subscriptions keep it for their history and '
                                  'invoices; untick "Is active" to retire it.']


def test_an_unused_plan_is_deleted_from_its_page_with_its_strategies(console, api, book):
    agent = AgentFactory(book=book)
    plan = create_plan(api, agent.id)
    create_strategies(api, plan["id"], [{"name": "fee", "agentId": str(agent.id), **recurring("20")}])
    confirm = console.get(f"{PLANS}{plan['id']}/delete/")
    assert confirm.status_code == 200 and "permission" not in confirm.content.decode()
    assert "Pricing strategies: 1" in confirm.content.decode()
    resp = console.post(f"{PLANS}{plan['id']}/delete/", {"post": "yes"}, follow=True)
    assert resp.status_code == 200 and not PricingPlan.objects.filter(pk=plan["id"]).exists()
    assert not PricingStrategy.objects.filter(plan_id=plan["id"]).exists()
    actions = dict(console.get(PLANS).context["action_form"].fields["action"].choices)
    assert "delete_selected" not in actions  # one plan at a time, from its page


def test_the_events_list_names_the_signal_as_invoices_do(console, book):
    """A record may send the signal's short name (`documents_reviewed`): the list shows its name, as the invoice line
    and the portal do; an event whose signal was deleted shows what its record sent."""
    from tests.factories import SignalFactory
    signal = SignalFactory(book=book, name="Documents reviewed", short_name="documents_reviewed")
    named = UsageEventFactory(book=book, signal=signal, agent=signal.agent, signal_name="documents_reviewed")
    orphan = UsageEventFactory(book=book, signal_name="memos_drafted")
    orphan.signal.delete()  # its events are orphaned (signal null), as the API's delete leaves them
    listed = console.get("/admin/customers/usageevent/")
    page = listed.content.decode()
    assert {named.pk, orphan.pk} <= {event.pk for event in listed.context["cl"].result_list}
    assert 'field-signal_shown">Documents reviewed<' in page and 'field-signal_shown">memos_drafted<' in page
    assert ">documents_reviewed<" not in page


def test_a_customers_page_links_to_its_usage_events(console, book):
    """The customer's page leads to its events; the events list also finds them by the customer's whole name or
    external id (whole values: the ledger is the largest table)."""
    customer, other = CustomerFactory(book=book, name="Stark Industries"), CustomerFactory(book=book)
    priced = {"model": "gpt-4o", "model_provider": "openai", "usage_cost": Decimal("0.01")}
    mine = UsageEventFactory(book=book, customer=customer, customer_external_id=customer.external_id, **priced)
    UsageEventFactory(book=book, customer=other, customer_external_id=other.external_id, **priced)
    page = console.get(f"/admin/customers/customer/{customer.pk}/change/").content.decode()
    link = f"/admin/customers/usageevent/?customer__id__exact={customer.pk}"
    assert f'<a href="{link}">Usage events of this customer</a>' in page
    listed = console.get(link)
    assert listed.status_code == 200 and [event.pk for event in listed.context["cl"].result_list] == [mine.pk]
    assert 'field-customer nowrap">Stark Industries<' in listed.content.decode()  # by name, as other pages
    assert "<h1>Usage events of Stark Industries</h1>" in listed.content.decode()  # whose events these are
    assert console.get("/admin/customers/usageevent/?customer__id__exact=not-an-id").status_code in (200, 302)
    for term in ("stark industries", customer.external_id):
        found = console.get("/admin/customers/usageevent/", {"q": term})
        assert [event.pk for event in found.context["cl"].result_list] == [mine.pk], term
    assert list(console.get("/admin/customers/usageevent/", {"q": "Stark"}).context["cl"].result_list) == []


def test_a_multi_service_event_shows_its_models_where_a_single_one_shows_its_model(console, book):
    parts = [{"model": "nova-3", "modelProvider": "deepgram", "quantity": "2"},
             {"model": "gpt-4o-mini", "modelProvider": "openai", "inputTokens": 100, "quantity": "1"}]
    multi = UsageEventFactory(book=book, model=None, services=parts, usage_cost=Decimal("0.02"))
    single = UsageEventFactory(book=book, model="gpt-4o", model_provider="openai", usage_cost=Decimal("0.01"))
    listed = console.get("/admin/customers/usageevent/").content.decode()
    assert '<td class="field-models">nova-3 + gpt-4o-mini</td>' in listed
    assert '<td class="field-models">gpt-4o</td>' in listed
    page = console.get(f"/admin/customers/usageevent/{multi.pk}/change/").content.decode()
    assert "nova-3 + gpt-4o-mini" in page
    assert "gpt-4o" in console.get(f"/admin/customers/usageevent/{single.pk}/change/").content.decode()


def test_dated_lists_filter_last_month(console, book):
    """A month's close: last month's usage events (and invoices by period or due date) are one click away."""
    from datetime import timedelta

    from django.utils import timezone

    now = timezone.now()  # the filter's clock (Django's), not the service's
    this_month = now.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    last_month = (this_month - timedelta(days=1)).replace(day=1)
    priced = {"model": "gpt-4o", "model_provider": "openai", "usage_cost": Decimal("0.01")}
    inside = UsageEventFactory(book=book, usage_date=last_month + timedelta(days=3), **priced)
    UsageEventFactory(book=book, usage_date=this_month, **priced)
    UsageEventFactory(book=book, usage_date=last_month - timedelta(seconds=1), **priced)
    listing = console.get("/admin/customers/usageevent/")
    assert "Last month" in listing.content.decode()
    choices = next(spec for spec in listing.context["cl"].filter_specs if spec.title == "usage date").choices(
        listing.context["cl"])
    last = next(choice for choice in choices if choice["display"] == "Last month")
    found = console.get("/admin/customers/usageevent/" + last["query_string"])
    assert [event.pk for event in found.context["cl"].result_list] == [inside.pk]
    assert "Last month" in console.get("/admin/billing/invoice/").content.decode()


def test_filters_on_whether_a_date_is_set_read_as_people_say_them(console, book):
    """Not "By deleted at: Empty / Not empty"."""
    page = console.get("/admin/customers/customer/").content.decode()
    assert "By deleted" in page and "Not deleted" in page and "By deleted at" not in page and "Not empty" not in page
    assert "Not settled yet" in console.get("/admin/billing/creditgrant/").content.decode()
    listed = console.get("/admin/customers/customer/", {"deleted_at__isnull": "False"})
    assert listed.status_code == 200 and list(listed.context["cl"].result_list) == []


def test_members_are_added_and_deleted_only_by_those_who_manage_them(console_for, org):
    """A finance member was offered "Add membership" with an empty organization list and a delete action it could
    only be refused."""
    finance = console_for(role="finance", email="fiona@acme.example.com")
    listing = finance.get("/admin/accounts/membership/")
    assert listing.status_code == 200 and "/admin/accounts/membership/add/" not in listing.content.decode()
    assert "delete_selected" not in dict(listing.context["action_form"].fields["action"].choices)
    assert finance.get("/admin/accounts/membership/add/").status_code == 403
    owner = console_for(role="owner").get("/admin/accounts/membership/")
    assert "/admin/accounts/membership/add/" in owner.content.decode()


def _change_form_as_shown(client, path) -> dict:
    """The POST a change page's Save sends with nothing edited: its form's and inlines' values as shown."""
    page = client.get(path)
    data = {}
    form = page.context["adminform"].form
    forms = [(form, "")] + [(row, f"{row.prefix}-") for inline in page.context["inline_admin_formsets"]
                              for row in inline.formset.forms]
    for inline in page.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        data.update({f"{management.prefix}-{key}": value for key, value in management.initial.items()})
    for each, prefix in forms:
        for name, field in each.fields.items():
            value = each.initial.get(name, field.initial)
            if value is True:
                data[prefix + name] = "on"
            elif value not in (None, False, ""):
                data[prefix + name] = getattr(value, "pk", value)
    return data


def test_the_organization_page_neither_removes_a_member_with_keys_nor_gives_their_row_to_another_person(
        console_for, org):
    # The inline removed the member and, with them, their keys and every logged request of those keys (the
    # membership's own page refuses); changing the row's person handed them that member's keys.
    from accounts.models import ApiKey, Membership, User
    from accounts.services import api_key_mint, member_ensure

    member = member_ensure(organization=org, email="kim@acme.example.com", role="member")
    api_key_mint(membership=member, key_type="secret", environment="test", scope="full")
    other = User.objects.create_user(email="lee@acme.example.com")
    owner = console_for(role="owner", email="owner@acme.example.com")
    path = f"/admin/accounts/organization/{org.pk}/change/"
    data = _change_form_as_shown(owner, path)
    row = next(key[:-len("-id")] for key, value in data.items() if key.endswith("-id") and value == member.pk)
    for change in ({f"{row}-DELETE": "on"}, {f"{row}-user": other.pk}):
        resp = owner.post(path, {**data, **change})
        assert resp.status_code == 200 and resp.context["errors"], change  # the form again, with its error
    assert Membership.objects.get(pk=member.pk).user.email == "kim@acme.example.com"
    assert ApiKey.objects.filter(membership=member).count() == 1
    assert owner.post(path, data).status_code == 302  # nothing edited: saved


def test_an_invitation_is_withdrawn_only_by_those_who_manage_members(console_for, org):
    # Any role withdrew them; only an owner or admin invites.
    from datetime import timedelta

    from accounts.models import Invitation
    from core import clock

    invitation = Invitation.objects.create(organization=org, email="new@acme.example.com", digest="d" * 64,
                                           expires_at=clock.now() + timedelta(days=7))
    path = f"/admin/accounts/invitation/{invitation.pk}/delete/"
    for role in ("finance", "member"):
        assert console_for(role=role, email=f"{role}@acme.example.com").post(path, {"post": "yes"}).status_code == 403
    assert Invitation.objects.filter(pk=invitation.pk).exists()
    assert console_for(role="admin", email="ada@acme.example.com").post(path, {"post": "yes"}).status_code == 302
    assert not Invitation.objects.filter(pk=invitation.pk).exists()


@pytest.mark.parametrize("field, words", [("planId", "Plan"), ("currentPeriodEnd", "Current period end"),
                                          ("billingDay", "Billing day"), ("status", "Status"), ("Id", "Id")])
def test_a_changelog_field_reads_as_words(field, words):
    from billing.admin import field_words
    assert field_words(field) == words
