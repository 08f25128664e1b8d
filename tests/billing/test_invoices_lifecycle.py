"""The invoice lifecycle over HTTP: drafts edited, send (email read back from the file backend), due date and
overdue through run_scheduled_jobs, end-of-period finalization, void, list, PDF (spec sections 2-4 and 6;
contract: Due date and overdue, Hosted pages)."""
from datetime import datetime, timezone

import pytest
from django.core.mail.backends.base import BaseEmailBackend
from django.core.management import call_command
from django.db.models import F

from billing.models import Invoice
from tests.billing.invoice_support import (FEB, JAN, billing_chain, draft, event, generate, pay, raw_messages,
                                           recurring, usage)
from tests.billing.support import error, ok
from tests.factories import CustomerFactory
from tests.mail import mail_to, sent_mail

pytestmark = pytest.mark.django_db


class RefusingBackend(BaseEmailBackend):
    def send_messages(self, messages):
        raise ConnectionRefusedError("smtp down")


def run_jobs(now: str):
    call_command("run_scheduled_jobs", "--now", now, stdout=open("/dev/null", "w"))


def send(api, invoice, **body):
    return ok(api.post(f"/v1/invoices/{invoice['id']}/send", body))


def get(api, invoice) -> dict:
    return ok(api.get(f"/v1/invoices/{invoice['id']}"))


@pytest.fixture
def customer(book):
    return CustomerFactory(book=book, name="Client Co", email="ap@client.example.com",
                           invoice_email_recipients=["cfo@client.example.com", "AP@client.example.com"])


@pytest.fixture
def january(api, book, customer, frozen_now):
    """A January draft (sent on June 10, 2025 by the frozen clock): 20.00 recurring plus 4 units at 1.00."""
    chain = billing_chain(api, book, [recurring("20"), usage("1")], customer=customer, invoiceMemo="PO 77")
    event(chain, 4, "2025-01-10T12:00:00Z")
    return chain, draft(api, chain)


# --------------------------------------------------------------------------- send

def test_send_finalizes_the_draft_and_answers_the_spec_shape(api, january, settings):
    _, invoice = january
    body = send(api, invoice)
    assert body["success"] is True and body["recipientEmail"] == "ap@client.example.com"
    assert body["emailId"].startswith("<") and invoice["invoiceNumber"] in body["message"]
    after = get(api, invoice)
    assert (after["status"], after["issuedAt"], after["dueDate"]) == ("issued", "2025-06-10T12:00:00Z", "2025-07-10")
    assert after["lastSentAt"] == "2025-06-10T12:00:00Z"


def test_the_invoice_email_has_subject_recipients_callout_pay_link_and_pdf(api, january, org, settings):
    settings.PUBLIC_BASE_URL = "https://billing.example.com"
    _, invoice = january
    send(api, invoice, message="Thanks for a great quarter!")
    [mail] = sent_mail()
    assert mail.subject == f"Invoice {invoice['invoiceNumber']} from Acme Agents"
    assert mail.to == ["ap@client.example.com"]
    [raw] = raw_messages()
    assert raw["Cc"] == "cfo@client.example.com"  # the extra recipients; the To address is not repeated
    assert mail.text.startswith("Hello Client Co,")  # a greeting, then the callout before the details
    assert mail.text.index("Thanks for a great quarter!") < mail.text.index("Billing period")
    assert "https://billing.example.com/pay/" in mail.text and "PO 77" in mail.text and "Total: $24.00" in mail.text
    assert 'href="https://billing.example.com/pay/' in mail.html and "Thanks for a great quarter!" in mail.html
    assert mail.html.index("Thanks for a great quarter!") < mail.html.index("Billing period")
    [attachment] = list(raw.iter_attachments())
    assert attachment.get_filename() == f"invoice-{invoice['invoiceNumber']}.pdf"
    assert attachment.get_content_type() == "application/pdf"
    assert attachment.get_content().startswith(b"%PDF")


