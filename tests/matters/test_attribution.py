"""Matter attribution through the API (spec §3 "Matter attribution"): precedence manual > tag > rule, rule
order and matchers, unknown tags, apply-rules sweeps; and the ingestion seam's query budget."""
import threading
from datetime import timedelta

import pytest
from django.db import connection, connections, transaction
from django.test.utils import CaptureQueriesContext

from core import clock
from matters.ingestion import matters_attribute_new_events
from matters.models import AttributionSource, Matter, MatterAttribution
from matters.services import matter_rules_apply
from tests.factories import MatterFactory, MatterRuleFactory, book_of
from tests.matters.conftest import usage_event

pytestmark = pytest.mark.django_db


def new_matter(api, number):
    resp = api.post("/v1/matters", {"matterNumber": number, "name": f"Matter {number}", "clientName": "Client"})
    assert resp.status_code == 201, resp.json()
    return resp.json()


def new_rule(api, matter, **fields):
    resp = api.post("/v1/matter-rules", {"matterId": matter["id"], **fields})
    assert resp.status_code == 201, resp.json()
    return resp.json()


def matter_of(event):
    """(matter id or None, source or None) of an event, as the API shows it."""
    attribution = MatterAttribution.objects.filter(event=event).first()
    if attribution is None:
        return None, None
    return (str(attribution.matter_id) if attribution.matter_id else None), attribution.source


def apply_all(api):
    total = 0
    for _ in range(50):
        resp = api.post("/v1/matter-rules/apply")
        assert resp.status_code == 201
        total += resp.json()["assigned"]
        if resp.json()["assigned"] == 0:
            return total
    raise AssertionError("apply-rules never finished")


# --------------------------------------------------------------------------- tag


def test_tag_naming_a_matter_number_attaches_the_event_at_record_time(api, record):
    matter = new_matter(api, "2025-001")
    event = record(tag="2025-001")
    assert matter_of(event) == (matter["id"], "tag")
    row = api.get(f"/v1/matters/{matter['id']}").json()["events"][0]
    assert (row["eventId"], row["source"]) == (str(event.id), "tag")


def test_tag_with_a_matter_uuid_is_not_a_matter_number(api, record):
    matter = new_matter(api, "2025-001")
    event = record(tag=matter["id"])
    assert matter_of(event) == (None, None)


def test_unknown_tag_creates_no_matter_and_falls_through_to_rules(api, record):
    routed_to = new_matter(api, "2025-001")
    new_rule(api, routed_to, agentCode="drafter")
    routed = record(tag="NOPE-1", agent="drafter")
    stranded = record(tag="NOPE-2", agent="someone-else")
    assert Matter.objects.count() == 1
    assert matter_of(routed) == (routed_to["id"], "rule")
    assert matter_of(stranded) == (None, None)
    assert str(stranded.id) in {row["eventId"] for row in api.get("/v1/matters/unassigned").json()["results"]}


def test_tag_wins_over_a_matching_rule(api, record):
    tagged = new_matter(api, "2025-001")
    ruled = new_matter(api, "2025-002")
    new_rule(api, ruled, agentCode="drafter", priority=0)
    event = record(tag="2025-001", agent="drafter")
    assert matter_of(event) == (tagged["id"], "tag")


def test_tag_of_a_matter_in_another_organization_is_unknown(api, other_book, record):
    MatterFactory(book=other_book, matter_number="2025-001")
    event = record(tag="2025-001")
    assert matter_of(event) == (None, None)


def test_a_closed_matter_still_receives_tagged_events(api, record):
    matter = new_matter(api, "2025-001")
    api.patch(f"/v1/matters/{matter['id']}", {"status": "closed"})
    assert matter_of(record(tag="2025-001")) == (matter["id"], "tag")


# --------------------------------------------------------------------------- rules


def test_lowest_priority_rule_wins(api, record):
    late = new_matter(api, "LATE")
    early = new_matter(api, "EARLY")
    new_rule(api, late, agentCode="drafter", priority=50)
    new_rule(api, early, agentCode="drafter", priority=10)
    assert matter_of(record(agent="drafter")) == (early["id"], "rule")


def test_older_rule_wins_a_priority_tie(api, record):
    older = new_matter(api, "OLDER")
    newer = new_matter(api, "NEWER")
    new_rule(api, older, signalPattern="review")
    new_rule(api, newer, agentCode="drafter")
    assert matter_of(record(agent="drafter", signal="contract-review")) == (older["id"], "rule")


