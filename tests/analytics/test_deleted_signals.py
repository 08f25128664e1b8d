"""A deleted signal's events are orphaned (spec: "historical events become orphaned"; the ledger's SET_NULL) while
the rollup keeps its id: every read of revenue takes them alike, whether it reads whole days from the rollup or the
partial days at a window's edges from the events."""
from datetime import datetime, timezone
from decimal import Decimal

import pytest

from tests.billing.conftest import agent, chain, customer, frozen_now, signal  # noqa: F401 (fixtures)
from tests.billing.pools import use
from tests.billing.support import create_strategies, create_subscription, flat_usage, ok
from tests.factories import SignalFactory

pytestmark = pytest.mark.django_db


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=timezone.utc)


def earned(api, subscription, start: str, end: str) -> Decimal:
    answer = ok(api.get(f"/v1/subscriptions/{subscription['id']}/revenue", {"startDate": start, "endDate": end}))
    return Decimal(str(answer["agentEarned"]))


def test_revenue_reads_a_deleted_signals_events_alike_from_whole_and_partial_days(api, book, chain, frozen_now):
    strategy = create_strategies(api, chain.plan["id"], [flat_usage(chain, rate="1")])[0]
    subscription = create_subscription(api, chain, startDate="2025-05-01T00:00:00Z")
    use(chain, 10, at=at("2025-05-15T10:00:00"))
    invoice = ok(api.post("/v1/invoices/generate", {"customerId": str(chain.customer.id),
                                                    "subscriptionId": subscription["id"],
                                                    "billingPeriodStart": "2025-05-01T00:00:00Z",
                                                    "billingPeriodEnd": "2025-06-01T00:00:00Z"}), 201)
    ok(api.post(f"/v1/invoices/{invoice['id']}/send", {"recipientEmail": "ap@example.com"}))
    assert earned(api, subscription, "2025-05-01", "2025-05-31") == 10
    assert earned(api, subscription, "2025-05-15T06:00:00Z", "2025-05-15T18:00:00Z") == 10
    # The strategy moves to another signal (May keeps the terms its invoice captured, which name the first one),
    # then the first signal is deleted: its events no longer name a signal, so no terms bill them.
    ok(api.patch(f"/v1/pricing-plans/{chain.plan['id']}/pricing-strategies/{strategy['id']}",
                 {"signalId": str(SignalFactory(book=book, agent=chain.agent).id)}))
    assert api.delete(f"/v1/signals/{chain.signal.id}").status_code == 204
    [event] = ok(api.get("/v1/events", {"customerId": str(chain.customer.id)}))
    assert event["signalId"] is None
    whole_month = earned(api, subscription, "2025-05-01", "2025-05-31")
    around_the_event = earned(api, subscription, "2025-05-15T06:00:00Z", "2025-05-15T18:00:00Z")
    assert whole_month == around_the_event == 0  # the rollup's rows of the deleted id read as the events do