def test_the_business_name_of_the_organization_is_used_in_the_subject(api, january, org):
    org.business_name = "Acme Legal AI Ltd"
    org.save()
    _, invoice = january
    send(api, invoice)
    assert sent_mail()[0].subject == f"Invoice {invoice['invoiceNumber']} from Acme Legal AI Ltd"


def test_recipient_and_subject_can_be_chosen(api, january):
    _, invoice = january
    body = send(api, invoice, recipientEmail="boss@client.example.com", subject="Your June invoice")
    assert body["recipientEmail"] == "boss@client.example.com"
    [mail] = mail_to("boss@client.example.com")
    assert mail.subject == "Your June invoice"


def test_a_bad_recipient_email_is_400(api, january):
    _, invoice = january
    assert "recipientEmail" in error(api.post(f"/v1/invoices/{invoice['id']}/send", {"recipientEmail": "nope"}), 400)
    assert get(api, invoice)["status"] == "draft"


def test_a_customer_without_email_needs_a_recipient(api, book):
    chain = billing_chain(api, book, [recurring("5")], customer=CustomerFactory(book=book, email=""))
    invoice = draft(api, chain)
    assert "recipientEmail" in error(api.post(f"/v1/invoices/{invoice['id']}/send", {}), 400)


def test_sending_again_resends_without_a_status_change_and_the_same_pay_link(api, january, client):
    _, invoice = january
    send(api, invoice)
    first_link = sent_mail()[0].text.split("Pay now: ")[1].split()[0]
    send(api, invoice)
    assert [mail.subject for mail in sent_mail()] == [f"Invoice {invoice['invoiceNumber']} from Acme Agents"] * 2
    assert get(api, invoice)["status"] == "issued" and get(api, invoice)["issuedAt"] == "2025-06-10T12:00:00Z"
    second_link = sent_mail()[1].text.split("Pay now: ")[1].split()[0]
    assert second_link == first_link  # a customer holding the first email can still pay
    assert client.get(first_link.split("127.0.0.1:8000")[-1]).status_code == 200


def test_an_email_that_fails_leaves_the_invoice_pending_until_sent_again(api, january, settings):
    # The draft was finalized (pending, its due date) before the email was tried: that committed, so the answer
    # is a 200 saying the email was not sent (contract: a request whose writes committed never answers 5xx).
    _, invoice = january
    settings.EMAIL_BACKEND = "tests.billing.test_invoices_lifecycle.RefusingBackend"
    resp = api.post(f"/v1/invoices/{invoice['id']}/send", {})
    assert resp.status_code == 200, resp.content
    assert resp.json() == {
        "success": False, "emailId": "", "recipientEmail": "ap@client.example.com",
        "message": f"The email for invoice {invoice['invoiceNumber']} could not be sent; the invoice stays pending. "
                   "Send it again.", "invoiceNumber": invoice["invoiceNumber"], "status": "pending"}
    after = get(api, invoice)
    assert (after["status"], after["dueDate"]) == ("pending", "2025-07-10")
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    assert send(api, invoice)["status"] == "issued"


def test_a_mail_server_that_stops_answering_is_a_200_saying_the_email_was_not_sent(api, january, settings):
    # Django's SMTP backend waits without end unless EMAIL_TIMEOUT is set: a server that took the connection and
    # never greeted held the request (the draft already finalized and committed) until gunicorn killed the worker.
    import socket
    import time

    listener = socket.create_server(("127.0.0.1", 0))
    try:
        settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
        settings.EMAIL_HOST, settings.EMAIL_PORT = listener.getsockname()
        assert settings.EMAIL_TIMEOUT  # set (10 unless EMAIL_TIMEOUT_SECONDS says): Django waits without end otherwise
        settings.EMAIL_TIMEOUT = 1
        _, invoice = january
        started = time.monotonic()
        resp = api.post(f"/v1/invoices/{invoice['id']}/send", {})  # the listener accepts, and says nothing
        assert time.monotonic() - started < 10
    finally:
        listener.close()
    assert resp.status_code == 200, resp.content
    assert (resp.json()["success"], resp.json()["status"]) == (False, "pending")
    assert get(api, invoice)["status"] == "pending"


