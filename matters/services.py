"""Writes of the matters app: matters, routing rules and event attribution (spec §3, §4 "Matters").

Attribution invariants every writer keeps:
- an event has at most one `MatterAttribution` row (one-to-one on the event); the database referees;
- a row, once written, is the event's attribution history: it is re-pointed, never deleted, so
  apply-rules (which only inserts rows for events that have none) never sweeps back a manual
  unassignment or the events of a deleted matter;
- a manual decision is written with an upsert and is the only writer that overwrites a row.
"""
import operator
import time
from functools import reduce
from uuid import UUID

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.db.models.functions import Now

from accounts.models import Membership
from core.errors import BadRequest, Conflict
from core.progress import NO_PROGRESS, Progress
from core.scoping import existing_row_save, get_owned, not_found, owned
from jobs.models import Job, JobKind, JobStatus
from jobs.services import (JobProgress, job_create, job_hand_over, job_hand_over_after_failure,
                           job_succeed)
from customers.models import UsageEvent
from matters import routing
from matters.ingestion import attributions_insert_if_absent
from matters.models import AttributionSource, Matter, MatterAttribution, MatterRule

MATCHER_FIELDS = ("agent_code", "customer_external_id", "signal_pattern")
NO_MATCHER_MESSAGE = ("agentCode: A rule needs at least one matcher: agentCode, customerExternalId or "
                      "signalPattern.")


# --------------------------------------------------------------------------- matters

def responsible_user_check(*, book, user_id: UUID | None) -> None:
    """The responsible user must be a member of the matter's organization (400 otherwise)."""
    if user_id is not None and not Membership.objects.filter(
            organization_id=book.organization_id, user_id=user_id).exists():
        raise BadRequest(["responsibleUserId: Not a member of this organization."])


def _save_matter(matter: Matter, *, existing: bool) -> Matter:
    """Insert a new matter, or update an existing one with an UPDATE only (404 when it was deleted meanwhile,
    never recreated); a taken matter number is a 409."""
    try:
        with transaction.atomic():
            if existing:
                existing_row_save(matter)
            else:
                matter.save()
    except IntegrityError:
        if not owned(Matter, matter.book_id).filter(matter_number=matter.matter_number).exclude(pk=matter.pk).exists():
            raise
        raise Conflict(f"matterNumber: A matter with number {matter.matter_number!r} already exists.")
    return matter


def matter_create(*, book, matter_number: str, name: str, client_name: str, status: str,
                  responsible_user_id: UUID | None = None) -> Matter:
    """A new matter; its number is unique per book (409 otherwise)."""
    responsible_user_check(book=book, user_id=responsible_user_id)
    return _save_matter(Matter(book=book, matter_number=matter_number, name=name, client_name=client_name,
                               status=status, responsible_user_id=responsible_user_id), existing=False)


@transaction.atomic
def matter_update(*, book, matter_id, changes: dict) -> Matter:
    """Change only the fields in `changes` (a PATCH body, snake_case); `responsible_user_id: None` clears.
    A matter deleted meanwhile is a 404: the row is held until commit (a concurrent delete waits, or committed
    first and this reads nothing) and never inserted again."""
    # FOR NO KEY UPDATE, the lock the UPDATE takes anyway: nothing waits for it that would not wait for the save.
    matter = get_owned(Matter, book, matter_id, queryset=owned(Matter, book).select_for_update(no_key=True))
    if "responsible_user_id" in changes:
        responsible_user_check(book=book, user_id=changes["responsible_user_id"])
    for field, value in changes.items():
        setattr(matter, field, value)
    return _save_matter(matter, existing=True)


@transaction.atomic
def matter_delete(*, book, matter_id) -> tuple[int, int]:
    """Delete a matter: its events return to Unassigned (their rows stay as history, so apply-rules
    leaves them alone) and its routing rules are deleted. Returns (events returned, rules deleted)."""
    matter = get_owned(Matter, book, matter_id, queryset=owned(Matter, book).select_for_update())
    # The rows locked before they are counted: an assignment moving one of them elsewhere meanwhile is either done
    # (the row no longer the matter's) or waits, so the count is what the update returns to Unassigned.
    held = list(owned(MatterAttribution, book).filter(matter=matter).select_for_update().values_list("pk", flat=True))
    attributions = owned(MatterAttribution, book).filter(pk__in=held)
    # The events returned are those in the ledger, as the matter's eventCount counts them: a row whose event left
    # with an archived month is returned too (found again if the month is restored) but is no event now.
    events_returned = attributions.filter(event__usage_date__isnull=False).count()
    attributions.update(matter=None, source=None, updated_at=Now())
    rules_deleted, _ = owned(MatterRule, book).filter(matter=matter).delete()
    matter.delete()
    return events_returned, rules_deleted


