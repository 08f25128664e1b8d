"""Pay-now from the portal when Stripe does not take the payment: the same 422 page as the pay-now link, with how
to pay otherwise, Stripe not asked for an amount below its minimum charge, and a 502 only when Stripe is down
(docs/decisions/portal.md "Pay-now"). Stripe is faked at its boundary, as in test_portal_pages."""
import pytest
import stripe

from tests.billing.invoice_support import recurring, usage
from tests.portal.conftest import html
from tests.portal.test_portal_pages import issued_invoice, opened

pytestmark = pytest.mark.django_db


@pytest.fixture
def stripe_fails_with(settings, monkeypatch):
    """stripe_fails_with(error) -> the list of Checkout sessions asked of a Stripe that answers each with `error`."""
    settings.STRIPE_SECRET_KEY = "sk_test_123"

    def install(error):
        calls = []

        def create(**params):
            calls.append(params)
            raise error
        monkeypatch.setattr(stripe.checkout.Session, "create", create)
        return calls
    return install


def test_thirty_cents_due_cannot_be_paid_online_from_the_portal_and_stripe_is_not_asked(api, book, customer,
                                                                                       create_session,
                                                                                       stripe_fails_with):
    calls = stripe_fails_with(stripe.APIConnectionError("asked anyway"))
    small = issued_invoice(api, book, customer, [usage("0.10")], units=3)
    resp = opened(create_session(customer)).get(f"/portal/s/invoices/{small.id}/pay")
    assert resp.status_code == 422 and "This invoice cannot be paid online" in html(resp) and "$0.30" in html(resp)
    assert 'href="/portal/s/"' in html(resp)  # back to the portal
    assert calls == []


def test_a_session_stripe_refuses_from_the_portal_gets_the_same_page_not_a_502(api, book, customer, create_session,
                                                                             stripe_fails_with):
    calls = stripe_fails_with(stripe.InvalidRequestError("Invalid currency", param="currency", http_status=400))
    invoice = issued_invoice(api, book, customer, [recurring("24")])
    resp = opened(create_session(customer)).get(f"/portal/s/invoices/{invoice.id}/pay")
    assert resp.status_code == 422 and "This invoice cannot be paid online" in html(resp) and "$24.00" in html(resp)
    assert "try again" not in html(resp) and len(calls) == 1


def test_when_stripe_is_down_pay_now_from_the_portal_still_says_try_again(api, book, customer, create_session,
                                                                          stripe_fails_with):
    calls = stripe_fails_with(stripe.APIError("Internal error", http_status=500))
    invoice = issued_invoice(api, book, customer, [recurring("24")])
    resp = opened(create_session(customer)).get(f"/portal/s/invoices/{invoice.id}/pay")
    assert resp.status_code == 502 and "try again" in html(resp) and len(calls) == 1


def test_the_portal_offers_to_pay_online_only_an_amount_stripe_takes(api, book, customer, create_session,
                                                                    stripe_fails_with):
    stripe_fails_with(stripe.APIConnectionError("not asked by the list"))
    issued_invoice(api, book, customer, [usage("0.10")], units=3)
    issued_invoice(api, book, customer, [recurring("24")])
    page = html(opened(create_session(customer)).get("/portal/s/"))
    assert ">How to pay $0.30<" in page and ">Pay $24.00<" in page
