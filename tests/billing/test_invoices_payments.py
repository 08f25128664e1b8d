"""Payments and refunds: the Stripe webhook signed exactly as Stripe signs it, the pay-now page (Stripe Checkout,
Stripe mocked at its boundary; without a key "not configured", or the local checkout only when
PAYMENTS_LOCAL_CHECKOUT is on), refunds (contract: Payments, Hosted pages, Payments without Stripe)."""
import json
import re
import time
import uuid
from types import SimpleNamespace

import pytest
import stripe
from django.test import Client

from accounts.models import User
from accounts.services import member_ensure
from billing.models import Invoice, Payment, Refund
from billing.services.payments import LocalCheckoutDisabled, invoice_pay_locally
from core import clock
from tests.billing.invoice_support import (WEBHOOK_SECRET, billing_chain, draft, event, generate, pay, pdf_text,
                                           post_webhook, recurring, stripe_event, stripe_signature, usage)
from tests.billing.support import error, ok
from tests.factories import book_of
from tests.mail import sent_mail

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def stripe_settings(settings):
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.STRIPE_SECRET_KEY = ""
    settings.PAYMENTS_LOCAL_CHECKOUT = False
    settings.PUBLIC_BASE_URL = "http://testserver"


@pytest.fixture
def issued(api, book):
    """An issued invoice of 24.00 (20.00 recurring plus 4 units at 1.00), and its pay-now path."""
    chain = billing_chain(api, book, [recurring("20"), usage("1")])
    event(chain, 4, "2025-01-10T12:00:00Z")
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    pay_path = re.search(r"http://testserver(/pay/\S+)", sent_mail()[0].text).group(1)
    return SimpleNamespace(chain=chain, id=invoice["id"], pay_path=pay_path,
                           invoice=ok(api.get(f"/v1/invoices/{invoice['id']}")))


def full(api, issued) -> dict:
    return ok(api.get(f"/v1/invoices/{issued.id}"))


# --------------------------------------------------------------------------- webhook

def test_a_payment_in_full_marks_the_invoice_paid_and_is_listed(api, issued, client):
    resp = pay(client, issued.invoice, payment_intent="pi_full_1")
    assert resp.status_code == 200 and resp.json()["handled"] is True
    body = full(api, issued)
    assert (body["status"], body["amountPaid"], body["amountDue"]) == ("paid", 24, 0)
    [payment] = body["payments"]
    assert {"id", "amount", "refundedAmount", "status", "createdAt"} <= set(payment)
    assert (payment["amount"], payment["refundedAmount"], payment["status"]) == (24, 0, "succeeded")
    assert (payment["provider"], payment["providerPaymentId"]) == ("stripe", "pi_full_1")
    assert body["paidAt"] is not None


def test_a_replayed_event_changes_nothing(api, issued, client):
    body = stripe_event(issued.id, 2400)
    assert post_webhook(client, body).status_code == 200
    assert post_webhook(client, body, stripe_signature(body)).status_code == 200
    assert len(full(api, issued)["payments"]) == 1 and Payment.objects.count() == 1


@pytest.mark.parametrize("signature_of", [
    lambda body: stripe_signature(body, secret="whsec_wrong"),  # signed with another secret
    lambda body: "",  # no Stripe-Signature
    lambda body: "t=1,v1=deadbeef",  # garbage
    lambda body: "t=1,v1=caf\u00e9",  # beyond ASCII, as a header's bytes are read (Latin-1)
    lambda body: stripe_signature(body) + "\u00ff",  # a valid signature with a byte beyond ASCII after it
])
def test_a_bad_signature_is_400_and_changes_nothing(api, issued, client, signature_of):
    body = stripe_event(issued.id, 2400)
    assert post_webhook(client, body, signature_of(body)).status_code == 400
    after = full(api, issued)
    assert (after["status"], after["payments"]) == ("issued", [])