def _locked_matter(*, book, matter_id) -> Matter:
    """The matter, locked against deletion until the caller's transaction ends (so a row we write that
    points at it cannot fail its foreign key at commit); 404 when absent."""
    return get_owned(Matter, book, matter_id, queryset=owned(Matter, book).select_for_update(no_key=True))


# --------------------------------------------------------------------------- manual assignment

@transaction.atomic
def matter_assign(*, book, event_id, matter_id, assigned_by: str) -> MatterAttribution:
    """Manually file an event under a matter, or unassign it (`matter_id` None). Manual wins over tag and
    rules and is never overwritten by them; an unassignment is remembered so apply-rules skips it."""
    event = get_owned(UsageEvent, book, event_id)
    matter = _locked_matter(book=book, matter_id=matter_id) if matter_id is not None else None
    attribution = MatterAttribution(book=book, event=event, matter=matter, source=AttributionSource.MANUAL,
                                    assigned_by=assigned_by)
    MatterAttribution.objects.bulk_create(
        [attribution], update_conflicts=True, unique_fields=["event"],
        update_fields=["matter", "source", "assigned_by", "updated_at"])
    return attribution


# --------------------------------------------------------------------------- routing rules

def rule_matchers_check(rule: MatterRule) -> None:
    """A routing rule needs at least one matcher (400 otherwise)."""
    if all(getattr(rule, field) is None for field in MATCHER_FIELDS):
        raise BadRequest([NO_MATCHER_MESSAGE])


@transaction.atomic
def matter_rule_create(*, book, matter_id, priority: int = 100, agent_code: str | None = None,
                       customer_external_id: str | None = None, signal_pattern: str | None = None) -> MatterRule:
    """A routing rule for a matter of this book; it needs at least one matcher (400)."""
    rule = MatterRule(book=book, priority=priority, agent_code=agent_code,
                      customer_external_id=customer_external_id, signal_pattern=signal_pattern)
    rule_matchers_check(rule)
    rule.matter = _locked_matter(book=book, matter_id=matter_id)
    rule.save()
    return rule


@transaction.atomic
def matter_rule_update(*, book, rule_id, changes: dict) -> MatterRule:
    """Change only the fields in `changes`; a matcher set to None is cleared, but one must remain (400).
    Events already attributed keep their matter: rules only decide for events without one. A rule deleted
    meanwhile is a 404, never recreated."""
    rule = _locked_rule(book=book, rule_id=rule_id, moving_to=changes.pop("matter_id", None))
    for field, value in changes.items():
        setattr(rule, field, value)
    rule_matchers_check(rule)
    existing_row_save(rule)
    return rule


def _locked_rule(*, book, rule_id, moving_to) -> MatterRule:
    """The rule, locked, with its matter and the one it moves to (`moving_to`, set as its matter; 404 when absent)
    locked before it, in id order: a matter's delete locks the matter, then its rules, so the opposite order could
    deadlock with it. Unlocked, two PATCHes of one rule each wrote back the fields the other changed, and each checked
    its matchers against the other's stale ones. A rule moved to another matter between the read that finds its
    matter and the lock is read again; one deleted meanwhile is a 404."""
    for _ in range(3):
        matter_id = get_owned(MatterRule, book, rule_id).matter_id
        wanted = {str(matter_id), *([str(moving_to)] if moving_to is not None else [])}
        matters = {str(matter.pk): matter for matter in
                   owned(Matter, book).select_for_update(no_key=True).filter(pk__in=wanted).order_by("pk")}
        if moving_to is not None and str(moving_to) not in matters:
            raise not_found(Matter)
        rule = get_owned(MatterRule, book, rule_id,
                         queryset=owned(MatterRule, book).select_for_update(no_key=True).select_related("matter"))
        if str(rule.matter_id) in matters:
            if moving_to is not None:
                rule.matter = matters[str(moving_to)]
            return rule
    raise Conflict("The rule moved to another matter while this change waited; send it again.")


