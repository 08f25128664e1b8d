"""bench/soak.py's verdict: the comparison of what clients were told with what was stored catches every
kind of loss or doubling (the soak itself runs against a real server; docs/performance.md)."""
import importlib.util
from pathlib import Path

import pytest

spec = importlib.util.spec_from_file_location("soak", Path(__file__).resolve().parents[2] / "bench" / "soak.py")
soak = importlib.util.module_from_spec(spec)
spec.loader.exec_module(soak)


def ledger(accepted, invalid=()):
    return soak.Ledger(accepted=dict(accepted), invalid=set(invalid))


TOLD = [ledger({"k1": ("e1", "0.5"), "k2": ("e2", None)}, invalid={"bad"}), ledger({"k3": ("e3", "0.25")})]
STORED = [("k1", "e1", "0.5"), ("k2", "e2", None), ("k3", "e3", "0.25")]


def test_stored_events_equal_to_the_acknowledged_records_pass():
    figures, failures = soak.verify(TOLD, STORED)
    assert failures == []
    assert (figures["stored"], figures["sum of stored usageCost"], figures["sum of reported totalCostUsd"]) == (
        3, "0.75", "0.75")


@pytest.mark.parametrize("stored, failure", [
    (STORED[:2], "acknowledged records not stored"),
    (STORED + [("k9", "e9", None)], "never acknowledged"),
    (STORED + [("k1", "e1", "0.5")], "stored more than once"),
    (STORED + [("bad", "e8", None)], "invalid records stored"),
    ([("k1", "e7", "0.5"), *STORED[1:]], "another eventId"),
    ([("k1", "e1", "0.51"), *STORED[1:]], "cost sums differ"),
])
def test_every_kind_of_loss_or_doubling_fails_the_soak(stored, failure):
    _, failures = soak.verify(TOLD, stored)
    assert any(failure in text for text in failures), failures


def test_contradictory_answers_fail_the_soak():
    records = [{"idempotencyKey": "k1"}, {"idempotencyKey": "k1"}]
    told = soak.Ledger()
    answer = {"processed": 2, "results": {"failed": [], "success": [
        {"index": 0, "eventId": "e1", "totalCostUsd": "1"},
        {"index": 1, "eventId": "e2", "totalCostUsd": "1"}]}}  # the in-batch repeat was not a replay
    soak.take_answer(records, set(), answer, told, replayed_batch=False)
    assert told.problems and "replay answered e2" in told.problems[0]


def test_a_retried_batch_may_come_back_as_replays_of_its_lost_attempt():
    records = [{"idempotencyKey": "k1"}]
    answer = {"processed": 1, "results": {"failed": [], "success": [
        {"index": 0, "eventId": "e1", "totalCostUsd": "1", "replayed": True}]}}
    told, retried = soak.Ledger(), soak.Ledger()
    soak.take_answer(records, set(), answer, told, replayed_batch=False)
    soak.take_answer(records, set(), answer, retried, replayed_batch=False, retried=True)
    assert told.problems  # a first attempt is never a replay
    assert not retried.problems and retried.accepted == {"k1": ("e1", "1")}
    assert retried.committed_before_lost_answer == 1
