"""Canonical MRR and the Billed and Collected labels, read from invoices (spec §1, §3, §4)."""
from datetime import datetime, timedelta, timezone

import pytest

from billing.models import Invoice, Subscription
from customers.models import Customer
from tests.analytics.support import D, get, models, money  # noqa: F401 (fixtures)
from tests.analytics.test_revenue import MAY, sales  # noqa: F401 (fixture)
from tests.factories import SubscriptionFactory

UTC = timezone.utc


@pytest.fixture
def invoices(book, sales):
    """NOW is 2025-06-10, so the last complete month is May. gamma: issued 100.00 (May 5), overdue 50.00
    (May 20), paid 80.00 with 10.00 refunded (May 25), pending 20.00 (May 30), a draft, a void and a
    refunded invoice, issued 60.00 (April 30). delta: issued 10.00 (May 15), paid 25.00 (June 1).
    An internal customer's issued 500.00 (May 10)."""
    periods = iter(datetime(2024, 1, 1, tzinfo=UTC) + timedelta(days=n) for n in range(100))

    def invoice(subscription, status, total, issued, paid="0"):
        start = next(periods)
        return Invoice.objects.create(book=book, customer_id=subscription.customer_id, subscription=subscription,
                                      status=status, invoice_number=f"INV-{start:%j}", period_start=start,
                                      period_end=start + timedelta(days=1), total=D(total), amount_paid=D(paid),
                                      issued_at=None if issued is None else datetime.fromisoformat(issued))
    gamma = Subscription.objects.get(pk=sales.gamma_sub["id"])
    delta = Subscription.objects.get(pk=sales.delta_sub["id"])
    invoice(gamma, "issued", "100", "2025-05-05T10:00:00+00:00")
    invoice(gamma, "overdue", "50", "2025-05-20T10:00:00+00:00")
    invoice(gamma, "paid", "80", "2025-05-25T10:00:00+00:00", paid="70")
    invoice(gamma, "pending", "20", "2025-05-30T10:00:00+00:00")
    invoice(gamma, "draft", "999", None)
    invoice(gamma, "void", "40", "2025-05-06T10:00:00+00:00")
    invoice(gamma, "refunded", "30", "2025-05-07T10:00:00+00:00")
    invoice(gamma, "issued", "60", "2025-04-30T10:00:00+00:00")
    invoice(delta, "issued", "10", "2025-05-15T10:00:00+00:00")
    invoice(delta, "paid", "25", "2025-06-01T10:00:00+00:00", paid="25")
    developer = Customer.objects.get(book=book, external_id="dev@acme.test")  # internal: coding-agent usage
    invoice(SubscriptionFactory(book=book, customer=developer), "issued", "500", "2025-05-10T10:00:00+00:00")


def test_billed_and_collected_count_invoices_dated_in_the_window(api, sales, invoices):
    """May: Billed is issued and overdue (100 + 50 + 10); Collected is paid, net of refunds (80 - 10).
    Pending, draft, void and refunded invoices are neither; April's and June's are outside."""
    body = get(api, "/v1/analytics/revenue", **MAY)
    assert (money(body["billed"]), money(body["collected"])) == (D(160), D(70))
    cost = money(body["cost"])
    assert money(body["billedMargin"]) == D(160) - cost and money(body["collectedMargin"]) == D(70) - cost
    assert money(body["billedMarginPercent"]) == pytest.approx((D(160) - cost) * 100 / 160)
    rows = {row["subscriptionId"]: (money(row["billed"]), money(row["collected"])) for row in body["bySubscription"]}
    assert rows == {sales.gamma_sub["id"]: (D(150), D(70)), sales.delta_sub["id"]: (D(10), D(0))}
    customer = get(api, f"/v1/customers/{sales.delta.id}/revenue", **MAY)
    assert (money(customer["billed"]), money(customer["collected"])) == (D(10), D(0))
    june = get(api, f"/v1/subscriptions/{sales.delta_sub['id']}/revenue", startDate="2025-06-01", endDate="2025-06-30")
    assert (money(june["billed"]), money(june["collected"])) == (D(0), D(25))