@pytest.mark.parametrize("matchers, event_fields, matches", [
    ({"agentCode": "drafter"}, {"agent": "drafter"}, True),
    ({"agentCode": "drafter"}, {"agent": "Drafter"}, False),
    ({"customerExternalId": "acme"}, {"customer": "acme"}, True),
    ({"customerExternalId": "acme"}, {"customer": "acme-eu"}, False),
    ({"signalPattern": "REVIEW"}, {"signal": "contract-review-pages"}, True),
    ({"signalPattern": "memo"}, {"signal": "contract-review-pages"}, False),
    ({"agentCode": "drafter", "customerExternalId": "acme"}, {"agent": "drafter", "customer": "acme"}, True),
    ({"agentCode": "drafter", "customerExternalId": "acme"}, {"agent": "drafter", "customer": "globex"}, False),
    ({"agentCode": "drafter", "signalPattern": "pages"}, {"agent": "reviewer", "signal": "pages"}, False),
])
def test_every_matcher_set_on_a_rule_must_match(api, record, matchers, event_fields, matches):
    matter = new_matter(api, "2025-001")
    new_rule(api, matter, **matchers)
    expected = (matter["id"], "rule") if matches else (None, None)
    assert matter_of(record(**event_fields)) == expected


def test_rules_apply_at_record_time_to_the_whole_batch(book):
    first = MatterFactory(book=book)
    second = MatterFactory(book=book)
    MatterRuleFactory(matter=first, agent_code="drafter")
    MatterRuleFactory(matter=second, customer_external_id="acme")
    events = [usage_event(book, agent="drafter"), usage_event(book, customer="acme"),
              usage_event(book, tag=second.matter_number, agent="drafter"), usage_event(book)]
    matters_attribute_new_events(book=book, events=events)
    assert [matter_of(event) for event in events] == [
        (str(first.id), "rule"), (str(second.id), "rule"), (str(second.id), "tag"), (None, None)]


# --------------------------------------------------------------------------- manual


def test_manual_assignment_wins_over_tag_and_is_not_overwritten_by_apply(api, record):
    tagged = new_matter(api, "2025-001")
    chosen = new_matter(api, "2025-002")
    new_rule(api, tagged, agentCode="drafter", priority=0)
    event = record(tag="2025-001", agent="drafter")
    resp = api.post("/v1/matters/assign", {"eventId": str(event.id), "matterId": chosen["id"]})
    assert resp.status_code == 201
    apply_all(api)
    assert matter_of(event) == (chosen["id"], "manual")
    assert str(event.id) not in {row["eventId"] for row in api.get(f"/v1/matters/{tagged['id']}").json()["events"]}


def test_manual_unassignment_is_not_swept_back_by_apply(api, record):
    matter = new_matter(api, "2025-001")
    new_rule(api, matter, agentCode="drafter")
    event = record(agent="drafter")
    assert matter_of(event) == (matter["id"], "rule")
    api.post("/v1/matters/assign", {"eventId": str(event.id), "matterId": None})
    assert apply_all(api) == 0
    assert matter_of(event) == (None, "manual")


def test_manual_reassignment_moves_the_event_between_matters(api, record):
    first = new_matter(api, "2025-001")
    second = new_matter(api, "2025-002")
    event = record(tag="2025-001")
    api.post("/v1/matters/assign", {"eventId": str(event.id), "matterId": second["id"]})
    assert api.get(f"/v1/matters/{first['id']}").json()["eventCount"] == 0
    assert api.get(f"/v1/matters/{second['id']}").json()["eventCount"] == 1
    assert MatterAttribution.objects.filter(event=event).count() == 1


# --------------------------------------------------------------------------- apply-rules


def test_apply_sweeps_earlier_unassigned_events_that_a_new_rule_matches(api, unattributed):
    matter = new_matter(api, "2025-001")
    matching = [unattributed(agent="drafter"), unattributed(agent="drafter", signal="memo")]
    other = unattributed(agent="reviewer")
    new_rule(api, matter, agentCode="drafter")
    resp = api.post("/v1/matter-rules/apply")
    assert resp.status_code == 201 and resp.json()["assigned"] == 2
    assert [matter_of(event) for event in matching] == [(matter["id"], "rule")] * 2
    assert matter_of(other) == (None, None)
    assert api.post("/v1/matter-rules/apply").json()["assigned"] == 0


