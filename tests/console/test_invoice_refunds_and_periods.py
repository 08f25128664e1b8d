"""The console's invoice totals after a refund (what came in, what went back and the net, adding up, on the page and the
PDF), and generating an invoice for a chosen period of a subscription from its page: a voided October billed again,
the API's refusals as the form's errors, and who may."""
import re
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from django.contrib.admin.models import LogEntry

from billing.models import Invoice
from tests.billing.invoice_support import JAN, WEBHOOK_SECRET, billing_chain, draft, event, pdf_text, recurring, usage
from tests.billing.support import ok
from tests.console.conftest import messages_of

pytestmark = pytest.mark.django_db

UTC = timezone.utc
FEB = ("2025-02-01T00:00:00Z", "2025-02-28T23:59:59Z")
OCT = ("2025-10-01T00:00:00Z", "2025-10-31T23:59:59Z")
OCTOBER = "2025-10-01T00:00:00+00:00/2025-11-01T00:00:00+00:00"  # the form's value of [Oct 1, Nov 1)


@pytest.fixture(autouse=True)
def _console_settings(settings):
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_WEBHOOK_SECRET = WEBHOOK_SECRET


def act(client, invoice, what: str, **data):
    """An action of the invoice page, confirmed."""
    return client.post(f"/admin/billing/invoice/{invoice.pk}/act/{what}/", {**data, "confirm": "yes"}, follow=True)


def issued(api, chain, period) -> Invoice:
    invoice = draft(api, chain, period)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {}))
    return Invoice.objects.get(pk=invoice["id"])


def totals_of(page: str) -> list[tuple[str, str]]:
    return re.findall(r'data-total="([^"]+)">([^<]+)<', page)


# --------------------------------------------------------------------------- refunds on the totals

def test_a_refund_is_a_row_of_the_totals_and_the_figures_add_up(console, api, book, frozen_now):
    chain = billing_chain(api, book, [recurring("20"), usage("0.25")])
    event(chain, "842.4", "2025-01-10T12:00:00Z")  # 842.4 x 0.25 = 210.60, plus the 20.00 fee: 230.60
    january = issued(api, chain, JAN)
    assert january.total == Decimal("230.60")
    act(console, january, "payment", **{"payment-amount": "230.60", "payment-reference": "WIRE-1"})
    page = console.get(f"/admin/billing/invoice/{january.pk}/change/").content.decode()
    # Nothing refunded: no refund rows.
    assert totals_of(page)[-2:] == [("Amount paid (net of refunds)", "$230.60"), ("Amount due", "$0.00")]
    assert 'data-total="Refunded"' not in page

    payment = january.payments.get()
    act(console, january, "refund", payment=str(payment.pk), **{"refund-amount": "30.00", "refund-reason": "goodwill"})
    page = console.get(f"/admin/billing/invoice/{january.pk}/change/").content.decode()
    # 230.60 received - 30.00 refunded = 200.60 net; a paid invoice owes nothing after a refund.
    assert totals_of(page) == [("Subtotal", "$230.60"), ("Total", "$230.60"), ("Payments received", "$230.60"),
                               ("Refunded", "$30.00"), ("Amount paid (net of refunds)", "$200.60"),
                               ("Amount due", "$0.00")]
    cells = pdf_text(console.get(f"/admin/billing/invoice/{january.pk}/pdf/").content).splitlines()
    for label, amount in (("Payments received", "$230.60"), ("Refunded", "$30.00"),
                          ("Amount paid (net of refunds)", "$200.60"), ("Amount due", "$0.00")):
        assert cells[cells.index(label) + 1] == amount, (label, cells)

    # Paid in part, two refunds of it: 12.50 received, 2.00 + 0.50 refunded, 10.00 net, 20.00 - 10.00 due.
    february = issued(api, chain, FEB)
    act(console, february, "payment", **{"payment-amount": "12.50", "payment-reference": "WIRE-2"})
    payment = february.payments.get()
    for amount in ("2.00", "0.50"):
        act(console, february, "refund", payment=str(payment.pk), **{"refund-amount": amount, "refund-reason": ""})
    page = console.get(f"/admin/billing/invoice/{february.pk}/change/").content.decode()
    assert totals_of(page)[2:] == [("Payments received", "$12.50"), ("Refunded", "$2.50"),
                                   ("Amount paid (net of refunds)", "$10.00"), ("Amount due", "$10.00")]


# --------------------------------------------------------------------------- an invoice for a chosen period