def test_a_subject_with_a_line_break_is_a_400_and_the_draft_stays_a_draft(api, january):
    _, invoice = january
    resp = api.post(f"/v1/invoices/{invoice['id']}/send", {"subject": "Invoice\nBcc: someone@else.example"})
    assert resp.status_code == 400, resp.content
    assert resp.json()["message"] == ["subject: Must be one line (no line breaks)."]
    assert get(api, invoice)["status"] == "draft"
    assert not sent_mail()


@pytest.mark.parametrize("final_status", ["paid", "void"])
def test_a_paid_or_void_invoice_cannot_be_sent(api, january, client, final_status, settings):
    settings.STRIPE_WEBHOOK_SECRET = "whsec_test_invoices"
    _, invoice = january
    send(api, invoice)
    if final_status == "paid":
        assert pay(client, get(api, invoice)).status_code == 200
    else:
        ok(api.post(f"/v1/invoices/{invoice['id']}/void", {}))
    error(api.post(f"/v1/invoices/{invoice['id']}/send", {}), 400)
    assert get(api, invoice)["status"] == final_status
    assert len(sent_mail()) == 1


# --------------------------------------------------------------------------- drafts are editable, the rest is not

def test_a_draft_takes_discount_tax_and_memo_by_patch(api, january):
    _, invoice = january
    body = ok(api.patch(f"/v1/invoices/{invoice['id']}", {"discountPercent": 50, "taxRate": 10,
                                                         "invoiceMemo": "Thanks"}))
    assert (body["subtotal"], body["discountTotal"], body["taxTotal"], body["total"]) == (24, 12, 1.2, 13.2)
    assert body["invoiceMemo"] == "Thanks"


def test_a_finalized_invoice_is_immutable(api, january):
    _, invoice = january
    send(api, invoice)
    resp = api.patch(f"/v1/invoices/{invoice['id']}", {"taxRate": 10})
    assert resp.status_code == 409 and resp.json()["code"] == "invoice_immutable"
    assert "To bill the period differently, void it first, then generate it again" in resp.json()["message"]
    assert get(api, invoice)["taxTotal"] == 0
    Invoice.objects.filter(pk=invoice["id"]).update(status="paid", amount_paid=F("total"))
    paid = api.patch(f"/v1/invoices/{invoice['id']}", {"taxRate": 10}).json()["message"]
    assert "A paid invoice is never voided: it stays as it is" in paid


# --------------------------------------------------------------------------- due date, overdue, finalization jobs

def test_an_unpaid_invoice_becomes_overdue_after_its_due_date(api, january):
    chain, invoice = january
    send(api, invoice)  # due 2025-07-10
    run_jobs("2025-07-10T23:59:59Z")
    assert get(api, invoice)["status"] == "issued"
    run_jobs("2025-07-11T00:00:00Z")
    assert get(api, invoice)["status"] == "overdue"
    run_jobs("2025-07-12T00:00:00Z")
    listed = ok(api.get("/v1/invoices", {"status": "overdue", "customerExternalId": chain.customer.external_id}))
    assert [row["id"] for row in listed["data"]] == [invoice["id"]]


def test_net_terms_and_the_time_zone_of_the_subscription_set_the_due_date(api, book, frozen_now):
    chain = billing_chain(api, book, [recurring("10")], netTerms=15, timezone="America/New_York")
    invoice = draft(api, chain)
    frozen_now(datetime(2025, 6, 11, 2, tzinfo=timezone.utc))  # still June 10 in New York
    send(api, invoice)
    assert get(api, invoice)["dueDate"] == "2025-06-25"
    run_jobs("2025-06-26T03:59:59Z")  # 23:59:59 on June 25 in New York
    assert get(api, invoice)["status"] == "issued"
    run_jobs("2025-06-26T04:00:00Z")
    assert get(api, invoice)["status"] == "overdue"