def test_an_old_signed_event_is_refused(api, issued, client):
    body = stripe_event(issued.id, 2400)
    assert post_webhook(client, body, stripe_signature(body, timestamp=int(time.time()) - 3600)).status_code == 400
    assert full(api, issued)["payments"] == []


def test_an_event_signed_with_a_time_ahead_of_the_clock_is_refused(api, issued, client):
    """Stripe's check bounds a signature's age only: one dated a day ahead would stay valid, and replayable, until
    a day after it."""
    body = stripe_event(issued.id, 2400)
    resp = post_webhook(client, body, stripe_signature(body, timestamp=int(time.time()) + 86400))
    assert resp.status_code == 400 and resp.json()["code"] == "invalid_signature"
    assert full(api, issued)["payments"] == []
    ahead = stripe_signature(body, timestamp=int(time.time()) + 86400)
    # Read as Stripe reads the header: the first part whose key is exactly `t` (" t=1" is not one).
    assert post_webhook(client, body, f" t=1,{ahead}").status_code == 400
    assert post_webhook(client, body, stripe_signature(body, timestamp=int(time.time()) + 60)).status_code == 200


def test_a_body_changed_after_signing_is_refused(api, issued, client):
    signed = stripe_event(issued.id, 100)
    tampered = signed.replace(b'"amount_total":100', b'"amount_total":2400')
    assert post_webhook(client, tampered, stripe_signature(signed)).status_code == 400


def test_without_a_webhook_secret_nothing_verifies(api, issued, client, settings):
    settings.STRIPE_WEBHOOK_SECRET = ""
    assert pay(client, issued.invoice).status_code == 400
    assert full(api, issued)["status"] == "issued"


def test_a_partial_payment_keeps_the_invoice_issued_until_the_rest_arrives(api, issued, client):
    pay(client, issued.invoice, 1000)
    body = full(api, issued)
    assert (body["status"], body["amountPaid"], body["amountDue"]) == ("issued", 10, 14)
    assert body["payments"][0]["amount"] == 10
    pay(client, issued.invoice, 1400)
    assert full(api, issued)["status"] == "paid"


def test_other_event_types_are_acknowledged_and_ignored(api, issued, client):
    resp = pay(client, issued.invoice, event_type="payment_intent.created")
    assert resp.status_code == 200 and resp.json()["handled"] is False
    assert full(api, issued)["payments"] == []


@pytest.mark.parametrize("changes", [{"livemode": True}, {"payment_status": "unpaid"}, {"currency": "eur"}])
def test_events_that_do_not_settle_this_invoice_are_ignored(api, issued, client, changes):
    livemode = changes.pop("livemode", False)
    resp = post_webhook(client, stripe_event(issued.id, 2400, livemode=livemode, **changes))
    assert resp.status_code == 200 and resp.json()["handled"] is False
    assert full(api, issued)["payments"] == []


@pytest.mark.parametrize("environment", ["test", "live"])
def test_a_signed_event_without_livemode_settles_the_invoice_it_names_in_either_book(client_for, org, client,
                                                                                      environment):
    api = client_for(environment=environment)
    chain = billing_chain(api, book_of(org, environment), [recurring("20")])
    invoice = draft(api, chain)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    body = json.loads(stripe_event(invoice["id"], 2000))
    del body["livemode"]  # a hand-built event, as the payment notification's fields describe it
    resp = post_webhook(client, json.dumps(body).encode())
    assert resp.status_code == 200 and resp.json()["handled"] is True
    assert ok(api.get(f"/v1/invoices/{invoice['id']}"))["status"] == "paid"
    # a test-mode event still never settles a live invoice
    if environment == "live":
        assert post_webhook(client, stripe_event(invoice["id"], 2000, livemode=False)).json()["handled"] is False


def test_an_event_for_an_unknown_invoice_is_acknowledged(client):
    resp = post_webhook(client, stripe_event("00000000-0000-4000-8000-000000000000", 100))
    assert resp.status_code == 200 and resp.json()["handled"] is False