@pytest.fixture
def november(frozen_now):
    return frozen_now(datetime(2025, 11, 15, 12, 0, tzinfo=UTC))


@pytest.fixture
def chain(api, book, november):
    """A customer on a 20/month plan with 0.25 per unit (billing day 1) since January 2025; it is 2025-11-15."""
    return billing_chain(api, book, [recurring("20"), usage("0.25")], billingDay=1)


def page(chain) -> str:
    return f"/admin/billing/subscription/{chain.subscription['id']}/generate-invoice/"


def test_a_refund_above_what_is_left_is_refused_before_the_page_that_asks_to_confirm_it(console, api, book,
                                                                                          frozen_now):
    chain = billing_chain(api, book, [recurring("20")])
    january = issued(api, chain, JAN)
    act(console, january, "payment", **{"payment-amount": "20.00", "payment-reference": "WIRE-1"})
    payment = january.payments.get()
    act(console, january, "refund", payment=str(payment.pk), **{"refund-amount": "5.00", "refund-reason": ""})
    asked = console.post(f"/admin/billing/invoice/{january.pk}/act/refund/",
                         {"payment": str(payment.pk), "refund-amount": "15.01", "refund-reason": ""}, follow=True)
    page = asked.content.decode()
    assert "Yes, refund" not in page
    assert any("at most $15.00 of payment WIRE-1 is left to refund" in message for message in messages_of(asked))
    assert payment.refunds.count() == 1
    listed = console.get("/admin/billing/refund/").content.decode()
    assert january.invoice_number in listed and chain.customer.name in listed


def test_october_voided_is_generated_again_from_the_subscription_page(console, api, chain):
    event(chain, 40, "2025-10-10T12:00:00Z")
    event(chain, 7, "2025-09-30T23:00:00Z")  # September's and November's: not October's
    event(chain, 9, "2025-11-01T00:00:00Z")
    october = issued(api, chain, OCT)
    assert october.total == Decimal("30.00")  # 20.00 + 40 x 0.25
    event(chain, 4, "2025-10-20T12:00:00Z")  # recorded after October went out: billed once it is generated again
    act(console, october, "void", **{"void-reason": "late usage"})
    october.refresh_from_db()
    assert october.status == "void"

    # The void invoice's page links to the subscription's generate page with its period chosen.
    void_page = console.get(f"/admin/billing/invoice/{october.pk}/change/").content.decode()
    link = f"{page(chain)}?period=2025-10-01T00%3A00%3A00%2B00%3A00%2F2025-11-01T00%3A00%3A00%2B00%3A00"
    assert f'<a class="button" href="{link}">Generate this period again…</a>' in void_page
    assert console.get(link).context["form"]["period"].value() == OCTOBER
    subscription_page = console.get(f"/admin/billing/subscription/{chain.subscription['id']}/change/")
    assert page(chain) in subscription_page.content.decode()
    form = console.get(page(chain))
    assert form.status_code == 200
    choices = dict(form.context["form"].fields["period"].choices)
    # The periods so far, newest first, on the subscription's calendar; October says its invoice was voided.
    assert list(choices)[1:3] == ["2025-11-01T00:00:00+00:00/2025-12-01T00:00:00+00:00", OCTOBER]
    assert choices[OCTOBER] == f"2025-10-01 to 2025-10-31: {october.invoice_number} (void)"
    assert list(choices)[-1] == "2025-01-01T00:00:00+00:00/2025-02-01T00:00:00+00:00"

    resp = console.post(page(chain), {"period": OCTOBER}, follow=True)
    again = Invoice.objects.exclude(pk=october.pk).get()
    assert (again.status, again.period_start, again.period_end) == (
        "draft", datetime(2025, 10, 1, tzinfo=UTC), datetime(2025, 11, 1, tzinfo=UTC))
    # 20.00 fee + (40 + 4) x 0.25 = 11.00 of usage: the late 4 units are billed now.
    assert sorted((line.charge_type, line.quantity, line.amount) for line in again.lines.all()) == [
        ("recurring", Decimal("1"), Decimal("20.00")), ("usage", Decimal("44"), Decimal("11.00"))]
    assert again.total == Decimal("31.00")
    october.refresh_from_db()
    assert (october.status, october.total) == ("void", Decimal("30.00"))
    assert resp.redirect_chain[-1][0] == f"/admin/billing/subscription/{chain.subscription['id']}/change/"
    [message] = messages_of(resp)
    assert message == (f'<a href="/admin/billing/invoice/{again.pk}/change/">{again.invoice_number}</a> '
                       f"(2025-10-01 to 2025-10-31) generated for {chain.subscription['name']}: draft, total $31.00.")
    assert LogEntry.objects.get(object_id=chain.subscription["id"]).change_message == (
        f"{again.invoice_number} (2025-10-01 to 2025-10-31) generated for {chain.subscription['name']}: draft, "
        "total $31.00.")
    # The void invoice names the invoice that replaces it, and its history why it was voided.
    void_page = console.get(f"/admin/billing/invoice/{october.pk}/change/").content.decode()
    assert (f'<th scope="row">Replaced by</th><td><a href="/admin/billing/invoice/{again.pk}/change/">'
            f'{again.invoice_number}</a></td>') in void_page
    assert LogEntry.objects.get(object_id=str(october.pk)).change_message == (
        f"{october.invoice_number} voided: late usage.")

    # The same period by its days finds the draft and re-prices it in place, as the API does.
    event(chain, 8, "2025-10-25T12:00:00Z")
    resp = console.post(page(chain), {"first_day": "2025-10-01", "last_day": "2025-10-31"}, follow=True)
    again.refresh_from_db()
    assert Invoice.objects.count() == 2 and again.total == Decimal("33.00")  # 20.00 + 52 x 0.25
    assert "re-priced for" in messages_of(resp)[0]


