"""The portal's usage section reads its daily chart and its totals per signal in two statements; a batch
committed from another connection between them on purpose: the section counts it in both or neither (one snapshot
of the ledger, customers/usage_sums.py `ledger_snapshot`). Transactional: the batch commits as it would in
production."""
from decimal import Decimal

import pytest

from portal import selectors as portal_selectors
from tests.factories import AgentFactory, SignalFactory, UsageEventFactory
from tests.parallel import in_another_connection
from tests.portal.conftest import instant

pytestmark = pytest.mark.django_db(transaction=True)

JUNE = {"start": instant("2025-06-01T00:00:00Z"), "end": instant("2025-07-01T00:00:00Z"),
        "now": instant("2025-06-15T12:00:00Z")}


def test_the_usage_chart_and_its_totals_count_a_batch_committed_between_them_in_none_or_all(book, customer,
                                                                                          monkeypatch):
    """The days were read, then the totals per signal: a batch of 3 events on June 12 committed in between was
    in the headline's 5 events and not in the 2 the chart drew."""
    signal = SignalFactory(book=book, agent=AgentFactory(book=book), name="calls", short_name="calls")

    def event(day: int):
        return UsageEventFactory(book=book, customer=customer, signal=signal, quantity=Decimal(2),
                                 usage_date=instant(f"2025-06-{day:02d}T10:00:00Z"))
    event(10)
    event(11)
    by_signal, fired = portal_selectors._usage_by_signal, []

    def by_signal_after_a_batch(*args, **kwargs):
        if not fired:
            fired.append(True)
            in_another_connection(lambda: [event(12) for _ in range(3)])
        return by_signal(*args, **kwargs)
    monkeypatch.setattr(portal_selectors, "_usage_by_signal", by_signal_after_a_batch)

    usage = portal_selectors.customer_usage(book=book, customer=customer, **JUNE)
    assert fired
    assert usage.events == sum(day.events for day in usage.days) == 2  # the batch came after this snapshot
    assert [(total.events, total.quantity) for total in usage.by_signal] == [(2, Decimal(4))]
    after = portal_selectors.customer_usage(book=book, customer=customer, **JUNE)
    assert after.events == sum(day.events for day in after.days) == 5