def test_a_partly_paid_invoice_still_becomes_overdue(api, january, client, settings):
    settings.STRIPE_WEBHOOK_SECRET = "whsec_test_invoices"
    _, invoice = january
    send(api, invoice)
    pay(client, invoice, 1000)
    run_jobs("2025-07-11T00:00:00Z")
    after = get(api, invoice)
    assert (after["status"], after["amountPaid"], after["amountDue"]) == ("overdue", 10, 14)



def test_an_invoice_sent_again_leads_with_what_is_still_due_and_says_when_it_is_overdue(api, january, client,
                                                                                        settings):
    """A customer reading "$24.00" in an email sent after a $10.00 payment could pay the whole total again."""
    settings.STRIPE_WEBHOOK_SECRET = "whsec_test_invoices"
    _, invoice = january
    number = invoice["invoiceNumber"]
    send(api, invoice)
    assert f"Here is invoice {number} from Acme Agents: $24.00.\n" in sent_mail()[-1].text
    pay(client, invoice, 1000)
    send(api, invoice)
    mail = sent_mail()[-1]
    assert mail.subject == f"Invoice {number} from Acme Agents"
    assert f"Here is invoice {number} from Acme Agents: $24.00, of which $14.00 is still due.\n" in mail.text
    assert "$24.00, of which $14.00 is still due for 2025-01-01 to 2025-01-31, due 2025-07-10." in mail.html
    run_jobs("2025-07-11T00:00:00Z")
    send(api, invoice)
    mail = sent_mail()[-1]
    assert mail.subject == f"Overdue: Invoice {number} from Acme Agents"
    assert (f"A reminder: invoice {number} from Acme Agents is overdue: $24.00, of which $14.00 is still due.\n"
            in mail.text)
    assert "is overdue (due 2025-07-10): $24.00, of which $14.00 is still due." in mail.html


def test_drafts_of_ended_periods_are_finalized_by_the_scheduled_job(api, book):
    chain = billing_chain(api, book, [usage("1")])
    event(chain, 2, "2025-01-10T12:00:00Z")
    january, february = draft(api, chain, JAN), draft(api, chain, FEB)
    event(chain, 3, "2025-01-20T12:00:00Z")  # recorded late, still January's
    run_jobs("2025-02-01T00:00:00Z")
    finalized, pending = get(api, january), get(api, february)
    assert (finalized["status"], finalized["total"], finalized["issuedAt"]) == ("issued", 5, "2025-02-01T00:00:00Z")
    assert finalized["dueDate"] == "2025-03-03"  # February 1 + 30 days
    assert pending["status"] == "draft"
    run_jobs("2025-02-01T00:05:00Z")
    assert get(api, january)["issuedAt"] == "2025-02-01T00:00:00Z"  # a second run changes nothing
    assert sent_mail() == []  # finalizing does not email


# --------------------------------------------------------------------------- void

def test_a_draft_or_an_unpaid_invoice_can_be_voided_and_keeps_its_number(api, january, client):
    chain, invoice = january
    send(api, invoice)
    body = ok(api.post(f"/v1/invoices/{invoice['id']}/void", {"reason": "wrong period"}))
    assert (body["status"], body["voidReason"], body["invoiceNumber"]) == ("void", "wrong period",
                                                                          invoice["invoiceNumber"])
    assert body["voidedAt"] == "2025-06-10T12:00:00Z"
    assert ok(api.post(f"/v1/invoices/{invoice['id']}/void", {}))["status"] == "void"  # again: unchanged
    again = draft(api, chain)
    assert again["id"] != invoice["id"] and again["invoiceNumber"] == "INV-000002"