@pytest.mark.parametrize("session, field", [
    ({"amount_total": 10**30}, "data.object.amount_total"),  # InvalidOperation in a cents column, once a 500
    ({"amount_total": -2400}, "data.object.amount_total"),
    ({"amount_total": "2400"}, "data.object.amount_total"),
    ({"amount_total": 24.5}, "data.object.amount_total"),
    ({"amount_total": True}, "data.object.amount_total"),
    ({"amount_total": None}, "data.object.amount_total"),
    ({"currency": "us"}, "data.object.currency"),
    ({"currency": 840}, "data.object.currency"),
    ({"payment_intent": "pi_" + "x" * 300}, "data.object.payment_intent"),
    ({"payment_intent": "pi_1\x00"}, "data.object.payment_intent"),
    ({"payment_intent": {"id": "pi_1"}}, "data.object.payment_intent"),
])
def test_a_signed_session_of_ours_with_a_value_stripe_never_sends_is_400_and_changes_nothing(api, issued, client,
                                                                                             session, field):
    resp = post_webhook(client, stripe_event(issued.id, 2400, **session))
    assert error(resp, 400).startswith(f"{field}: ")
    body = full(api, issued)
    assert (body["status"], body["payments"]) == ("issued", [])


@pytest.mark.parametrize("body", [
    b'{"type": "checkout.session.completed", "type": "payment_intent.created"}',  # which one? refused
    b"[" * 5000 + b"]" * 5000,
    b'{"type": "checkout.session.completed", "data": {"object": {"metadata": {"invoiceId": "a\\u0000"}}}}',
    b'{"type": "checkout.session.completed", "data": {"object": {"id": "\\ud800"}}}',
])
def test_a_signed_body_that_is_not_json_the_service_reads_is_400(client, body):
    assert post_webhook(client, body).status_code == 400
    assert not Payment.objects.exists()


def test_a_session_of_another_integration_is_acknowledged_and_ignored(api, issued, client):
    resp = post_webhook(client, stripe_event(issued.id, 2400, metadata={"invoiceId": "INV-0042"}))
    assert resp.status_code == 200 and resp.json()["handled"] is False
    assert full(api, issued)["payments"] == []


def test_money_received_for_a_void_invoice_is_recorded_without_reviving_it(api, issued, client, org):
    """A Checkout opened before the void and paid after it: the money is recorded, the invoice stays void, and all
    of it is owed back (amountOverpaid, the webhook's detail, the console's Overpaid list, the pay page)."""
    ok(api.post(f"/v1/invoices/{issued.id}/void", {}))
    answer = pay(client, issued.invoice)
    body = full(api, issued)
    assert (body["status"], len(body["payments"])) == ("void", 1)
    assert (body["amountPaid"], body["amountOverpaid"], body["amountDue"]) == (24, 24, 0)
    assert "the invoice is void and holds 24.00 (refund the payment)" in answer.json()["detail"]
    member_ensure(organization=org, email="ops@acme.example", role="owner")
    User.objects.filter(email="ops@acme.example").update(is_staff=True)
    console = Client()
    console.force_login(User.objects.get(email="ops@acme.example"))
    listed = console.get("/admin/billing/invoice/", {"overpaid": "yes"}).content.decode()
    assert issued.invoice["invoiceNumber"] in listed
    page = Client().get(issued.pay_path)
    assert page.status_code == 410
    assert "A payment of $24.00 reached this invoice after it was voided; it is owed back to you." in \
        page.content.decode()


