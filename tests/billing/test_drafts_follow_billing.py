"""A draft follows what its subscription bills until it is sent (contract: "One subscription bills an event", "Send
issues exactly the lines and total the draft shows", "Derived figures"): a draft whose claims another subscription
or strategy took since is refused at send (409) rather than billing an event twice; a draft follows its
subscription's end when a PATCH moves it, and grows back when a plan change that had cut it is withdrawn, so that
no usage of the days it gets back is left on no invoice. The clock is 2025-06-10T12:00Z (frozen_now); amounts by
hand."""
from decimal import Decimal as D

import pytest

from tests.billing.support import error, ok
from tests.billing.test_exact_invoices import Book

pytestmark = pytest.mark.django_db
JUNE = ("2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z")


@pytest.fixture
def acme(api, book, frozen_now):
    return Book(api, book)


def fee(rate) -> dict:
    return {"chargeType": "recurring", "rate": rate, "billingFrequency": "monthly"}


def usage_lines(invoice) -> list[tuple[float, float]]:
    return [(line["quantity"], line["amount"]) for line in invoice["lines"] if line["chargeType"] == "usage"]


def send(acme, invoice):
    return acme.api.post(f"/v1/invoices/{invoice['id']}/send", {})


def sent(acme, invoice) -> dict:
    """Send, then read the invoice back."""
    ok(send(acme, invoice))
    return ok(acme.api.get(f"/v1/invoices/{invoice['id']}"))


def test_a_draft_whose_usage_another_subscription_took_since_is_refused_at_send_then_refreshed(acme):
    older_plan, _ = acme.plan(("calls", "2"))
    newer_plan, _ = acme.plan(("tickets", "1"))
    older = acme.subscribe(older_plan, "2025-05-01T00:00:00Z")
    newer = acme.subscribe(newer_plan, "2025-06-01T00:00:00Z")
    acme.record(("tickets", 7, "2025-06-05T10:00:00Z"))
    stale = acme.generate(newer, JUNE)
    assert (usage_lines(stale), stale["total"]) == ([(7, 7.0)], 7.0)  # only the newer plan bills tickets

    # The older subscription's plan now bills tickets too: as the earliest-started subscription it bills them.
    ok(acme.api.post(f"/v1/pricing-plans/{older_plan['id']}/pricing-strategies",
                     [{"name": "tickets", "agentId": str(acme.agent.id), "chargeType": "usage", "pricingModel": "flat",
                       "rate": "3", "signalId": str(acme.signals["tickets"].id)}]), 201)
    billing = acme.generate(older, JUNE)
    assert sorted(usage_lines(billing)) == [(0, 0.0), (7, 21.0)]  # calls 0, tickets 7 x 3
    assert sent(acme, billing)["status"] == "issued"

    refused = send(acme, stale)
    message = error(refused, 409)
    assert refused.json()["code"] == "invoice_out_of_date" and "Generate it again" in message
    assert ok(acme.api.get(f"/v1/invoices/{stale['id']}"))["status"] == "draft"  # nothing issued, no email

    refreshed = acme.generate(newer, JUNE)  # the same draft, refreshed
    assert (refreshed["id"], usage_lines(refreshed), refreshed["total"]) == (stale["id"], [(0, 0.0)], 0.0)
    assert sent(acme, refreshed)["status"] == "issued"  # the 7 tickets are billed once, by the older one


def test_a_draft_sent_as_it_was_reviewed_when_only_new_events_arrived(acme):
    """Events recorded since generation within the draft's own claims do not make it out of date: the reviewed
    draft is what is sent (contract: Invoices keep what was reviewed)."""
    plan, _ = acme.plan(("tickets", "1"))
    subscription = acme.subscribe(plan, "2025-05-01T00:00:00Z")
    acme.record(("tickets", 4, "2025-06-02T10:00:00Z"))
    reviewed = acme.generate(subscription, JUNE)
    acme.record(("tickets", 5, "2025-06-03T10:00:00Z"))
    after = sent(acme, reviewed)
    assert (after["status"], after["total"]) == ("issued", 4.0)