def test_a_void_invoice_is_not_overdue_and_its_pay_link_says_voided(api, january, client):
    _, invoice = january
    send(api, invoice)
    token_path = "/pay/" + sent_mail()[0].text.split("/pay/")[1].split()[0]
    ok(api.post(f"/v1/invoices/{invoice['id']}/void", {}))
    run_jobs("2025-08-01T00:00:00Z")
    assert get(api, invoice)["status"] == "void"
    resp = client.get(token_path)  # the link still finds the invoice, to say it was voided (docs: 410)
    assert resp.status_code == 410 and "voided" in resp.content.decode()


def test_a_paid_invoice_cannot_be_voided(api, january, client, settings):
    settings.STRIPE_WEBHOOK_SECRET = "whsec_test_invoices"
    _, invoice = january
    send(api, invoice)
    pay(client, get(api, invoice))
    assert "refund" in error(api.post(f"/v1/invoices/{invoice['id']}/void", {}), 400)


def test_a_partly_paid_invoice_cannot_be_voided_before_a_refund(api, january, client, settings):
    settings.STRIPE_WEBHOOK_SECRET = "whsec_test_invoices"
    _, invoice = january
    send(api, invoice)
    pay(client, invoice, 500)
    assert "refund" in error(api.post(f"/v1/invoices/{invoice['id']}/void", {}), 400)


def test_voiding_needs_an_owner_admin_or_finance_key(client_for, january):
    _, invoice = january
    member = client_for(role="member")
    assert "owner, admin or finance" in error(member.post(f"/v1/invoices/{invoice['id']}/void", {}), 403)
    assert ok(client_for(role="finance").post(f"/v1/invoices/{invoice['id']}/void", {}))["status"] == "void"


# --------------------------------------------------------------------------- reads

@pytest.fixture
def listed(api, book, customer):
    """Three invoices of one customer: January issued, February draft, March void; another customer's draft."""
    chain = billing_chain(api, book, [recurring("20")], customer=customer)
    january, february = draft(api, chain, JAN), draft(api, chain, FEB)
    march = draft(api, chain, ("2025-03-01", "2025-04-01"))
    send(api, january)
    ok(api.post(f"/v1/invoices/{march['id']}/void", {}))
    draft(api, billing_chain(api, book, [recurring("5")]))
    return chain, january, february, march


def test_list_rows_carry_the_spec_fields(api, listed, customer):
    _, january, _, _ = listed
    body = ok(api.get("/v1/invoices", {"customerExternalId": customer.external_id}))
    assert body["hasMore"] is False and len(body["data"]) == 3
    row = next(row for row in body["data"] if row["id"] == january["id"])
    assert {"id", "invoiceNumber", "customerExternalId", "status", "total", "currency", "periodStart", "periodEnd",
            "dueDate", "createdAt"} <= set(row)
    assert (row["customerExternalId"], row["status"], row["total"], row["currency"]) == (
        customer.external_id, "issued", 20, "usd")
    assert (row["periodStart"], row["periodEnd"]) == ("2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z")


def test_list_filters_by_status_and_period_window(api, listed, customer):
    _, january, february, march = listed
    params = {"customerExternalId": customer.external_id}

    def ids(**extra):
        return {row["id"] for row in ok(api.get("/v1/invoices", {**params, **extra}))["data"]}
    assert ids(status="draft") == {february["id"]}
    assert ids(status="void") == {march["id"]}
    assert ids(startDate="2025-02-01", endDate="2025-02-28") == {february["id"]}
    assert ids(startDate="2025-01-31T12:00:00Z") == {january["id"], february["id"], march["id"]}
    assert ids(endDate="2025-01-31") == {january["id"]}


