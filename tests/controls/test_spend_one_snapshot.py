"""GET /v1/control/spend reads the team's spend and one developer's in two statements; a batch committed from
another connection between them on purpose: the answer counts it in both or neither (one snapshot of the ledger,
customers/usage_sums.py `ledger_snapshot`), so a developer never spent more than the team. Transactional: the
batch commits as it would in production."""
import pytest

from controls import selectors as control_selectors
from tests.parallel import in_another_connection

pytestmark = pytest.mark.django_db(transaction=True)

SPEND = "/v1/control/spend"
ALICE, BOB = "alice@acme.example.com", "bob@acme.example.com"


def test_a_developers_spend_never_exceeds_the_teams_when_a_batch_lands_between_the_reads(api, frozen_now,
                                                                                         coding_usage, monkeypatch):
    """The team's spend was read, then Alice's: her batch of 2 events (10 USD) committed in between made her
    spend 11 USD of a team's 3."""
    coding_usage(ALICE, "1")
    coding_usage(BOB, "2")
    totals, fired = control_selectors.spend_totals, []

    def totals_after_a_batch(**kwargs):
        if kwargs.get("customer_external_id") is not None and not fired:
            fired.append(True)
            in_another_connection(lambda: [coding_usage(ALICE, "5") for _ in range(2)])
        return totals(**kwargs)
    monkeypatch.setattr(control_selectors, "spend_totals", totals_after_a_batch)

    body = api.get(SPEND, {"period": "month", "customerExternalId": ALICE}).json()
    assert fired
    assert body["org"] == {"spentUsd": 3, "eventCount": 2, "unpricedEventCount": 0}  # the batch came after
    assert body["dev"] == {"customerExternalId": ALICE, "spentUsd": 1, "eventCount": 1, "unpricedEventCount": 0}
    after = api.get(SPEND, {"period": "month", "customerExternalId": ALICE}).json()  # both count it now
    assert after["org"] == {"spentUsd": 13, "eventCount": 4, "unpricedEventCount": 0}
    assert after["dev"] == {"customerExternalId": ALICE, "spentUsd": 11, "eventCount": 3, "unpricedEventCount": 0}