def charge_refunded(payment_intent: str, amount_refunded, livemode=False, **charge) -> bytes:
    """A `charge.refunded` event as Stripe sends it: the charge with all of its refunds so far, in cents."""
    obj = {"id": "ch_test_1", "object": "charge", "amount": 2400, "amount_refunded": amount_refunded,
           "currency": "usd", "payment_intent": payment_intent, "refunded": amount_refunded == 2400, **charge}
    return json.dumps({"id": f"evt_test_{uuid.uuid4().hex}", "object": "event", "type": "charge.refunded",
                       "livemode": livemode, "created": int(time.time()), "data": {"object": obj}}).encode()


def test_a_refund_made_at_stripe_is_recorded_once_from_its_charge_event(api, issued, client):
    """Refunded from Stripe's dashboard: the charge's `amount_refunded` (all its refunds so far) against what the
    payment recorded; a replay, or the event of a refund this service made, records nothing more."""
    pay(client, issued.invoice, payment_intent="pi_dashboard")
    first = post_webhook(client, charge_refunded("pi_dashboard", 1000))
    assert first.status_code == 200 and first.json()["detail"] == "refund of 10.00 made at Stripe recorded"
    body = full(api, issued)
    assert (body["status"], body["amountPaid"], body["payments"][0]["refundedAmount"]) == ("paid", 14, 10)
    assert post_webhook(client, charge_refunded("pi_dashboard", 1000)).json()["detail"] == "refund already recorded"
    payment_id = body["payments"][0]["id"]
    ok(api.post(f"/v1/invoices/{issued.id}/payments/{payment_id}/refund", {"amount": 4}), 201)  # made here
    assert post_webhook(client, charge_refunded("pi_dashboard", 1400)).json()["detail"] == "refund already recorded"
    post_webhook(client, charge_refunded("pi_dashboard", 2400))  # the rest, at Stripe
    body = full(api, issued)
    assert (body["status"], body["amountPaid"], Refund.objects.count()) == ("refunded", 0, 3)
    ignored = post_webhook(client, charge_refunded("pi_someone_else", "lots")).json()  # not ours, whatever it holds
    assert ignored["handled"] is False
    live = post_webhook(client, charge_refunded("pi_dashboard", 2400, livemode=True)).json()  # a test-book payment
    assert live["handled"] is False and live["detail"] == "no payment of this charge"


# --------------------------------------------------------------------------- pay-now page

def test_the_pay_link_of_an_invoice_of_nothing_says_nothing_is_due_not_paid(api, book):
    """A usage-only plan with no usage bills 0.00: issued, never paid (no payment is recorded for it)."""
    chain = billing_chain(api, book, [usage("1")])
    invoice = draft(api, chain)
    assert invoice["total"] == 0
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    pay_path = re.search(r"http://testserver(/pay/\S+)", sent_mail()[-1].text).group(1)
    html = Client().get(pay_path).content.decode()
    assert "Nothing is due on this invoice." in html and "is paid" not in html


def test_without_a_stripe_key_the_pay_link_says_online_payment_is_not_configured(api, issued):
    page = Client().get(issued.pay_path)
    html = page.content.decode()
    assert page.status_code == 200 and "$24.00" in html and issued.invoice["invoiceNumber"] in html
    assert "Online payment is not configured" in html
    assert 'name="attempt"' not in html and "<form" not in html  # no way to mark it paid


def test_without_the_local_checkout_a_post_to_the_pay_link_pays_nothing(api, issued):
    # The form a local checkout would send (the test client skips CSRF: the refusal is the page's own).
    resp = Client().post(issued.pay_path, {"attempt": "7b0e5bb8-7c61-4d4a-a7cf-1d4a5b46a003"})
    assert resp.status_code == 403 and "Online payment is not configured" in resp.content.decode()
    body = full(api, issued)
    assert (body["status"], body["amountPaid"], body["payments"]) == ("issued", 0, [])
    assert Payment.objects.count() == 0