def test_list_filters_by_customer_and_subscription_id(api, listed, customer):
    chain, january, february, march = listed

    def ids(**params):
        return {row["id"] for row in ok(api.get("/v1/invoices", params))["data"]}
    assert ids(customerId=str(customer.id)) == {january["id"], february["id"], march["id"]}
    assert ids(subscriptionId=chain.subscription["id"]) == {january["id"], february["id"], march["id"]}
    assert len(ids()) == 4  # the other customer's draft too
    assert ids(subscriptionId="00000000-0000-4000-8000-000000000000") == set()


@pytest.mark.parametrize("params, field", [({"status": "late"}, "status"), ({"startDate": "soon"}, "startDate"),
                                           ({"customerId": "acme"}, "customerId"),
                                           ({"subscriptionId": "12"}, "subscriptionId"),
                                           ({"endDate": "2025-13-01"}, "endDate"), ({"limit": 0}, "limit"),
                                           ({"offset": -1}, "offset")])
def test_bad_list_parameters_are_400(api, params, field):
    assert field in error(api.get("/v1/invoices", params), 400)


def test_limit_and_offset_page_the_list_with_has_more(api, listed, customer):
    params = {"customerExternalId": customer.external_id, "limit": 2}
    first = ok(api.get("/v1/invoices", params))
    second = ok(api.get("/v1/invoices", {**params, "offset": 2}))
    assert (len(first["data"]), first["hasMore"], len(second["data"]), second["hasMore"]) == (2, True, 1, False)
    assert len({row["id"] for row in first["data"] + second["data"]}) == 3


def test_the_full_invoice_has_lines_totals_and_payments(api, january):
    _, invoice = january
    body = get(api, invoice)
    assert [line["description"] for line in body["lines"]] == ["strategy 0 (monthly fee)",
                                                                f"strategy 1: 4 {january[0].signal.short_name}"]
    assert (body["subtotal"], body["total"], body["amountDue"], body["payments"]) == (24, 24, 24, [])


def test_line_descriptions_group_a_quantity_as_people_read_it_and_the_quantity_stays_exact(api, book, frozen_now):
    chain = billing_chain(api, book, [usage("0.01")])
    event(chain, "3156.5", "2025-01-10T12:00:00Z")
    event(chain, "0.5", "2025-01-11T12:00:00Z")
    (line,) = draft(api, chain)["lines"]
    assert line["description"] == f"strategy 0: 3,157 {chain.signal.short_name}"
    assert (line["quantity"], line["amount"]) == (3157, 31.57)


def test_a_usage_line_names_its_signal_once_when_the_strategy_is_named_after_it(api, book, frozen_now):
    chain = billing_chain(api, book, [usage("2")])
    chain.signal.name = "Strategy 0"  # the strategy's name, other case
    chain.signal.save()
    event(chain, 246, "2025-01-10T12:00:00Z")
    (line,) = draft(api, chain)["lines"]
    assert line["description"] == "strategy 0: 246"


def test_the_pdf_is_a_pdf_document(api, january):
    _, invoice = january
    resp = api.get(f"/v1/invoices/{invoice['id']}/pdf")
    assert resp.status_code == 200 and resp["Content-Type"] == "application/pdf"
    assert resp.content.startswith(b"%PDF") and invoice["invoiceNumber"] in resp["Content-Disposition"]


def test_text_outside_latin_1_does_not_break_the_pdf(api, book):
    customer = CustomerFactory(book=book, name="Müller 株式会社", email="m@example.com")
    chain = billing_chain(api, book, [recurring("5")], customer=customer, invoiceMemo="Danke — ありがとう")
    invoice = draft(api, chain)
    assert api.get(f"/v1/invoices/{invoice['id']}/pdf").content.startswith(b"%PDF")


@pytest.mark.parametrize("method, suffix", [("get", ""), ("get", "/pdf"), ("post", "/send"), ("post", "/void"),
                                            ("patch", "")])
