"""Long work as jobs a person can watch (jobs): the operations that start them answer a `jobId`, and
GET /v1/jobs/{id} reads its status and progress, written by the chunked loops once per chunk."""
import time
from datetime import timedelta
from decimal import Decimal

import pytest
from django.conf import settings

from billing.followup import in_process as usage_followup
from core import clock
from core.redis_client import redis_client
from jobs.models import Job
from catalog.models import PriceOverride
from jobs.services import JobProgress, job_take, jobs_housekeeping, watching
from customers import backfill, price_overrides
from matters import services as matter_services
from customers.models import UsageEvent
from matters.models import MatterAttribution
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db

MODEL = {"model": "house-model-v2", "modelProvider": "inhouse"}


@pytest.fixture
def llm(db):
    return ServiceEntryFactory(canonical_name="mapped-llm", provider="mapai", input_cost=Decimal("0.000002"),
                               output_cost=Decimal("0.00001"))


def record_unknown(api, count: int):
    """`count` events of a model the catalog does not know, stored with cost null (1000 in, 100 out: 0.003 USD
    each once mapped onto `llm`)."""
    records = [{"customerExternalId": "c", "agentCode": "a", "signalName": "s", **MODEL, "inputTokens": 1000,
                "outputTokens": 100} for _ in range(count)]
    resp = api.post("/v1/usage/record", {"records": records})
    assert resp.status_code == 200 and len(resp.json()["results"]["failed"]) == count, resp.json()


def map_model(api, llm):
    resp = api.post("/v1/events/map-model", {**MODEL, "serviceId": str(llm.id)})
    assert resp.status_code == 201, resp.json()
    return resp.json()


def job_of(api, job_id) -> dict:
    resp = api.get(f"/v1/jobs/{job_id}")
    assert resp.status_code == 200, resp.json()
    return resp.json()


def test_a_backfill_in_the_background_is_a_job_read_to_its_end(api, llm, settings, monkeypatch,
                                                                django_capture_on_commit_callbacks):
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 1
    monkeypatch.setattr(backfill, "BACKFILL_CHUNK", 2)
    record_unknown(api, 5)
    reports = []
    # Celery runs eagerly in the suite: the task executes on commit, as a worker would.
    with (watching(lambda job: reports.append((job.status, job.done, job.total))),
          django_capture_on_commit_callbacks(execute=True)):
        body = map_model(api, llm)
        queued = job_of(api, body["jobId"])
    assert body["backfill"] == {"eventsWaiting": 5, "eventsPriced": 0, "scheduled": True}
    assert (queued["status"], queued["done"], queued["total"], queued["startedAt"]) == ("queued", 0, 5, None)
    # One report when the work counts what is left, one per chunk of 2, then the end.
    assert reports == [("running", 0, 5), ("running", 2, 5), ("running", 4, 5), ("running", 5, 5),
                       ("succeeded", 5, 5)]
    job = job_of(api, body["jobId"])
    assert {key: job[key] for key in ("id", "kind", "status", "done", "total", "percent", "result", "error")} == {
        "id": body["jobId"], "kind": "cost_backfill", "status": "succeeded", "done": 5, "total": 5, "percent": 100,
        "result": {"eventsPriced": 5}, "error": None}
    assert job["createdAt"] <= job["startedAt"] <= job["finishedAt"]
    assert set(UsageEvent.objects.values_list("usage_cost", flat=True)) == {Decimal("0.003")}


def test_an_inline_backfill_answers_its_finished_job(api, llm):
    record_unknown(api, 2)
    body = map_model(api, llm)
    assert body["backfill"] == {"eventsWaiting": 2, "eventsPriced": 2, "scheduled": False}
    job = job_of(api, body["jobId"])
    assert (job["status"], job["done"], job["total"], job["percent"], job["result"]) == (
        "succeeded", 2, 2, 100, {"eventsPriced": 2})