@pytest.mark.parametrize("pattern, signal", [("strasse", "Straßenreinigung"), ("STRASSE", "straßen"),
                                             ("ß", "class_action"), ("memo", "MEMO_drafted")])
def test_apply_matches_a_signal_pattern_as_recording_does(api, record, unattributed, pattern, signal):
    """A pattern is a case-insensitive substring compared casefolded (`ß` is `ss`); the sweep offers the engine
    every event recording would route, also where PostgreSQL's own case-insensitive match differs."""
    earlier = unattributed(agent="drafter", signal=signal)
    matter = new_matter(api, "2025-001")
    new_rule(api, matter, signalPattern=pattern)
    later = record(agent="drafter", signal=signal)
    assert api.post("/v1/matter-rules/apply").json()["assigned"] == 1
    assert [matter_of(earlier), matter_of(later)] == [(matter["id"], "rule")] * 2


def test_apply_follows_rule_order_and_skips_events_that_already_have_a_matter(api, record, unattributed):
    tagged = new_matter(api, "TAGGED")
    low = new_matter(api, "LOW")
    high = new_matter(api, "HIGH")
    already = record(tag="TAGGED", agent="drafter")
    swept = unattributed(agent="drafter", customer="acme")
    new_rule(api, high, agentCode="drafter", priority=100)
    new_rule(api, low, customerExternalId="acme", priority=1)
    assert apply_all(api) == 1
    assert matter_of(already) == (tagged["id"], "tag")
    assert matter_of(swept) == (low["id"], "rule")


def test_apply_with_no_rules_assigns_nothing(api, unattributed):
    unattributed()
    assert api.post("/v1/matter-rules/apply").json()["assigned"] == 0


def test_apply_stops_after_the_per_call_bound_and_a_later_call_finishes(api, settings, unattributed):
    settings.MATTERS_APPLY_EVENTS_PER_CALL = 2
    matter = new_matter(api, "2025-001")
    events = [unattributed(agent="drafter") for _ in range(5)]
    for n in range(3):  # events no rule matches never hold the sweep back
        unattributed(agent=f"nobody-{n}")
    new_rule(api, matter, agentCode="drafter")
    counts = [api.post("/v1/matter-rules/apply").json()["assigned"] for _ in range(4)]
    assert counts == [2, 2, 1, 0]
    assert [matter_of(event) for event in events] == [(matter["id"], "rule")] * 5


def test_candidates_the_engine_turns_down_never_stop_a_call_before_the_matching_ones(api, settings, unattributed):
    """Names outside ASCII are offered to the engine whatever the pattern (PostgreSQL's case-insensitive match is not
    casefolding): counted against the per-call bound, calls made in turn stopped on the same four German names and
    answered 0, the two matching events left unassigned."""
    settings.MATTERS_APPLY_EVENTS_PER_CALL = 2
    settings.MATTERS_APPLY_CHUNK_SIZE = 2
    matter = new_matter(api, "2025-001")
    for _ in range(4):
        unattributed(signal="Vertragsprüfung")
    matching = [unattributed(signal="contract review") for _ in range(2)]
    new_rule(api, matter, signalPattern="review")
    assert api.post("/v1/matter-rules/apply").json()["assigned"] == 2
    assert [matter_of(event) for event in matching] == [(matter["id"], "rule")] * 2


def test_apply_works_in_chunks_within_one_call(book, settings, unattributed):
    settings.MATTERS_APPLY_CHUNK_SIZE = 2
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, signal_pattern="REP")
    events = [unattributed() for _ in range(5)]
    assert matter_rules_apply(book=book) == 5
    assert [matter_of(event) for event in events] == [(str(matter.id), "rule")] * 5


def test_apply_stops_when_its_time_budget_is_spent(book, settings, unattributed):
    settings.MATTERS_APPLY_CHUNK_SIZE = 2
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="agent-1")
    for _ in range(5):
        unattributed()
    assert matter_rules_apply(book=book, time_budget_seconds=0) == 2  # one chunk, then out of time
    assert matter_rules_apply(book=book) == 3