def test_the_four_labels_differ(api, sales, invoices):
    """gamma in May: Agent-Earned 14, Revenue 156, Billed 150, Collected 70."""
    body = get(api, f"/v1/subscriptions/{sales.gamma_sub['id']}/revenue", **MAY)
    labels = [money(body[name]) for name in ("agentEarned", "revenue", "billed", "collected")]
    assert labels == [D(14), D(156), D(150), D(70)]


def test_canonical_mrr_is_the_last_complete_months_non_draft_invoices(api, sales, invoices):
    """May's invoices, void and refunded ones left out: 100 + 50 + 80 + 20 + 10 = 260; arr = 12 x mrr."""
    body = get(api, "/v1/analytics/mrr")
    assert body == {"variant": "canonical", "mrr": 260, "arr": 3120}
    assert get(api, "/v1/analytics/mrr", customerId=str(sales.gamma.id))["mrr"] == 250
    assert get(api, "/v1/analytics/mrr", subscriptionId=sales.delta_sub["id"])["mrr"] == 10


def test_all_variant_carries_the_three(api, sales, invoices):
    body = get(api, "/v1/analytics/mrr", variant="all")
    assert body["variant"] == "all" and body["canonical"] == {"mrr": 260, "arr": 3120}
    assert (money(body["runRate"]["mrr"]), money(body["committed"]["mrr"])) == (D("252.5"), D(232))
    assert {row["subscriptionId"] for row in body["runRate"]["breakdown"]} == {sales.gamma_sub["id"],
                                                                             sales.delta_sub["id"]}


def _issued(book, subscription, status, total, issued, paid="0", start=datetime(2025, 3, 1, tzinfo=UTC)):
    return Invoice.objects.create(book=book, customer_id=subscription.customer_id, subscription=subscription,
                                  status=status, invoice_number=f"INV-{total}-{status}", period_start=start,
                                  period_end=start + timedelta(days=31), total=D(total), amount_paid=D(paid),
                                  issued_at=datetime.fromisoformat(issued))


def test_a_subscription_that_ended_before_the_window_reports_the_invoice_dated_in_it(api, book, sales):
    # Its last invoice issued after it ended (the end-of-period job's, on the next day): Billed counted it and no row
    # did, so the rows fell short of the total.
    gamma = Customer.objects.get(pk=sales.gamma.id)
    ended = SubscriptionFactory(book=book, customer=gamma, status="ended", start_date=datetime(2025, 3, 1, tzinfo=UTC),
                                end_date=datetime(2025, 5, 1, tzinfo=UTC))
    _issued(book, ended, "issued", "100", "2025-05-01T00:05:00+00:00")
    body = get(api, "/v1/analytics/revenue", **MAY)
    rows = {row["subscriptionId"]: row for row in body["bySubscription"]}
    assert money(rows[str(ended.id)]["billed"]) == D(100) and money(rows[str(ended.id)]["revenue"]) == D(0)
    assert sum(money(row["billed"]) for row in body["bySubscription"]) == money(body["billed"]) == D(100)
    alone = get(api, f"/v1/subscriptions/{ended.id}/revenue", **MAY)
    assert money(alone["billed"]) == D(100) and [row["subscriptionId"] for row in alone["bySubscription"]] == [
        str(ended.id)]


def test_collected_leaves_out_what_was_paid_beyond_the_total(api, book, sales):
    # Paid twice (two checkouts): the surplus is owed back to the customer, not collected.
    delta = Subscription.objects.get(pk=sales.delta_sub["id"])
    _issued(book, delta, "paid", "100", "2025-05-10T10:00:00+00:00", paid="200")
    _issued(book, delta, "paid", "80", "2025-05-11T10:00:00+00:00", paid="70", start=datetime(2025, 4, 1, tzinfo=UTC))
    body = get(api, "/v1/analytics/revenue", **MAY)
    assert money(body["collected"]) == D(170)  # 100 of the 200, and 80 less a 10.00 refund
    assert money(get(api, f"/v1/customers/{sales.delta.id}/revenue", **MAY)["collected"]) == D(170)