def test_a_failed_job_says_failed_with_its_error_and_keeps_what_it_did(api, llm, settings, monkeypatch,
                                                                      django_capture_on_commit_callbacks):
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 1
    monkeypatch.setattr(backfill, "BACKFILL_CHUNK", 2)
    record_unknown(api, 5)
    price_and_save, calls = backfill._price_and_save, []

    def second_chunk_breaks(book, events, **options):
        calls.append(len(events))
        if len(calls) == 2:
            raise RuntimeError("the disk is full")
        return price_and_save(book, events, **options)
    monkeypatch.setattr(backfill, "_price_and_save", second_chunk_breaks)
    with django_capture_on_commit_callbacks(execute=True):
        body = map_model(api, llm)
    job = job_of(api, body["jobId"])
    assert (job["status"], job["done"], job["total"], job["percent"], job["result"]) == ("failed", 2, 5, 40, None)
    assert job["error"] == (f"The work stopped on an unexpected error (RuntimeError); the log has its details under "
                            f"job {body['jobId']}. Items done so far stay done; starting the operation again does "
                            f"the rest.")
    assert job["finishedAt"] is not None
    assert UsageEvent.objects.filter(usage_cost__isnull=False).count() == 2  # the first chunk stays priced


def test_a_job_of_another_book_is_not_found(api, other_api, client_for, llm):
    job_id = map_model(api, llm)["jobId"]
    missing = other_api.get("/v1/jobs/00000000-0000-0000-0000-000000000000")
    for client in (other_api, client_for(environment="live")):
        resp = client.get(f"/v1/jobs/{job_id}")
        assert resp.status_code == 404 and resp.json() == missing.json() == {"message": "Job not found"}
    assert api.get("/v1/jobs/not-a-uuid").status_code == 404


def test_a_legal_key_reads_a_rules_sweep_and_no_pricing_job_and_an_ingest_key_neither(api, client_for, llm):
    # A legal key reaches matters, not usage events or pricing (spec 5.5): a map-model job's counts were a 200.
    five_drafter_events_and_their_rule(api)
    sweep_id = api.post("/v1/matter-rules/apply").json()["jobId"]
    pricing_id = map_model(api, llm)["jobId"]
    legal, ingest = client_for(scope="legal"), client_for(scope="ingest")
    assert legal.get(f"/v1/jobs/{sweep_id}").status_code == 200
    refused = legal.get(f"/v1/jobs/{pricing_id}")
    assert refused.status_code == 403 and "legal key" in refused.json()["message"]
    for job_id in (sweep_id, pricing_id):
        refused = ingest.get(f"/v1/jobs/{job_id}")
        assert refused.status_code == 403 and "message" in refused.json()


def five_drafter_events_and_their_rule(api) -> dict:
    """Seven events, five of agent `drafter`, and a matter with a rule for that agent: a sweep assigns five."""
    records = [{"customerExternalId": "c", "agentCode": "drafter" if n < 5 else "other", "signalName": "memo",
                "model": "gpt-4o", "modelProvider": "openai", "inputTokens": 10} for n in range(7)]
    resp = api.post("/v1/usage/record", {"records": records})
    assert resp.status_code == 200, resp.json()
    matter = api.post("/v1/matters", {"matterNumber": "2025-001", "name": "Smith v Jones",
                                      "clientName": "Smith & Co"}).json()
    assert api.post("/v1/matter-rules", {"matterId": matter["id"], "agentCode": "drafter"}).status_code == 201
    return matter


def test_a_rules_sweep_goes_on_in_the_background_as_its_job(api, settings, django_capture_on_commit_callbacks):
    settings.MATTERS_APPLY_EVENTS_PER_CALL = 2
    settings.MATTERS_APPLY_CHUNK_SIZE = 2
    matter = five_drafter_events_and_their_rule(api)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post("/v1/matter-rules/apply")
    assert resp.status_code == 201 and resp.json()["assigned"] == 2  # this call's bound; the rest goes on
    job = job_of(api, resp.json()["jobId"])
    assert (job["kind"], job["status"], job["done"], job["total"], job["result"]) == (
        "matter_rules_apply", "succeeded", 5, 5, {"assigned": 5})
    assert MatterAttribution.objects.filter(matter_id=matter["id"], source="rule").count() == 5