def test_the_local_checkout_service_refuses_unless_enabled(issued, settings):
    token = issued.pay_path.removeprefix("/pay/")
    with pytest.raises(LocalCheckoutDisabled):
        invoice_pay_locally(token=token, attempt=uuid.uuid4(), now=clock.now())
    settings.PAYMENTS_LOCAL_CHECKOUT, settings.STRIPE_SECRET_KEY = True, "sk_test_123"  # Stripe takes the payment
    with pytest.raises(LocalCheckoutDisabled):
        invoice_pay_locally(token=token, attempt=uuid.uuid4(), now=clock.now())
    assert Payment.objects.count() == 0 and Invoice.objects.get(pk=issued.id).status == "issued"


def test_with_a_stripe_key_a_post_to_the_pay_link_pays_nothing_even_with_the_local_checkout_on(api, issued, settings):
    settings.PAYMENTS_LOCAL_CHECKOUT, settings.STRIPE_SECRET_KEY = True, "sk_test_123"
    resp = Client().post(issued.pay_path, {"attempt": "7b0e5bb8-7c61-4d4a-a7cf-1d4a5b46a004"})
    assert resp.status_code == 302 and Payment.objects.count() == 0
    assert full(api, issued)["status"] == "issued"


def test_the_local_checkout_page_pays_what_is_due_with_a_csrf_protected_form(api, issued, settings):
    settings.PAYMENTS_LOCAL_CHECKOUT = True
    browser = Client(enforce_csrf_checks=True)
    page = browser.get(issued.pay_path)
    html = page.content.decode()
    assert page.status_code == 200 and "$24.00" in html and issued.invoice["invoiceNumber"] in html
    assert "https://" not in html and "<script" not in html  # no external assets
    assert browser.post(issued.pay_path, {"attempt": "x"}).status_code == 403  # no CSRF token
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    attempt = re.search(r'name="attempt" value="([^"]+)"', html).group(1)
    form = {"csrfmiddlewaretoken": token, "attempt": attempt}
    assert browser.post(issued.pay_path, form).status_code == 302
    assert browser.post(issued.pay_path, form).status_code == 302  # a double submit pays once
    body = full(api, issued)
    assert (body["status"], [p["amount"] for p in body["payments"]]) == ("paid", [24])
    assert body["payments"][0]["provider"] == "local"
    assert "is paid" in browser.get(issued.pay_path).content.decode()


def test_an_unknown_pay_link_is_a_404_page(client):
    resp = client.get("/pay/not-a-real-token")
    assert resp.status_code == 404 and "not valid" in resp.content.decode()


def test_with_a_stripe_key_the_pay_link_opens_stripe_checkout(api, issued, client, settings, monkeypatch):
    settings.STRIPE_SECRET_KEY = "sk_test_123"
    calls = []

    def create(**params):
        calls.append(params)
        return SimpleNamespace(url="https://checkout.stripe.com/c/pay/cs_test_1")
    monkeypatch.setattr(stripe.checkout.Session, "create", create)
    pay(client, issued.invoice, 400)  # 4.00 paid already: 20.00 due
    resp = client.get(issued.pay_path)
    assert resp.status_code == 302 and resp["Location"] == "https://checkout.stripe.com/c/pay/cs_test_1"
    [params] = calls
    assert params["api_key"] == "sk_test_123" and params["mode"] == "payment"
    assert params["metadata"] == {"invoiceId": issued.id}
    assert params["line_items"][0]["price_data"]["unit_amount"] == 2000
    assert params["success_url"] == f"http://testserver{issued.pay_path}?checkout=success"
    assert "being confirmed" in client.get(issued.pay_path + "?checkout=success").content.decode()
    assert len(calls) == 1


def test_when_stripe_fails_the_page_says_so(issued, client, settings, monkeypatch):
    settings.STRIPE_SECRET_KEY = "sk_test_123"

    def create(**params):
        raise stripe.APIConnectionError("down")
    monkeypatch.setattr(stripe.checkout.Session, "create", create)
    resp = client.get(issued.pay_path)
    assert resp.status_code == 502 and "try again" in resp.content.decode()


