"""The pay-now page when Stripe does not take the payment: an amount outside its charge limits never reaches
Stripe, a session Stripe refuses reads the same (422, how to pay otherwise), and only an outage is a 502
(docs/decisions/invoices.md "Pay-now page"). Stripe is faked at its boundary, as in test_invoices_payments."""
import logging
import re
from decimal import Decimal
from types import SimpleNamespace

import pytest
import stripe

from billing import stripe_gateway
from tests.billing.invoice_support import WEBHOOK_SECRET, billing_chain, draft, event, pay, recurring, usage
from tests.billing.support import ok
from tests.mail import sent_mail

pytestmark = pytest.mark.django_db

INSTRUCTIONS = "Bank transfer: IBAN GB00 ACME 0000 0000 0000 00, reference the invoice number."


@pytest.fixture(autouse=True)
def stripe_settings(settings, book):
    settings.STRIPE_SECRET_KEY, settings.STRIPE_WEBHOOK_SECRET = "sk_test_123", WEBHOOK_SECRET
    settings.PAYMENTS_LOCAL_CHECKOUT = False
    settings.PUBLIC_BASE_URL = "http://testserver"
    book.organization.payment_instructions = INSTRUCTIONS
    book.organization.save()


class Calls(list):
    answer = None


@pytest.fixture
def stripe_calls(monkeypatch):
    """Every Checkout session asked of Stripe; `stripe_calls.answer` is what Stripe does with the next one."""
    calls = Calls()
    calls.answer = lambda: SimpleNamespace(url="https://checkout.stripe.com/c/pay/cs_test_1")

    def create(**params):
        calls.append(params)
        return calls.answer()
    monkeypatch.setattr(stripe.checkout.Session, "create", create)
    return calls


@pytest.fixture
def issue(api, book):
    """issue(strategies, units) -> the sent invoice of a January chain, with its pay-now path."""
    def make(strategies, units=None) -> SimpleNamespace:
        chain = billing_chain(api, book, strategies)
        if units is not None:
            event(chain, units, "2025-01-10T12:00:00Z")
        invoice = draft(api, chain)
        ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
        pay_path = re.search(r"http://testserver(/pay/\S+)", sent_mail()[-1].text).group(1)
        return SimpleNamespace(id=invoice["id"], pay_path=pay_path,
                               invoice=ok(api.get(f"/v1/invoices/{invoice['id']}")))
    return make


def assert_cannot_be_paid_online(resp, amount_due: str):
    html = resp.content.decode()
    assert resp.status_code == 422, html[:300]
    assert "This invoice cannot be paid online" in html and amount_due in html
    assert INSTRUCTIONS.split(",")[0] in html  # how to pay otherwise
    assert "try again" not in html


def test_an_invoice_of_thirty_cents_cannot_be_paid_online_and_stripe_is_not_asked(issue, client, stripe_calls,
                                                                                   caplog):
    small = issue([usage("0.10")], units=3)
    assert small.invoice["amountDue"] == 0.3
    with caplog.at_level(logging.INFO, logger="billing.payments"):
        assert_cannot_be_paid_online(client.get(small.pay_path), "$0.30")
    assert stripe_calls == []
    [logged] = [record for record in caplog.records if record.name == "billing.payments"]
    assert small.id in logged.getMessage()


def test_thirty_cents_left_by_a_part_payment_cannot_be_paid_online_and_stripe_is_not_asked(issue, client,
                                                                                          stripe_calls):
    invoice = issue([recurring("24")])
    assert pay(client, invoice.invoice, 2370).json()["handled"] is True  # 23.70 of 24.00 paid
    assert_cannot_be_paid_online(client.get(invoice.pay_path), "$0.30")
    assert stripe_calls == []


def test_an_amount_above_stripes_maximum_cannot_be_paid_online_and_stripe_is_not_asked(issue, client, stripe_calls):
    large = issue([recurring("1000000")])
    assert_cannot_be_paid_online(client.get(large.pay_path), "$1,000,000.00")
    assert stripe_calls == []