def test_a_sweep_failing_after_a_committed_chunk_answers_it_and_goes_on_in_the_background(
        api, settings, monkeypatch, django_capture_on_commit_callbacks):
    # contract.md "Derived figures": a request whose writes committed never answers 5xx. The first chunk and the
    # job are committed when the second chunk's statement fails (PostgreSQL gone, a lock timeout).
    from django.db import OperationalError
    settings.MATTERS_APPLY_EVENTS_PER_CALL = 10
    settings.MATTERS_APPLY_CHUNK_SIZE = 2
    matter = five_drafter_events_and_their_rule(api)
    real, calls = matter_services.attributions_insert_if_absent, []

    def second_chunk_fails(**kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise OperationalError("server closed the connection unexpectedly")
        return real(**kwargs)
    monkeypatch.setattr(matter_services, "attributions_insert_if_absent", second_chunk_fails)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post("/v1/matter-rules/apply")
    assert resp.status_code == 201 and resp.json()["assigned"] == 2  # the committed chunk
    job = job_of(api, resp.json()["jobId"])
    assert (job["status"], job["done"], job["total"], job["result"]) == ("succeeded", 5, 5, {"assigned": 5})
    assert MatterAttribution.objects.filter(matter_id=matter["id"], source="rule").count() == 5


def test_a_sweep_that_ends_within_its_call_answers_its_finished_job(api):
    resp = api.post("/v1/matter-rules/apply")
    job = job_of(api, resp.json()["jobId"])
    assert resp.json()["assigned"] == 0
    assert (job["status"], job["done"], job["total"], job["percent"], job["result"]) == (
        "succeeded", 0, 0, 100, {"assigned": 0})


@pytest.fixture
def without_redis(settings):
    """The zero-setup configuration: no REDIS_URL, so no broker and no worker."""
    settings.REDIS_URL = ""
    redis_client.cache_clear()
    yield
    usage_followup.flush()  # what recording left to this process's runner, while the test database is there
    redis_client.cache_clear()


@pytest.mark.django_db(transaction=True)
def test_without_a_broker_the_job_runs_in_the_web_process_after_the_answer(api, llm, settings, without_redis):
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 1
    record_unknown(api, 3)
    body = map_model(api, llm)
    deadline = time.monotonic() + 30
    while (job := job_of(api, body["jobId"]))["status"] not in ("succeeded", "failed"):
        assert time.monotonic() < deadline, job
        time.sleep(0.05)
    assert (job["status"], job["done"], job["total"], job["result"]) == ("succeeded", 3, 3, {"eventsPriced": 3})
    assert not UsageEvent.objects.filter(usage_cost__isnull=True).exists()
    assert Job.objects.get().attempts == 1


def test_housekeeping_restarts_a_job_whose_runner_was_lost_and_deletes_old_finished_ones(api, book, llm, settings):
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 1
    record_unknown(api, 3)
    job_id = map_model(api, llm)["jobId"]  # its task is never sent here (the commit never comes): a lost message
    now = clock.now()
    lost_long_ago = now - timedelta(seconds=settings.JOBS_STALE_SECONDS + 1)
    Job.objects.filter(pk=job_id).update(updated_at=lost_long_ago)
    given_up = Job.objects.create(book=book, kind="cost_reprice", status="running", attempts=settings.JOBS_MAX_ATTEMPTS,
                                  task_path=Job.objects.get(pk=job_id).task_path)
    taskless = Job.objects.create(book=book, kind="cost_reprice", status="running", attempts=1)
    Job.objects.filter(pk__in=[given_up.pk, taskless.pk]).update(updated_at=lost_long_ago)
    recent = Job.objects.create(book=book, kind="cost_reprice", status="running", attempts=1)
    old = Job.objects.create(book=book, kind="cost_reprice", status="succeeded",
                             finished_at=now - timedelta(days=settings.JOBS_KEEP_DAYS, seconds=1))
    assert jobs_housekeeping(now=now) == {"restarted": 1, "failed": 2, "deleted": 1}
    job = job_of(api, job_id)
    assert (job["status"], job["done"], job["total"], job["result"]) == ("succeeded", 3, 3, {"eventsPriced": 3})
    given_up = job_of(api, given_up.pk)
    assert given_up["status"] == "failed" and given_up["error"].startswith("Stopped: its runner was lost 3 times.")
    taskless = job_of(api, taskless.pk)
    assert taskless["status"] == "failed" and "names no task to start again" in taskless["error"]
    assert job_of(api, recent.pk)["status"] == "running"  # it moved lately: its runner is at work
    assert not Job.objects.filter(pk=old.pk).exists()
    assert jobs_housekeeping(now=now) == {"restarted": 0, "failed": 0, "deleted": 0}


def test_a_job_no_runner_took_up_for_a_minute_is_handed_over_by_the_next_housekeeping_not_after_ten(api, book, llm, settings):
    """Made while the broker was down, its message was never published: left to JOBS_STALE_SECONDS, a price
    override's repricing waited 10 to 15 minutes after Redis came back. A job some runner took up is its runner's
    until it has not moved for JOBS_STALE_SECONDS."""
    from jobs.services import UNSTARTED_SECONDS
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 1
    record_unknown(api, 3)
    job_id = map_model(api, llm)["jobId"]  # its task is never sent here (the commit never comes): a lost message
    now = clock.now()
    assert jobs_housekeeping(now=now + timedelta(seconds=UNSTARTED_SECONDS - 1))["restarted"] == 0
    taken = Job.objects.create(book=book, kind="cost_reprice", status="running", attempts=1, task_path="x.y")
    Job.objects.filter(pk=taken.pk).update(updated_at=now)
    assert jobs_housekeeping(now=now + timedelta(seconds=UNSTARTED_SECONDS + 1))["restarted"] == 1
    job = job_of(api, job_id)
    assert (job["status"], job["result"]) == ("succeeded", {"eventsPriced": 3})
    assert Job.objects.get(pk=taken.pk).status == "running"


def test_a_runner_that_stalled_past_its_job_reports_no_second_outcome(book, settings):
    """A runner stalled longer than JOBS_STALE_SECONDS: another one took the job up and finished it, or housekeeping
    gave it up. The stalled runner's outcome is not the job's: one job, one `job.succeeded` or `job.failed`."""
    from jobs.services import job_fail, job_succeed
    from webhooks.models import WebhookEvent
    stale = clock.now() - timedelta(seconds=settings.JOBS_STALE_SECONDS + 1)
    taken_again = Job.objects.create(book=book, kind="cost_reprice", status="queued", task_path="x.y")
    first = job_take(taken_again.pk)
    Job.objects.filter(pk=taken_again.pk).update(updated_at=stale)
    second = job_take(taken_again.pk)
    job_succeed(second, {"eventsPriced": 2})
    job_succeed(first, {"eventsPriced": 1})
    job_fail(first, "late")
    given_up = Job.objects.create(book=book, kind="cost_reprice", status="queued", task_path="x.y")
    runner = job_take(given_up.pk)
    Job.objects.filter(pk=given_up.pk).update(updated_at=stale, attempts=settings.JOBS_MAX_ATTEMPTS)
    jobs_housekeeping(now=clock.now())
    job_succeed(runner, {"eventsPriced": 1})
    assert (Job.objects.get(pk=taken_again.pk).status, Job.objects.get(pk=taken_again.pk).result) == (
        "succeeded", {"eventsPriced": 2})
    assert Job.objects.get(pk=given_up.pk).status == "failed"
    outcomes = sorted((event.type, str(event.data_json).count(str(job_id)))
                      for event in WebhookEvent.objects.filter(type__in=["job.succeeded", "job.failed"])
                      for job_id in (taken_again.pk, given_up.pk) if str(job_id) in event.data_json)
    assert outcomes == [("job.failed", 1), ("job.succeeded", 1)]


# --------------------------------------------------------------------------- a job taken up again


class RunnerLost(Exception):
    """The worker died in a chunk: its transaction rolled back, the chunks before it committed."""


def run_until_the_runner_is_lost(monkeypatch, module, function: str, job_id, work, *, lost_at_call: int):
    """Take the job up and run `work` as its runner would, losing the runner at the `lost_at_call`th call of
    `module.function` (one call a chunk); the job is left running, its last move long ago."""
    real, calls = getattr(module, function), []

    def lost_in_a_chunk(*args, **kwargs):
        calls.append(1)
        if len(calls) == lost_at_call:
            raise RunnerLost()
        return real(*args, **kwargs)

    monkeypatch.setattr(module, function, lost_in_a_chunk)
    with pytest.raises(RunnerLost):
        work(JobProgress(job_take(job_id)))
    monkeypatch.setattr(module, function, real)
    stale = clock.now() - timedelta(seconds=settings.JOBS_STALE_SECONDS + 1)
    Job.objects.filter(pk=job_id).update(updated_at=stale)


def test_a_repricing_for_an_override_taken_up_again_goes_on_where_it_stopped(api, book, settings, monkeypatch):
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 1
    monkeypatch.setattr(backfill, "BACKFILL_CHUNK", 1)  # the chunk loop of every repricing
    records = [{"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "gpt-4o",
                "modelProvider": "openai", "inputTokens": 1_000_000, "outputTokens": 100_000}] * 3  # 3.50 each
    assert api.post("/v1/usage/record", {"records": records}).status_code == 200
    resp = api.post("/v1/price-overrides", {"modelProvider": "openai", "discountPercent": 50})
    assert resp.status_code == 201 and resp.json()["scheduled"], resp.json()  # its task never sent here
    job_id, override = resp.json()["jobId"], PriceOverride.objects.get()
    work = price_overrides.override_reprice_work(book, price_overrides.Target.of(override), None)
    run_until_the_runner_is_lost(monkeypatch, backfill, "_price_and_save", job_id, work, lost_at_call=2)
    lost = Job.objects.get(pk=job_id)
    assert (lost.status, lost.done, lost.total, lost.changed) == ("running", 1, 3, 1)

    assert jobs_housekeeping(now=clock.now())["restarted"] == 1
    job = job_of(api, job_id)
    # Every affected event is walked (none drops out once repriced): walked again from the start, the job
    # read 4 of 3 and answered the 2 events of its second run.
    assert (job["status"], job["done"], job["total"], job["result"]) == ("succeeded", 3, 3, {"eventsRepriced": 3})
    assert Job.objects.get(pk=job_id).attempts == 2
    assert sorted(UsageEvent.objects.values_list("usage_cost", flat=True)) == [Decimal("1.75")] * 3


def test_a_catalog_repricing_taken_up_again_does_not_count_what_it_could_not_price_twice(api, book, monkeypatch):
    monkeypatch.setattr(backfill, "BACKFILL_CHUNK", 1)
    record_unknown(api, 3)  # a model nothing prices: they stay unpriced
    later = {"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "later-llm",
             "modelProvider": "mapai", "inputTokens": 1000, "outputTokens": 100}
    assert api.post("/v1/usage/record", {"records": [later]}).status_code == 200
    ServiceEntryFactory(canonical_name="later-llm", provider="mapai", input_cost=Decimal("0.000002"),
                        output_cost=Decimal("0.00001"))  # the catalog learns it: 0.003 USD
    job_id = backfill.events_reprice_start(book=book).pk  # its task is never sent here (the commit never comes)
    run_until_the_runner_is_lost(monkeypatch, backfill, "_price_and_save", job_id, backfill.reprice_work(book),
                                 lost_at_call=3)
    assert Job.objects.get(pk=job_id).done == 2

    assert jobs_housekeeping(now=clock.now())["restarted"] == 1
    job = job_of(api, job_id)
    # Counted again from the unpriced events, the first two walked (still unpriced, or the priced one) made a
    # total of 5 or 6.
    assert (job["status"], job["done"], job["total"], job["result"]) == ("succeeded", 4, 4, {"eventsPriced": 1})
    assert UsageEvent.objects.get(model="later-llm").usage_cost == Decimal("0.003")


def test_a_rules_sweep_taken_up_again_answers_everything_it_assigned(api, book, settings, monkeypatch):
    settings.MATTERS_APPLY_EVENTS_PER_CALL = 2
    settings.MATTERS_APPLY_CHUNK_SIZE = 2
    matter = five_drafter_events_and_their_rule(api)
    resp = api.post("/v1/matter-rules/apply")  # 2 in the request; the rest handed over, never sent here
    assert resp.status_code == 201 and resp.json()["assigned"] == 2
    job_id = resp.json()["jobId"]
    run_until_the_runner_is_lost(monkeypatch, matter_services, "attributions_insert_if_absent", job_id,
                                 matter_services.matter_rules_apply_rest(book=book), lost_at_call=2)
    assert Job.objects.get(pk=job_id).done == 4

    assert jobs_housekeeping(now=clock.now())["restarted"] == 1
    job = job_of(api, job_id)
    # The request's 2 and the lost run's 2 are counted: the answer was the last run's 1 and the request's 2.
    assert (job["status"], job["done"], job["total"], job["result"]) == ("succeeded", 5, 5, {"assigned": 5})
    assert MatterAttribution.objects.filter(matter_id=matter["id"], source="rule").count() == 5


def test_an_override_job_stored_with_none_as_text_for_every_date_still_runs(api, book, settings):
    """Jobs made before None was kept as None hold "None" for an override of every date."""
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 0
    record = {"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "gpt-4o",
              "modelProvider": "openai", "inputTokens": 1_000_000, "outputTokens": 100_000}
    assert api.post("/v1/usage/record", {"records": [record]}).status_code == 200
    job_id = api.post("/v1/price-overrides", {"modelProvider": "openai", "discountPercent": 50}).json()["jobId"]
    job = Job.objects.get(pk=job_id)
    assert job.task_args[4] is None
    stale = clock.now() - timedelta(seconds=settings.JOBS_STALE_SECONDS + 1)
    Job.objects.filter(pk=job_id).update(task_args=[*job.task_args[:4], "None", job_id], updated_at=stale)
    assert jobs_housekeeping(now=clock.now())["restarted"] == 1
    assert job_of(api, job_id)["result"] == {"eventsRepriced": 1}
    assert UsageEvent.objects.get().usage_cost == Decimal("1.75")


# --------------------------------------------------------------------------- a connection lost under a run

@pytest.mark.django_db(transaction=True)
def test_a_job_whose_connection_is_terminated_mid_run_goes_back_to_its_runner(book, monkeypatch):
    """PostgreSQL terminated the runner's backend (a restart, a failover): no failure of the work, which would have
    left the rest of an override's events at their old cost for good (a failed job is never started again, and the
    same override is a 409). The job is queued again for its runner."""
    import jobs.services
    from tests.reliability.test_restarts_and_slow_providers import drop_kept_connection
    job = Job.objects.create(book=book, kind="cost_reprice", status="queued", task_path="x.y")
    handed_over = []
    monkeypatch.setattr(jobs.services, "job_start", lambda job: handed_over.append(job.pk))

    def work(progress):
        drop_kept_connection()
        return {"eventsRepriced": Job.objects.count()}  # the first statement after the restart

    assert jobs.services.job_run(job.pk, work) is None
    job.refresh_from_db()
    assert (job.status, job.attempts, handed_over) == ("queued", 1, [job.pk])
    assert jobs.services.job_run(job.pk, lambda progress: {"eventsRepriced": 3}) == {"eventsRepriced": 3}
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 2)