# --------------------------------------------------------------------------- refunds

@pytest.fixture
def paid(api, issued, client):
    pay(client, issued.invoice, payment_intent="pi_paid_1")
    issued.payment = full(api, issued)["payments"][0]
    return issued


def refund_path(paid) -> str:
    return f"/v1/invoices/{paid.id}/payments/{paid.payment['id']}/refund"


def test_a_full_refund_moves_the_paid_invoice_to_refunded_and_keeps_the_records(api, paid):
    body = ok(api.post(refund_path(paid), {}), 201)
    assert (body["amount"], body["invoiceStatus"], body["payment"]["refundedAmount"]) == (24, "refunded", 24)
    after = full(api, paid)
    assert (after["status"], after["amountPaid"]) == ("refunded", 0)
    [payment] = after["payments"]
    assert (payment["amount"], payment["refundedAmount"], payment["status"]) == (24, 24, "refunded")
    assert [refund["amount"] for refund in payment["refunds"]] == [24]


def test_a_refunded_invoice_is_voided_and_its_period_billed_again(api, paid):
    """Refunded in full because it billed the wrong amount: voided, its period is free for a new invoice (it held
    the period for good). A paid invoice is still never voided."""
    ok(api.post(refund_path(paid), {}), 201)
    voided = ok(api.post(f"/v1/invoices/{paid.id}/void", {"reason": "billed the wrong plan"}))
    assert voided["status"] == "void"
    again = ok(generate(api, paid.chain), 201)
    assert again["id"] != paid.id and again["status"] == "draft" and again["total"] == 24


def test_a_paid_invoice_is_still_never_voided(api, paid):
    assert "a paid invoice is not voided" in error(api.post(f"/v1/invoices/{paid.id}/void", {}), 400)


def test_a_partial_refund_keeps_the_invoice_paid_with_less_collected(api, paid):
    ok(api.post(refund_path(paid), {"amount": "4.50", "reason": "goodwill"}), 201)
    after = full(api, paid)
    # Money given back is not money owed again: nothing is due on the paid invoice (spec: "net collected amount
    # reduced"), so no pay link or pay-now block offers to collect the refund a second time.
    assert (after["status"], after["amountPaid"], after["amountDue"]) == ("paid", 19.5, 0)
    assert (after["payments"][0]["refundedAmount"], after["payments"][0]["status"]) == (4.5, "partially_refunded")
    text = pdf_text(api.get(f"/v1/invoices/{paid.id}/pdf").content)
    assert re.search(r"Refunded\s+\$4\.50", text) and re.search(r"Amount due\s+\$0\.00", text), text
    ok(api.post(refund_path(paid), {}), 201)  # the rest
    after = full(api, paid)
    assert (after["status"], after["amountPaid"], after["amountDue"]) == ("refunded", 0, 0)


@pytest.mark.parametrize("amount", ["24.01", "0", "-1", "1.005"])
def test_refunding_more_than_is_left_or_a_bad_amount_is_400(api, paid, amount):
    assert "amount" in error(api.post(refund_path(paid), {"amount": amount}), 400)
    assert Refund.objects.count() == 0 and full(api, paid)["status"] == "paid"


def test_a_refunded_payment_cannot_be_refunded_again(api, paid):
    ok(api.post(refund_path(paid), {}), 201)
    error(api.post(refund_path(paid), {"amount": 1}), 400)


def test_with_a_stripe_key_the_refund_goes_to_stripe_first(api, paid, settings, monkeypatch):
    settings.STRIPE_SECRET_KEY = "sk_test_123"
    calls = []

    def create(**params):
        calls.append(params)
        return SimpleNamespace(id="re_test_1")
    monkeypatch.setattr(stripe.Refund, "create", create)
    body = ok(api.post(refund_path(paid), {"amount": "10"}), 201)
    assert body["providerRefundId"] == "re_test_1"
    [params] = calls
    assert (params["payment_intent"], params["amount"], params["api_key"]) == ("pi_paid_1", 1000, "sk_test_123")
    assert params["idempotency_key"]