@transaction.atomic
def matter_rule_delete(*, book, rule_id) -> None:
    """Delete a rule; events it already attributed keep their matter. The rule is locked first, so a PATCH
    arriving meanwhile waits and finds it gone (404)."""
    get_owned(MatterRule, book, rule_id, queryset=owned(MatterRule, book).select_for_update()).delete()


# --------------------------------------------------------------------------- the rules applied to stored events
# (new events are attributed as they are recorded: matters/ingestion.py)

# PostgreSQL's regular expression for a text holding a character outside ASCII.
NON_ASCII_PATTERN = r"[^\x01-\x7f]"


def _matches_any_rule(rules: list[routing.Rule]) -> Q:
    """SQL narrowing to events some rule matches (the routing engine still decides which rule wins)."""
    def matchers(rule: routing.Rule) -> Q:
        condition = Q()
        if rule.agent_code is not None:
            condition &= Q(agent_code=rule.agent_code)
        if rule.customer_external_id is not None:
            condition &= Q(customer_external_id=rule.customer_external_id)
        if rule.signal_pattern is not None:
            # The engine compares casefolded text, which PostgreSQL's case-insensitive match does not (`Straße`
            # holds `strasse` once casefolded): on an ASCII name the two agree for the casefolded pattern, and a
            # name with any other character is left to the engine.
            condition &= (Q(signal_name__icontains=rule.signal_pattern.casefold())
                          | Q(signal_name__regex=NON_ASCII_PATTERN))
        return condition
    return reduce(operator.or_, (matchers(rule) for rule in rules))


def _rules_in_order(book) -> list[routing.Rule]:
    return routing.evaluation_order(
        routing.Rule(id=rule.id, matter_id=rule.matter_id, priority=rule.priority, created_at=rule.created_at,
                     agent_code=rule.agent_code, customer_external_id=rule.customer_external_id,
                     signal_pattern=rule.signal_pattern)
        for rule in owned(MatterRule, book))


def _sweep_candidates(book, ordered_rules: list[routing.Rule]):
    """Events with no attribution history that some rule matches, in id order."""
    return (owned(UsageEvent, book).filter(matter_attribution__isnull=True)
            .filter(_matches_any_rule(ordered_rules)).order_by("id"))


def _apply_rules_to_chunk(*, book, after_id: UUID | None, size: int,
                          progress: Progress = NO_PROGRESS) -> tuple[int, int, list[UUID]]:
    """Attribute by rule the next `size` never-attributed events (in id order, after `after_id`) that some
    rule matches, and report them to `progress` in the same transaction. Returns (events assigned, events the
    engine matched, ids of the events examined)."""
    with transaction.atomic():
        # Lock the matters that have rules, so none is deleted (nor its rules changed by a concurrent
        # apply) while this chunk writes rows pointing at it; ingestion does not wait for this lock.
        list(owned(Matter, book).filter(id__in=owned(MatterRule, book).values("matter_id"))
             .select_for_update(no_key=True).order_by("id").values_list("id", flat=True))
        ordered_rules = _rules_in_order(book)
        if not ordered_rules:
            return 0, 0, []
        candidates = _sweep_candidates(book, ordered_rules)
        if after_id is not None:
            candidates = candidates.filter(id__gt=after_id)
        chunk = list(candidates.values_list("id", "agent_code", "customer_external_id", "signal_name")[:size])
        decisions = []
        for event_id, agent_code, customer_external_id, signal_name in chunk:
            rule = routing.first_matching_rule(ordered_rules, routing.EventFacts(
                agent_code=agent_code, customer_external_id=customer_external_id, signal_name=signal_name))
            if rule is not None:
                decisions.append((event_id, rule.matter_id, AttributionSource.RULE))
        assigned = attributions_insert_if_absent(book=book, decisions=decisions)
        if chunk:
            progress.advance(len(chunk), through=chunk[-1][0], changed=assigned)
        return assigned, len(decisions), [event_id for event_id, *_ in chunk]