def test_an_earlier_end_date_cuts_the_draft_and_prorates_its_fee(acme):
    plan, _ = acme.plan(("tickets", "1"), fee("30"))
    subscription = acme.subscribe(plan, "2025-05-01T00:00:00Z")
    acme.record(("tickets", 5, "2025-06-03T10:00:00Z"), ("tickets", 7, "2025-06-20T10:00:00Z"))
    draft = acme.generate(subscription, JUNE)
    assert draft["total"] == 42.0  # 12 tickets + the $30 fee

    ok(acme.api.patch(f"/v1/subscriptions/{subscription['id']}", {"endDate": "2025-06-16T00:00:00Z"}))
    cut = ok(acme.api.get(f"/v1/invoices/{draft['id']}"))
    # [June 1, June 16): 5 tickets; the fee for 15 of 30 days: 15.00
    assert (cut["status"], cut["periodEnd"], usage_lines(cut), cut["total"]) == (
        "draft", "2025-06-16T00:00:00Z", [(5, 5.0)], 20.0)


def test_ending_the_subscription_now_cuts_the_draft_as_an_end_date_does(acme):
    """`status: ended` ends an active subscription now (2025-06-10T12:00Z): its draft's period ends there too, as
    the amounts already did; it kept June 30 as its end, a period billing days it no longer covered."""
    plan, _ = acme.plan(("tickets", "1"), fee("30"))
    subscription = acme.subscribe(plan, "2025-05-01T00:00:00Z")
    acme.record(("tickets", 5, "2025-06-03T10:00:00Z"), ("tickets", 7, "2025-06-20T10:00:00Z"))
    draft = acme.generate(subscription, JUNE)

    ok(acme.api.patch(f"/v1/subscriptions/{subscription['id']}", {"status": "ended"}))
    cut = ok(acme.api.get(f"/v1/invoices/{draft['id']}"))
    # [June 1, June 10 12:00): 5 tickets; the fee for 10 of 30 days (the end's day is covered): 10.00
    assert (cut["status"], cut["periodEnd"], usage_lines(cut), cut["total"]) == (
        "draft", "2025-06-10T12:00:00Z", [(5, 5.0)], 15.0)


def test_a_withdrawn_plan_change_gives_the_draft_its_days_back_with_their_usage(acme):
    plan, _ = acme.plan(("tickets", "1"), fee("30"))
    other, _ = acme.plan(("tickets", "2"))
    subscription = acme.subscribe(plan, "2025-05-01T00:00:00Z")
    acme.record(("tickets", 5, "2025-06-05T10:00:00Z"), ("tickets", 7, "2025-06-25T10:00:00Z"))
    draft = acme.generate(subscription, JUNE)
    ok(acme.api.post(f"/v1/subscriptions/{subscription['id']}/change-plan",
                     {"planId": other["id"], "effectiveAt": "2025-06-21T00:00:00Z"}), 201)
    cut = ok(acme.api.get(f"/v1/invoices/{draft['id']}"))
    assert (cut["periodEnd"], usage_lines(cut), cut["total"]) == ("2025-06-21T00:00:00Z", [(5, 5.0)], 25.0)

    ok(acme.api.delete(f"/v1/subscriptions/{subscription['id']}/change-plan"))  # withdrawn: June is whole again
    whole = ok(acme.api.get(f"/v1/invoices/{draft['id']}"))
    assert (whole["periodEnd"], usage_lines(whole), whole["total"]) == ("2025-07-01T00:00:00Z", [(12, 12.0)],
                                                                              42.0)
    assert D(str(whole["total"])) == D("42")


def test_revenue_and_mrr_put_a_volume_on_the_tier_the_invoice_does(acme):
    """A volume of 100.000000000000000000000000001 is above the first tier (0 to 100) by the contract's tier rule;
    the invoice bills it at 0.5 a unit, so revenue and the run-rate must too. Decimal's 28-digit default context
    summed it to 100 (the first tier, 1 a unit: 100 where the invoice says 50)."""
    tiers = [{"lower": 0, "upper": 100, "rate": "1"}, {"lower": 100, "upper": None, "rate": "0.5"}]
    plan, _ = acme.plan({"chargeType": "usage", "pricingModel": "volume", "tiers": tiers,
                         "signalId": str(acme.signals["tickets"].id)})
    subscription = acme.subscribe(plan, "2025-06-01T00:00:00Z")
    acme.record(("tickets", 100, "2025-06-02T10:00:00Z"), ("tickets", "0.000000000000000000000000001",
                                                          "2025-06-03T10:00:00Z"))
    assert acme.generate(subscription, JUNE)["total"] == 50.0
    earned = D(str(acme.revenue(subscription, "2025-06-01", "2025-06-30")["agentEarned"]))
    assert earned == D("50")  # 100.000000000000000000000000001 x 0.5, as revenue figures are written (12 places)