def test_a_refund_stripe_refuses_records_nothing_and_is_a_422_saying_why(api, paid, settings, monkeypatch):
    # Not an outage: asking again gets the same answer (it was a 502 "refused or did not answer").
    settings.STRIPE_SECRET_KEY = "sk_test_123"

    def create(**params):
        raise stripe.InvalidRequestError("Charge ch_1 has already been refunded.", param="payment_intent")
    monkeypatch.setattr(stripe.Refund, "create", create)
    resp = api.post(refund_path(paid), {})
    assert resp.status_code == 422 and resp.json()["code"] == "payment_refused"
    assert "already been refunded" in resp.json()["message"]
    assert Refund.objects.count() == 0 and full(api, paid)["status"] == "paid"


def stripe_refunds_with_the_first_answer_lost(monkeypatch) -> dict:
    """Stripe's refunds as its idempotency keeps them for 24 hours, the first answer lost: {key: (cents, refund id)}
    of the refunds made."""
    made, answers_lost = {}, [True]

    def create(*, idempotency_key, amount, **params):
        if idempotency_key in made and made[idempotency_key][0] != amount:
            raise stripe.IdempotencyError("Keys for idempotent requests can only be used with the same parameters "
                                          "they were first used with.")
        made.setdefault(idempotency_key, (amount, f"re_{len(made) + 1}"))
        if answers_lost.pop() if answers_lost else False:
            raise stripe.APIConnectionError("Network error: the read timed out.")
        return SimpleNamespace(id=made[idempotency_key][1])
    monkeypatch.setattr(stripe.Refund, "create", create)
    return made


def test_after_a_refund_whose_answer_was_lost_one_of_another_amount_is_refused_and_the_same_one_recorded_once(
        api, paid, settings, monkeypatch):
    # Stripe made the refund and its answer was lost (a 502, nothing recorded here). The next refund of 5 went out
    # under a key of its own (the amount was part of it): a second refund at Stripe, the first never recorded.
    settings.STRIPE_SECRET_KEY = "sk_test_123"
    made = stripe_refunds_with_the_first_answer_lost(monkeypatch)

    lost = api.post(refund_path(paid), {"amount": "4"})
    assert lost.status_code == 502 and "refunds once" in lost.json()["message"]
    other = api.post(refund_path(paid), {"amount": "5"})
    assert other.status_code == 422 and "same amount" in other.json()["message"]
    assert ok(api.post(refund_path(paid), {"amount": "4"}), 201)["providerRefundId"] == "re_1"
    assert len(made) == 1 and Refund.objects.count() == 1 and full(api, paid)["amountPaid"] == 20
    assert ok(api.post(refund_path(paid), {"amount": "5"}), 201)["providerRefundId"] == "re_2"