def test_invoices_of_another_organization_read_as_404(api, other_api, other_book, method, suffix):
    foreign = draft(other_api, billing_chain(other_api, other_book, [recurring("5")]))
    error(getattr(api, method)(f"/v1/invoices/{foreign['id']}{suffix}"), 404)
    error(getattr(api, method)(f"/v1/invoices/not-a-uuid{suffix}"), 404)
    assert Invoice.objects.get(pk=foreign["id"]).status == "draft"


def test_the_console_lists_and_shows_invoices_and_voids_through_the_service(admin_client, api, january):
    _, invoice = january
    assert admin_client.get("/admin/billing/invoice/").status_code == 200
    page = admin_client.get(f"/admin/billing/invoice/{invoice['id']}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert all(line["description"] in html for line in invoice["lines"])
    assert '{"' not in html and "{&quot;" not in html  # the terms as priced are words under a line, never JSON
    confirm = admin_client.post("/admin/billing/invoice/", {"action": "void_invoices", "index": "0",
                                                            "_selected_action": [invoice["id"]]})
    assert confirm.status_code == 200 and Invoice.objects.get(pk=invoice["id"]).status == "draft"  # asks first
    admin_client.post("/admin/billing/invoice/", {"action": "void_invoices", "_selected_action": [invoice["id"]],
                                                  "apply": "1", "reason": "issued by mistake"})
    assert Invoice.objects.get(pk=invoice["id"]).status == "void"
    assert admin_client.get("/admin/billing/payment/").status_code == 200
    assert admin_client.get("/admin/billing/refund/").status_code == 200


def test_generate_with_usage_recorded_through_the_api(api, book, frozen_now):
    """The ledger the invoice reads is the one /v1/usage/record writes."""
    from tests.factories import ServiceEntryFactory
    ServiceEntryFactory(canonical_name="inv-llm", provider="invai", input_cost="0.000001", output_cost="0.000002")
    chain = billing_chain(api, book, [usage("0.5")])
    records = [{"customerExternalId": chain.customer.external_id, "agentCode": chain.agent.agent_code,
                "signalName": chain.signal.short_name, "model": "inv-llm", "modelProvider": "invai",
                "inputTokens": 10, "outputTokens": 10, "quantity": quantity, "usageDate": at}
               for quantity, at in ((3, "2025-01-05T00:00:00Z"), (5, "2025-02-05T00:00:00Z"))]
    ok(api.post("/v1/usage/record", {"records": records}))
    assert draft(api, chain)["total"] == 1.5
    assert generate(api, chain, FEB).json()["total"] == 2.5


def test_rotating_the_secret_key_retires_the_pay_link_and_the_next_send_mints_a_new_one(api, january, client,
                                                                                       settings):
    # The link kept opening (and taking payment) under the new key: only the token's digest was compared.
    _, invoice = january
    send(api, invoice)
    old_path = sent_mail()[0].text.split("Pay now: ")[1].split()[0].split("127.0.0.1:8000")[-1]
    assert client.get(old_path).status_code == 200
    settings.SECRET_KEY = "a-rotated-secret-key-" + "x" * 40
    assert client.get(old_path).status_code == 404
    send(api, invoice)
    new_path = sent_mail()[1].text.split("Pay now: ")[1].split()[0].split("127.0.0.1:8000")[-1]
    assert new_path != old_path and client.get(new_path).status_code == 200
    assert client.get(old_path).status_code == 404


def test_voiding_retires_the_pay_link(api, january, client):
    # Retired, not forgotten: the link opens the voided page (410, docs), with nothing to pay.
    _, invoice = january
    send(api, invoice)
    link = sent_mail()[0].text.split("Pay now: ")[1].split()[0]
    ok(api.post(f"/v1/invoices/{invoice['id']}/void", {}))
    resp = client.get(link.split("127.0.0.1:8000")[-1])
    assert resp.status_code == 410 and "nothing to pay" in resp.content.decode()