def matter_rules_apply(*, book, events_per_call: int | None = None, time_budget_seconds: float | None = None) -> int:
    """Sweep events that have no matter and no attribution history through the routing rules.

    Works in chunks, each its own transaction, and stops after `events_per_call` events the engine matched
    (MATTERS_APPLY_EVENTS_PER_CALL) or once `time_budget_seconds` (MATTERS_APPLY_TIME_BUDGET_SECONDS)
    have passed; returns how many events it assigned, so a caller runs it again until it answers 0.
    Safe to run concurrently: each event is attributed at most once.
    """
    return _sweep(book=book, events_per_call=events_per_call, time_budget_seconds=time_budget_seconds)[0]


def _sweep(*, book, events_per_call: int | None = None, time_budget_seconds: float | None = None,
           progress: Progress = NO_PROGRESS) -> tuple[int, bool]:
    """`matter_rules_apply`, reporting each chunk to `progress`: (events assigned, whether it went through every
    candidate rather than stopping at its bound)."""
    events_per_call = events_per_call or settings.MATTERS_APPLY_EVENTS_PER_CALL
    budget = settings.MATTERS_APPLY_TIME_BUDGET_SECONDS if time_budget_seconds is None else time_budget_seconds
    # Elapsed time of this call, not a point in time: a monotonic timer rather than the wall clock.
    started = time.monotonic()
    # A job's background run goes on after the last event its earlier runs (the request's bounded part, a run
    # whose runner was lost) examined; its answer counts only what this call assigns.
    # The bound counts the events the engine matched: candidates it turns down (a name with a character outside
    # ASCII is offered to it whatever the pattern) stay candidates, and counted, calls made in turn would stop on the
    # same ones and answer 0 with matching events still unassigned. The time budget bounds a call anyway.
    assigned, matched, after_id = 0, 0, progress.resumed.after
    while matched < events_per_call:
        size = min(settings.MATTERS_APPLY_CHUNK_SIZE, events_per_call - matched)
        chunk_assigned, chunk_matched, examined_ids = _apply_rules_to_chunk(book=book, after_id=after_id, size=size,
                                                                            progress=progress)
        assigned += chunk_assigned
        matched += chunk_matched
        if len(examined_ids) < size:
            return assigned, True
        if time.monotonic() - started >= budget:
            break
        after_id = examined_ids[-1]
    return assigned, False


def matter_rules_apply_start(*, book, created_by: str = "") -> tuple[int, Job]:
    """Apply the rules as a job: this call sweeps within its bounds (as `matter_rules_apply`) and, when it stops
    before the end, hands the rest to the background (a Celery task, or this process's runner without a broker).
    Returns (events this call assigned, the job)."""
    job = job_create(book=book, kind=JobKind.MATTER_RULES_APPLY, task_path="matters.tasks.matter_rules_apply_task", task_args=(book.pk,),
                     created_by=created_by, status=JobStatus.RUNNING)
    try:
        assigned, finished = _sweep(book=book, progress=JobProgress(job))
        if finished:
            job_succeed(job, {"assigned": assigned})
        else:
            # The background run goes on after the last event this call examined and adds to what it assigned
            # (both written to the job with each chunk: `resume_after`, `changed`).
            job_hand_over(job)
    except Exception:
        # The job's row and every chunk before the failure are committed, so the request does not answer 5xx
        # (contract.md "Derived figures"): the sweep goes on in the background from its last committed chunk
        # (PostgreSQL gone mid-run, a lock timeout), as `job_run_inline` does for the other jobs. It answers what
        # the committed chunks assigned (0 when that cannot be read either).
        if not job_hand_over_after_failure(job):
            return 0, job
        try:
            job.refresh_from_db(fields=["changed", "resume_after", "done"])
        except Exception:
            return 0, job
        return job.changed, job
    return assigned, job


def matter_rules_apply_rest(*, book, assigned_before: int = 0):
    """The background part of a rules sweep as a job's work: every remaining candidate, with no bound.
    `assigned_before`: what the request assigned, for a job handed over before jobs kept that count."""
    def work(progress: Progress) -> dict:
        ordered_rules = _rules_in_order(book)
        progress.expect(progress.resumed.rest(_sweep_candidates(book, ordered_rules)).count() if ordered_rules else 0)
        assigned, _ = _sweep(book=book, events_per_call=2**62, time_budget_seconds=float("inf"), progress=progress)
        return {"assigned": assigned_before + progress.resumed.changed + assigned}
    return work