@pytest.mark.parametrize("days", [
    ("2025-10-15", "2025-11-14"),  # overlaps October's draft: 409
    ("2024-01-01", "2024-01-31"),  # before the subscription starts: 422
    ("2025-10-31", "2025-10-01"),  # ends before it starts: 422
])
def test_a_refused_period_shows_the_apis_message_as_a_form_error(console, api, chain, days):
    october = draft(api, chain, OCT)
    first, last = days
    resp = console.post(page(chain), {"first_day": first, "last_day": last})
    assert resp.status_code == 200
    # What the API answers for the same window (its end is the day after the last day, a bare date as the form's).
    refusal = api.post("/v1/invoices/generate", {
        "customerId": str(chain.customer.id), "subscriptionId": chain.subscription["id"],
        "billingPeriodStart": first, "billingPeriodEnd": (date.fromisoformat(last) + timedelta(days=1)).isoformat()})
    assert refusal.status_code in (409, 422)
    message = refusal.json()["message"]
    assert resp.context["form"].non_field_errors() == ["; ".join(message) if isinstance(message, list) else message]
    assert str(Invoice.objects.get().pk) == october["id"]  # nothing generated


def test_the_form_asks_for_a_period_or_its_days(console, chain):
    for data, error in (({}, "Choose a period, or give its first and last day."),
                        ({"first_day": "2025-10-01"}, "Give both the first and the last day."),
                        ({"period": OCTOBER, "first_day": "2025-10-01", "last_day": "2025-10-31"},
                         "Choose a period or give its days, not both."),
                        ({"period": "2025-10-02T00:00:00+00:00/2025-11-01T00:00:00+00:00"}, None)):
        resp = console.post(page(chain), data)
        assert resp.status_code == 200
        form = resp.context["form"]
        if error is None:  # not one of the subscription's periods
            assert "period" in form.errors
        else:
            assert form.non_field_errors() == [error]
    assert not Invoice.objects.exists()


def test_any_member_generates_as_on_the_api_and_another_organization_reads_as_missing(console_for, client_for, api,
                                                                                      chain, other_org):
    # The API's generate takes a key of any member role (no write_roles): the console asks the same.
    by_key = client_for(role="member")
    assert by_key.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                  "subscriptionId": chain.subscription["id"],
                                                  "billingPeriodStart": "2025-09-01",
                                                  "billingPeriodEnd": "2025-10-01"}).status_code == 201
    member = console_for(role="member", email="member@acme.example.com")
    resp = member.post(page(chain), {"period": OCTOBER}, follow=True)
    assert "generated for" in messages_of(resp)[0]
    assert Invoice.objects.filter(period_start=datetime(2025, 10, 1, tzinfo=UTC)).count() == 1

    stranger = console_for(other_org)
    for resp in (stranger.get(page(chain), follow=True), stranger.post(page(chain), {"period": OCTOBER}, follow=True)):
        assert resp.redirect_chain[-1][0] == "/admin/"
        assert any("doesn’t exist" in message or "does not exist" in message for message in messages_of(resp))
    assert Invoice.objects.count() == 2
