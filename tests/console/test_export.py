"""The CSV export offered on every console list: the list's columns with a header row, streamed, the selected rows
(or the whole filtered list) of the operator's organizations only, text cells safe to open in a spreadsheet."""
import csv
import io

import pytest
from django.contrib import admin
from django.urls import reverse

from tests.console.conftest import action
from tests.console.world import populate
from tests.factories import CustomerFactory, MatterFactory, MatterRuleFactory, UsageEventFactory

pytestmark = pytest.mark.django_db


def rows_of(resp) -> list[list[str]]:
    assert resp.streaming and resp["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(b"".join(resp.streaming_content).decode())))


def test_every_list_offers_the_export(console, book):
    populate(book, "export")
    lists = {model._meta.label: reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
             for model in admin.site._registry}
    missing = [label for label, path in lists.items() if 'value="export_csv"' not in console.get(path).content.decode()]
    assert missing == []


def test_export_writes_the_lists_columns_for_the_selected_rows(console, book, other_book):
    injected = CustomerFactory(book=book, name='=HYPERLINK("https://evil.example.com")', external_id="c-1",
                               email="a@example.com")
    plain = CustomerFactory(book=book, name="Plain Co", external_id="-42", net_terms=15)
    foreign = CustomerFactory(book=other_book, name="Foreign Co")
    resp = action(console, "/admin/customers/customer/", "export_csv", [injected, plain, foreign], follow=False)
    assert resp["Content-Disposition"].startswith('attachment; filename="customer-')
    header, *lines = rows_of(resp)
    assert header == ["id", "name", "external id", "email", "status", "net terms", "is internal", "created at"]
    by_id = {line[0]: line for line in lines}
    assert set(by_id) == {str(injected.pk), str(plain.pk)}  # the foreign row is never exported
    assert by_id[str(injected.pk)][1:4] == ["'=HYPERLINK(\"https://evil.example.com\")", "c-1", "a@example.com"]
    # Raw values, though the list shows the date formatted.
    assert by_id[str(plain.pk)][1:8] == ["Plain Co", "'-42", "", "active", "15", "false", plain.created_at.isoformat()]


def test_select_all_exports_the_whole_filtered_list(console, book):
    CustomerFactory(book=book, name="Active one")
    CustomerFactory(book=book, name="Archived one", status="archived")
    one = CustomerFactory(book=book, name="Active two")
    resp = console.post("/admin/customers/customer/?status__exact=active",
                        {"action": "export_csv", "_selected_action": [str(one.pk)], "select_across": "1",
                         "index": "0"})
    assert sorted(line[1] for line in rows_of(resp)[1:]) == ["Active one", "Active two"]


def test_computed_columns_are_exported_as_shown(console, book):
    matter = MatterFactory(book=book, matter_number="M-7", name="Smith v. Jones")
    MatterRuleFactory(matter=matter, agent_code="a")
    MatterRuleFactory(matter=matter, agent_code="b")
    header, line = rows_of(action(console, "/admin/matters/matter/", "export_csv", [matter], follow=False))
    assert {"matter number": "M-7", "name": "Smith v. Jones", "rules": "2", "events": "0"}.items() <= \
        dict(zip(header, line)).items()


@pytest.mark.ledger_drift_allowed  # an attribution left without its event, as an archived month leaves them
def test_a_matters_events_are_counted_from_the_ledger_as_the_api_counts_them(console, api, book):
    from django.db import connection

    from matters.models import MatterAttribution

    matter = MatterFactory(book=book, matter_number="M-8", name="Doe v. Roe")
    kept, gone = UsageEventFactory(book=book), UsageEventFactory(book=book)
    for event in (kept, gone):
        MatterAttribution.objects.create(book=book, event_id=event.pk, matter=matter, source="manual")
    with connection.cursor() as cursor:  # the event leaves the ledger; its attribution stays
        cursor.execute("DELETE FROM customers_usageevent WHERE id = %s", [gone.pk])
    header, line = rows_of(action(console, "/admin/matters/matter/", "export_csv", [matter], follow=False))
    assert dict(zip(header, line))["events"] == "1"
    assert api.get(f"/v1/matters/{matter.pk}").json()["eventCount"] == 1
    # Deleting the matter returns both rows to Unassigned and reports the one event the ledger holds.
    assert api.delete(f"/v1/matters/{matter.pk}").json()["eventsReturnedToUnassigned"] == 1
    assert MatterAttribution.objects.filter(matter=None).count() == 2


def test_the_invoice_export_heads_every_column_alike_and_writes_every_amount_as_a_decimal(console, book):
    from billing.models import Invoice

    invoice = populate(book, "export")[Invoice]
    header, line = rows_of(action(console, "/admin/billing/invoice/", "export_csv", [invoice], follow=False))
    assert header == ["id", "invoice number", "customer", "subscription", "status", "period", "issued", "total",
                      "amount paid", "amount due", "overpaid", "due date", "currency", "paid at", "voided at"]
    assert dict(zip(header, line))["issued"] == (invoice.issued_at.isoformat() if invoice.issued_at else "")
    assert dict(zip(header, line))["overpaid"] == "0.00"  # nothing overpaid: 0.00, not an empty cell
    assert dict(zip(header, line))["currency"] == invoice.currency.upper()  # the amounts' currency beside them
    invoice.amount_paid = invoice.total + 5
    invoice.save()
    header, line = rows_of(action(console, "/admin/billing/invoice/", "export_csv", [invoice], follow=False))
    assert (dict(zip(header, line))["amount due"], dict(zip(header, line))["overpaid"]) == ("0.00", "5.00")


def test_text_is_exported_as_stored_and_periods_and_decimals_as_raw_values(console, book):
    from decimal import Decimal

    from billing.models import Invoice
    from accounts.admin_actions import _cell

    customer = CustomerFactory(book=book, name='R&D <Labs> "Big", Inc.')
    header, line = rows_of(action(console, "/admin/customers/customer/", "export_csv", [customer], follow=False))
    assert dict(zip(header, line))["name"] == 'R&D <Labs> "Big", Inc.'  # no tag stripped from a name
    invoice = populate(book, "export")[Invoice]
    header, line = rows_of(action(console, "/admin/billing/invoice/", "export_csv", [invoice], follow=False))
    assert dict(zip(header, line))["period"] == f"{invoice.period_start.isoformat()}/{invoice.period_end.isoformat()}"
    # A rate stored to 30 places: its digits, never Python's exponent form (`2.00...0E-7`).
    assert _cell(Decimal("2.00000000000000000000000E-7")) == "0.000000200000000000000000000000"


def test_every_period_column_exports_its_two_instants(console, book):
    # The credit-grant and pool-alert lists wrote their local-day text; the export writes the interval.
    from billing.models import CreditPoolAlert

    alert = populate(book, "export")[CreditPoolAlert]
    header, line = rows_of(action(console, "/admin/billing/creditpoolalert/", "export_csv", [alert], follow=False))
    assert dict(zip(header, line))["period"] == f"{alert.period_start.isoformat()}/{alert.period_end.isoformat()}"


def test_cells_without_a_figure_are_empty_and_numbered_codes_are_written_as_words(console, api, book):
    """A spreadsheet sums a column: a rollup row of a grain without the model, a top-up's consumption or a period
    not settled yet leave an empty cell (the console's dash, its sentence), and a grain reads as its words."""
    from decimal import Decimal

    from billing.models import CreditGrant
    from customers.models import UsageDailyRollup
    from customers.rollup import analytics_rollup_catch_up

    record = {"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "gpt-4o-mini",
              "modelProvider": "openai", "inputTokens": 1000, "usageDate": "2025-06-10T12:00:00Z"}
    assert api.post("/v1/usage/record", {"records": [record]}).status_code == 200
    analytics_rollup_catch_up(book_id=book.pk)
    keeping = UsageDailyRollup.objects.get(book=book, grain=0)
    summing = UsageDailyRollup.objects.get(book=book, grain=3)
    header, *lines = rows_of(action(console, "/admin/customers/usagedailyrollup/", "export_csv", [keeping, summing],
                                    follow=False))
    by_id = {line[0]: dict(zip(header, line)) for line in lines}
    assert by_id[str(keeping.pk)]["grain"] == "day: customer, agent, signal, model"
    assert (by_id[str(keeping.pk)]["events with the model"], by_id[str(keeping.pk)]["cost of the model"]) == (
        "1", format(keeping.model_cost, "f"))
    assert by_id[str(summing.pk)]["grain"] == "day: customer, agent"
    assert (by_id[str(summing.pk)]["events with the model"], by_id[str(summing.pk)]["cost of the model"]) == ("", "")

    from datetime import datetime, timezone

    topup = populate(book, "export")[CreditGrant]  # a top-up: drawn through the period grants, no figure of its own
    may, june, july = (datetime(2025, month, 1, tzinfo=timezone.utc) for month in (5, 6, 7))
    settled = CreditGrant.objects.create(book=book, subscription=topup.subscription, kind="period", units=10,
                                         period_start=may, period_end=june, settled_at=june,
                                         consumed_units=Decimal("7.5"))
    open_period = CreditGrant.objects.create(book=book, subscription=topup.subscription, kind="period", units=10,
                                             period_start=june, period_end=july)
    header, *lines = rows_of(action(console, "/admin/billing/creditgrant/", "export_csv",
                                    [topup, settled, open_period], follow=False))
    consumed = {line[0]: dict(zip(header, line))["consumed units"] for line in lines}
    assert consumed == {str(topup.pk): "", str(settled.pk): "7.5", str(open_period.pk): ""}


def test_the_payment_export_names_the_customer_and_the_currency(console, book):
    from billing.models import Payment

    payment = populate(book, "export")[Payment]
    header, line = rows_of(action(console, "/admin/billing/payment/", "export_csv", [payment], follow=False))
    row = dict(zip(header, line))
    assert (row["customer"], row["currency"]) == (payment.invoice.customer.name, payment.invoice.currency.upper())