def test_a_refund_whose_answer_was_lost_and_that_stripes_event_recorded_is_not_made_again_by_the_retry(
        api, paid, settings, monkeypatch, client):
    """Stripe made the refund of 4, its answer was lost (502), and its charge.refunded event recorded it by its
    Stripe id (listed from Stripe: the event's charge lists no refunds). The retry the 502 advises sends the key of
    the first try (refunds recorded from events are left out of it), so Stripe answers with the same refund, found
    recorded by its id: one refund at Stripe, one in the books. A dashboard refund is recorded by its id too."""
    settings.STRIPE_SECRET_KEY = "sk_test_123"
    made = stripe_refunds_with_the_first_answer_lost(monkeypatch)
    dashboard = []

    def listed(*, charge, **params):
        refunds = [SimpleNamespace(id=refund_id, amount=amount) for amount, refund_id in made.values()] + dashboard
        return SimpleNamespace(auto_paging_iter=lambda: iter(refunds))
    monkeypatch.setattr(stripe.Refund, "list", listed)

    assert api.post(refund_path(paid), {"amount": "4"}).status_code == 502
    assert post_webhook(client, charge_refunded("pi_paid_1", 400)).json()["detail"] == \
        "refund of 4.00 made at Stripe recorded"
    retried = ok(api.post(refund_path(paid), {"amount": "4", "reason": "late delivery"}), 201)
    assert (retried["providerRefundId"], retried["reason"], len(made)) == ("re_1", "late delivery", 1)
    assert Refund.objects.count() == 1 and full(api, paid)["amountPaid"] == 20
    assert ok(api.post(refund_path(paid), {"amount": "5"}), 201)["providerRefundId"] == "re_2"  # a new one, made
    dashboard.append(SimpleNamespace(id="re_dash", amount=300))
    assert post_webhook(client, charge_refunded("pi_paid_1", 1200)).json()["detail"] == \
        "refund of 3.00 made at Stripe recorded"
    assert Refund.objects.count() == 3 and full(api, paid)["amountPaid"] == 12
    assert post_webhook(client, charge_refunded("pi_paid_1", 1200)).json()["detail"] == "refund already recorded"


def test_a_charge_event_stripe_cannot_list_the_refunds_of_is_a_503_stripe_sends_again(api, paid, settings,
                                                                                    monkeypatch, client):
    settings.STRIPE_SECRET_KEY = "sk_test_123"

    def listed(**params):
        raise stripe.APIConnectionError("Network error")
    monkeypatch.setattr(stripe.Refund, "list", listed)
    resp = post_webhook(client, charge_refunded("pi_paid_1", 400))
    assert resp.status_code == 503 and Refund.objects.count() == 0


def test_a_payment_of_another_invoice_or_organization_is_404(api, paid, other_api, book):
    other = billing_chain(api, book, [recurring("5")])
    other_invoice = draft(api, other)
    error(api.post(f"/v1/invoices/{other_invoice['id']}/payments/{paid.payment['id']}/refund", {}), 404)
    error(other_api.post(refund_path(paid), {}), 404)
    assert Refund.objects.count() == 0


def test_refunds_need_an_owner_admin_or_finance_key(client_for, paid):
    error(client_for(role="member").post(refund_path(paid), {}), 403)
    ok(client_for(role="admin").post(refund_path(paid), {"amount": 1}), 201)


# --------------------------------------------------------------------------- the whole lifecycle

def test_the_whole_lifecycle_draft_edit_send_pay_refund(api, book, client, frozen_now):
    """Flat 0.25 (40 units) + 49.00 recurring + 100.00 one-time in January = 159.00; 10% off is 15.90; 8% tax on
    143.10 is 11.448 -> 11.45; total 154.55."""
    chain = billing_chain(api, book, [usage("0.25"), recurring("49"), {"chargeType": "onetime", "rate": "100"}])
    event(chain, 10, "2025-01-10T12:00:00Z")
    event(chain, 30, "2025-01-20T12:00:00Z")
    invoice = draft(api, chain)
    edited = ok(api.patch(f"/v1/invoices/{invoice['id']}", {"discountPercent": 10, "taxRate": 8}))
    assert (edited["subtotal"], edited["discountTotal"], edited["taxTotal"], edited["total"]) == (
        159, 15.9, 11.45, 154.55)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    token_path = re.search(r"http://testserver(/pay/\S+)", sent_mail()[0].text).group(1)
    assert "$154.55" in client.get(token_path).content.decode()
    assert pay(client, edited, 15455).status_code == 200
    paid = ok(api.get(f"/v1/invoices/{invoice['id']}"))
    assert paid["status"] == "paid"
    ok(api.post(f"/v1/invoices/{invoice['id']}/payments/{paid['payments'][0]['id']}/refund", {}), 201)
    assert ok(api.get(f"/v1/invoices/{invoice['id']}"))["status"] == "refunded"
