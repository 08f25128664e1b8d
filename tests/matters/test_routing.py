"""The pure routing engine (matters/routing.py): matching, evaluation order, tag resolution, precedence."""
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from matters.routing import (RULE, TAG, Attribution, EventFacts, Rule, attribute, evaluation_order,
                             first_matching_rule, rule_matches, tag_of)

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
# Fixed, not random: parametrized ids carry them, and parallel workers must collect the same tests.
MATTER_A, MATTER_B, MATTER_C = (uuid.UUID(f"00000000-0000-4000-8000-00000000000{n}") for n in (1, 2, 3))
EVENT = EventFacts(agent_code="drafter", customer_external_id="acme", signal_name="Contract-Review-Pages")


def rule(matter_id=MATTER_A, priority=100, age=0, **matchers) -> Rule:
    """A rule created `age` minutes after T0."""
    return Rule(id=uuid.uuid4(), matter_id=matter_id, priority=priority, created_at=T0 + timedelta(minutes=age),
                **matchers)


@pytest.mark.parametrize("matchers, matches", [
    ({"agent_code": "drafter"}, True),
    ({"agent_code": "Drafter"}, False),  # agentCode is exact
    ({"agent_code": "draft"}, False),
    ({"customer_external_id": "acme"}, True),
    ({"customer_external_id": "ACME"}, False),  # customerExternalId is exact
    ({"customer_external_id": "acme-2"}, False),
    ({"signal_pattern": "review"}, True),  # case-insensitive substring
    ({"signal_pattern": "CONTRACT-REVIEW-PAGES"}, True),
    ({"signal_pattern": "pages"}, True),
    ({"signal_pattern": "invoice"}, False),
    ({"agent_code": "drafter", "customer_external_id": "acme"}, True),  # every matcher set must match
    ({"agent_code": "drafter", "customer_external_id": "globex"}, False),
    ({"agent_code": "drafter", "customer_external_id": "acme", "signal_pattern": "review"}, True),
    ({"agent_code": "drafter", "customer_external_id": "acme", "signal_pattern": "memo"}, False),
    ({"agent_code": "other", "signal_pattern": "review"}, False),
    ({}, False),  # a rule without matchers matches nothing
])
def test_rule_matches_only_when_every_matcher_set_matches(matchers, matches):
    assert rule_matches(rule(**matchers), EVENT) is matches


def test_evaluation_order_is_lowest_priority_first_then_older_rule_first():
    newer_low = rule(priority=10, age=5)
    older_low = rule(priority=10, age=1)
    high = rule(priority=200, age=0)
    default = rule(priority=100, age=0)
    negative = rule(priority=-1, age=9)
    assert evaluation_order([high, newer_low, default, older_low, negative]) == [
        negative, older_low, newer_low, default, high]


@pytest.mark.parametrize("rules, expected_matter", [
    ([rule(MATTER_A, 50, agent_code="drafter"), rule(MATTER_B, 10, agent_code="drafter")], MATTER_B),
    ([rule(MATTER_A, 10, age=2, agent_code="drafter"), rule(MATTER_B, 10, age=1, signal_pattern="review")], MATTER_B),
    ([rule(MATTER_A, 10, agent_code="nobody"), rule(MATTER_B, 20, customer_external_id="acme")], MATTER_B),
    ([rule(MATTER_A, 10, agent_code="nobody")], None),
    ([], None),
])
def test_first_match_in_evaluation_order_wins(rules, expected_matter):
    found = first_matching_rule(evaluation_order(rules), EVENT)
    assert (found.matter_id if found else None) == expected_matter


@pytest.mark.parametrize("metadata, tag", [
    ({"matterId": "2024-001"}, "2024-001"),
    ({"matterId": 1234}, "1234"),  # a whole number names the matter numbered with its digits
    ({"matterId": ""}, None),
    ({"matterId": None}, None),
    ({"matterId": True}, None),
    ({"matterId": 1.5}, None),
    ({"matterId": {"nested": "x"}}, None),
    ({"other": "x"}, None),
    ({}, None),
    (None, None),
    (["matterId"], None),
])
def test_tag_is_metadata_matter_id_as_text(metadata, tag):
    assert tag_of(metadata) == tag


@pytest.mark.parametrize("tag, rules, expected", [
    # a known tag wins over a matching rule
    ("M-1", [rule(MATTER_B, 1, agent_code="drafter")], Attribution(MATTER_A, TAG)),
    # an unknown tag is dropped and the event falls through to rules
    ("M-404", [rule(MATTER_B, 1, agent_code="drafter")], Attribution(MATTER_B, RULE)),
    # ... and stays Unassigned when no rule matches
    ("M-404", [rule(MATTER_B, 1, agent_code="nobody")], None),
    # the tag is a matter number, never a matter's UUID
    (str(MATTER_C), [], None),
    (None, [rule(MATTER_C, 1, signal_pattern="PAGES")], Attribution(MATTER_C, RULE)),
    (None, [], None),
])
def test_attribute_prefers_a_known_tag_then_the_first_matching_rule(tag, rules, expected):
    event = EventFacts(agent_code="drafter", customer_external_id="acme", signal_name="pages", tag=tag)
    decision = attribute(event, ordered_rules=evaluation_order(rules), matter_ids_by_number={"M-1": MATTER_A})
    assert decision == expected
