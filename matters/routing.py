"""Matter attribution as a pure function of plain values (spec §3 "Matter attribution", §4 rule matching).

No ORM, no clock, no settings: selectors adapt rows into `Rule` and `EventFacts`, services write the
`Attribution` this module decides. Precedence, strongest first: manual (decided by the caller, which
never asks this module about an event that already has a manual decision), tag, routing rule.
"""
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

TAG, RULE = "tag", "rule"


@dataclass(frozen=True)
class Rule:
    id: UUID
    matter_id: UUID
    priority: int
    created_at: datetime
    agent_code: str | None = None
    customer_external_id: str | None = None
    signal_pattern: str | None = None


@dataclass(frozen=True)
class EventFacts:
    """What attribution reads of a usage event: the names it was recorded with and its tag."""

    agent_code: str
    customer_external_id: str
    signal_name: str
    tag: str | None = None


@dataclass(frozen=True)
class Attribution:
    matter_id: UUID
    source: str  # TAG or RULE


def tag_of(metadata) -> str | None:
    """`metadata.matterId` as a matter number: a non-empty string, or a whole number written as text."""
    if not isinstance(metadata, dict):
        return None
    tag = metadata.get("matterId")
    if isinstance(tag, bool):
        return None
    if isinstance(tag, int):
        return str(tag)
    return tag if isinstance(tag, str) and tag else None


def evaluation_order(rules: Iterable[Rule]) -> list[Rule]:
    """Lowest priority first; the older rule first on ties (id keeps the order total)."""
    return sorted(rules, key=lambda rule: (rule.priority, rule.created_at, str(rule.id)))


def rule_matches(rule: Rule, event: EventFacts) -> bool:
    """Every matcher set on the rule matches; a rule without matchers matches nothing."""
    if rule.agent_code is None and rule.customer_external_id is None and rule.signal_pattern is None:
        return False
    if rule.agent_code is not None and rule.agent_code != event.agent_code:
        return False
    if rule.customer_external_id is not None and rule.customer_external_id != event.customer_external_id:
        return False
    if rule.signal_pattern is not None and rule.signal_pattern.casefold() not in event.signal_name.casefold():
        return False
    return True


def first_matching_rule(ordered_rules: Sequence[Rule], event: EventFacts) -> Rule | None:
    return next((rule for rule in ordered_rules if rule_matches(rule, event)), None)


def attribute(event: EventFacts, *, ordered_rules: Sequence[Rule],
              matter_ids_by_number: Mapping[str, UUID]) -> Attribution | None:
    """The matter an unattributed event belongs to: its tag when the tag names a matter, else the first
    matching rule (rules in `evaluation_order`), else None (Unassigned). An unknown tag is dropped."""
    if event.tag is not None and event.tag in matter_ids_by_number:
        return Attribution(matter_ids_by_number[event.tag], TAG)
    rule = first_matching_rule(ordered_rules, event)
    return Attribution(rule.matter_id, RULE) if rule is not None else None