@pytest.mark.parametrize("live_key", ["sk_live_123", "rk_live_123"])
def test_a_live_stripe_key_takes_no_payment_for_an_invoice_of_the_test_book_and_stripe_is_not_asked(
        issue, client, stripe_calls, settings, book, live_key):
    # The customer paid real money at a live Checkout, and the webhook, whose livemode did not match the invoice's
    # book, recorded nothing: the invoice stayed unpaid with its pay button, to be paid again.
    assert book.livemode is False
    invoice = issue([usage("0.10")], units=50)
    settings.STRIPE_SECRET_KEY = live_key
    assert_cannot_be_paid_online(client.get(invoice.pay_path), "$5.00")
    assert stripe_calls == []
    assert not stripe_gateway.pays_online(Decimal("5.00"), "usd", livemode=False)
    assert stripe_gateway.pays_online(Decimal("5.00"), "usd", livemode=True)
    settings.STRIPE_SECRET_KEY = "sk_test_123"
    assert client.get(invoice.pay_path).status_code == 302 and len(stripe_calls) == 1


def test_fifty_cents_still_goes_to_stripe(issue, client, stripe_calls):
    invoice = issue([usage("0.10")], units=5)
    resp = client.get(invoice.pay_path)
    assert resp.status_code == 302 and resp["Location"] == "https://checkout.stripe.com/c/pay/cs_test_1"
    [params] = stripe_calls
    assert params["line_items"][0]["price_data"]["unit_amount"] == 50


@pytest.mark.parametrize("refusal", [
    stripe.InvalidRequestError("The Checkout Session's total amount due must add up to at least $0.50 usd",
                               param="line_items[0][price_data][unit_amount]", code="amount_too_small",
                               http_status=400),
    stripe.CardError("Your card was declined.", param="", code="card_declined", http_status=402),
])
def test_a_session_stripe_refuses_gets_the_cannot_be_paid_online_page_and_is_logged_once(
        issue, client, stripe_calls, caplog, refusal):
    invoice = issue([recurring("24")])

    def refuse():
        raise refusal
    stripe_calls.answer = refuse
    with caplog.at_level(logging.INFO, logger="billing.payments"):
        resp = client.get(invoice.pay_path)
    assert_cannot_be_paid_online(resp, "$24.00")
    assert len(stripe_calls) == 1
    [logged] = [record for record in caplog.records if record.name == "billing.payments"]
    assert invoice.id in logged.getMessage() and refusal.code in logged.getMessage()


@pytest.mark.parametrize("outage", [
    stripe.APIConnectionError("Could not connect to Stripe"),
    stripe.RateLimitError("Too many requests", http_status=429),
    stripe.APIError("Internal error", http_status=500),
    stripe.AuthenticationError("Invalid API Key provided", http_status=401),  # our key: not the invoice's fault
])
def test_when_stripe_is_down_the_page_still_says_try_again(issue, client, stripe_calls, outage):
    invoice = issue([recurring("24")])

    def fail():
        raise outage
    stripe_calls.answer = fail
    resp = client.get(invoice.pay_path)
    assert resp.status_code == 502 and "try again" in resp.content.decode()
    assert "cannot be paid online" not in resp.content.decode()


@pytest.mark.parametrize(("cents", "currency", "accepted"), [
    (49, "usd", False), (50, "usd", True), (99_999_999, "usd", True), (100_000_000, "usd", False),
    (50, "USD", True), (1, "eur", True),  # limits known for USD only: Stripe decides the rest
])
def test_checkout_limits_are_stripes_usd_minimum_and_maximum_charge(cents, currency, accepted):
    assert stripe_gateway.checkout_accepts(amount_cents=cents, currency=currency) is accepted


def test_without_a_stripe_key_a_small_amount_still_reads_as_not_configured(issue, client, settings):
    settings.STRIPE_SECRET_KEY = ""
    small = issue([usage("0.10")], units=3)
    resp = client.get(small.pay_path)
    html = resp.content.decode()
    assert resp.status_code == 200 and "$0.30" in html and "cannot be paid online" not in html
    assert "Online payment is not configured for this invoice. Please pay" in html and INSTRUCTIONS in html