def test_apply_is_scoped_to_the_callers_organization(api, other_book, book):
    foreign = usage_event(other_book, agent="drafter")
    new_rule(api, new_matter(api, "2025-001"), agentCode="drafter")
    assert apply_all(api) == 0
    assert matter_of(foreign) == (None, None)


def test_deleting_a_rule_keeps_the_matter_of_events_it_attributed(api, record):
    matter = new_matter(api, "2025-001")
    rule = new_rule(api, matter, agentCode="drafter")
    event = record(agent="drafter")
    resp = api.delete(f"/v1/matter-rules/{rule['id']}")
    assert resp.status_code == 200 and resp.json() == {"deleted": True}
    assert matter_of(event) == (matter["id"], "rule")
    assert matter_of(record(agent="drafter")) == (None, None)


# --------------------------------------------------------------------------- the ingestion seam


def seam_queries(book, events):
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        matters_attribute_new_events(book=book, events=events)
    return [query["sql"] for query in queries.captured_queries]


def test_seam_costs_the_same_queries_for_1_and_100_events(book):
    matters = [MatterFactory(book=book) for _ in range(3)]
    for n, matter in enumerate(matters):
        MatterRuleFactory(matter=matter, agent_code=f"agent-{n}", priority=n)
    one = [usage_event(book, agent="agent-1", tag=matters[0].matter_number)]
    tagged = [usage_event(book, tag=matters[n % 3].matter_number) for n in range(50)]
    routed = [usage_event(book, agent=f"agent-{n % 3}") for n in range(30)]
    unmatched = [usage_event(book, agent="nobody", tag="NOPE") for _ in range(20)]
    small, large = seam_queries(book, one), seam_queries(book, tagged + routed + unmatched)
    # one read of rules and tagged matters, one lock of the matters attributed to (a deletion waits for the batch),
    # one bulk insert
    assert len(small) == len(large) == 3
    assert "FOR KEY SHARE" in small[1] and "FOR KEY SHARE" in large[1]
    assert MatterAttribution.objects.filter(event__in=tagged, source="tag").count() == 50
    assert MatterAttribution.objects.filter(event__in=routed, source="rule").count() == 30
    assert not MatterAttribution.objects.filter(event__in=unmatched).exists()


def test_seam_reads_once_and_writes_nothing_when_the_book_has_no_matters(book):
    events = [usage_event(book, tag="2025-001") for _ in range(10)]
    queries = seam_queries(book, events)
    assert len(queries) == 1 and queries[0].startswith("SELECT")
    assert not MatterAttribution.objects.exists()


def test_seam_called_twice_keeps_the_first_attribution_and_a_manual_one(api, book):
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="agent-1")
    chosen = MatterFactory(book=book)
    routed, manual = usage_event(book), usage_event(book)
    api.post("/v1/matters/assign", {"eventId": str(manual.id), "matterId": str(chosen.id)})
    matters_attribute_new_events(book=book, events=[routed, manual])
    matters_attribute_new_events(book=book, events=[routed, manual])
    assert MatterAttribution.objects.filter(event=routed).count() == 1
    assert matter_of(routed) == (str(matter.id), "rule")
    assert matter_of(manual) == (str(chosen.id), "manual")


def test_seam_does_nothing_for_an_empty_batch(book):
    assert seam_queries(book, []) == []


def test_seam_writes_nothing_when_no_event_matches(book):
    MatterRuleFactory(matter=MatterFactory(book=book), agent_code="nobody")
    queries = seam_queries(book, [usage_event(book)])
    assert len(queries) == 1
    assert not MatterAttribution.objects.exists()


# --------------------------------------------------------------------------- concurrency


@pytest.mark.django_db(transaction=True)
def test_concurrent_applies_attribute_each_event_once(org):
    book = book_of(org)
    matter = MatterFactory(book=book)
    MatterRuleFactory(matter=matter, agent_code="agent-1")
    events = [usage_event(book, usage_date=clock.now() - timedelta(minutes=n)) for n in range(40)]
    results, start = [], threading.Barrier(3)

    def sweep():
        start.wait()
        try:
            results.append(matter_rules_apply(book=book))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=sweep) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3 and sum(results) == 40  # every event counted by exactly one sweep
    assert MatterAttribution.objects.filter(event__in=events, source=AttributionSource.RULE).count() == 40
