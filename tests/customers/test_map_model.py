"""POST /v1/events/map-model: an unknown model name mapped onto a catalog entry, with cost backfill."""
from decimal import Decimal

import pytest

from catalog.models import ModelAlias
from customers.models import UsageEvent
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def llm(db):
    return ServiceEntryFactory(canonical_name="mapped-llm", provider="mapai", input_cost=Decimal("0.000002"),
                               output_cost=Decimal("0.00001"))


def record(api, **fields):
    body = {"customerExternalId": "c", "agentCode": "a", "signalName": "s", "model": "house-model-v2",
            "modelProvider": "inhouse", "inputTokens": 1000, "outputTokens": 100, **fields}
    return api.post("/v1/usage/record", {"records": [body]}).json()["results"]


def test_mapping_an_unknown_model_backfills_waiting_events(api, llm):
    failed = record(api)["failed"][0]
    record(api, inputTokens=500, outputTokens=0)
    resp = api.post("/v1/events/map-model", {"model": " House-Model-V2 ", "modelProvider": "InHouse",
                                               "serviceId": str(llm.id)})
    assert resp.status_code == 201, resp.json()
    body = resp.json()
    assert body["mapping"]["model"] == "house-model-v2" and body["mapping"]["serviceId"] == str(llm.id)
    assert body["backfill"] == {"eventsWaiting": 2, "eventsPriced": 2, "scheduled": False}
    event = UsageEvent.objects.get(pk=failed["eventId"])
    assert (event.usage_cost, event.event_status, event.service_id) == (Decimal("0.003"), "PROCESSED", llm.id)


def test_later_events_with_the_mapped_name_are_priced_at_record_time(api, llm):
    api.post("/v1/events/map-model", {"model": "house-model-v2", "modelProvider": "inhouse", "serviceId": str(llm.id)})
    results = record(api)
    assert results["failed"] == [] and results["success"][0]["totalCostUsd"] == "0.003"


def test_multi_service_events_waiting_on_the_model_are_backfilled(api, llm):
    record(api, model=None, modelProvider=None, inputTokens=None, outputTokens=None, services=[
        {"model": "mapped-llm", "modelProvider": "mapai", "inputTokens": 1000},
        {"model": "house-model-v2", "modelProvider": "inhouse", "outputTokens": 100}])
    resp = api.post("/v1/events/map-model", {"model": "house-model-v2", "modelProvider": "inhouse",
                                               "serviceId": str(llm.id)})
    assert resp.json()["backfill"]["eventsPriced"] == 1
    event = UsageEvent.objects.get()
    assert event.usage_cost == Decimal("0.003")
    assert [part["costUsd"] for part in event.services] == ["0.002", "0.001"]


def test_remapping_updates_the_alias_without_repricing_priced_events(api, llm):
    other = ServiceEntryFactory(canonical_name="pricier", provider="mapai", input_cost=Decimal("1"),
                                output_cost=Decimal("1"))
    record(api)
    api.post("/v1/events/map-model", {"model": "house-model-v2", "modelProvider": "inhouse", "serviceId": str(llm.id)})
    resp = api.post("/v1/events/map-model", {"model": "house-model-v2", "modelProvider": "inhouse",
                                               "serviceId": str(other.id)})
    assert resp.status_code == 200 and resp.json()["created"] is False
    assert ModelAlias.objects.get().service_id == other.id
    assert UsageEvent.objects.get().usage_cost == Decimal("0.003")


def test_a_name_already_in_the_catalog_cannot_be_mapped(api, llm):
    resp = api.post("/v1/events/map-model", {"model": "mapped-llm", "modelProvider": "mapai", "serviceId": str(llm.id)})
    assert resp.status_code == 400
    assert "already in the catalog" in resp.json()["message"][0]


@pytest.mark.parametrize("service_id", ["00000000-0000-0000-0000-000000000000", "inactive"])
def test_mapping_needs_an_active_catalog_entry(api, service_id):
    if service_id == "inactive":
        service_id = str(ServiceEntryFactory(is_active=False, input_cost=Decimal("1")).id)
    resp = api.post("/v1/events/map-model", {"model": "x", "modelProvider": "y", "serviceId": service_id})
    assert resp.status_code == 404
    assert not ModelAlias.objects.exists()


def test_map_model_validates_its_body(api):
    resp = api.post("/v1/events/map-model", {"model": "x", "serviceId": "nope"})
    assert resp.status_code == 400
    assert set(resp.json()["message"]) == {"modelProvider: This field is required.",
                                          "serviceId: Must be a valid UUID."}


def test_mappings_are_per_book(api, client_for, llm):
    api.post("/v1/events/map-model", {"model": "house-model-v2", "modelProvider": "inhouse", "serviceId": str(llm.id)})
    live = client_for(environment="live")
    assert record(live)["failed"][0]["code"] == "unknown_model"


def test_many_waiting_events_are_backfilled_by_the_task(api, llm, settings, django_capture_on_commit_callbacks):
    settings.MAP_MODEL_INLINE_BACKFILL_LIMIT = 1
    record(api)
    record(api)
    # Celery runs eagerly in the suite: the task executes on commit, as a worker would.
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post("/v1/events/map-model", {"model": "house-model-v2", "modelProvider": "inhouse",
                                                   "serviceId": str(llm.id)})
    assert resp.json()["backfill"] == {"eventsWaiting": 2, "eventsPriced": 0, "scheduled": True}
    assert not UsageEvent.objects.filter(usage_cost__isnull=True).exists()


def test_map_model_needs_a_full_secret_key(client_for, llm):
    body = {"model": "x", "modelProvider": "y", "serviceId": str(llm.id)}
    assert client_for(scope="ingest").post("/v1/events/map-model", body).status_code == 403
    assert client_for(key_type="publishable").post("/v1/events/map-model", body).status_code == 403


def test_a_mapping_is_stored_only_with_its_backfill_job(api, llm, monkeypatch):
    """The connection lost between the alias and its job: nothing stays, and the retry creates the mapping (201)
    and prices the waiting event, instead of an alias whose waiting events nothing prices."""
    import customers.backfill as backfill
    from django.db import OperationalError

    failed = record(api)["failed"][0]
    real_job_create = backfill.job_create

    def lost(**kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(backfill, "job_create", lost)
    body = {"model": "house-model-v2", "modelProvider": "inhouse", "serviceId": str(llm.id)}
    assert api.post("/v1/events/map-model", body).status_code == 503
    assert not ModelAlias.objects.exists()
    monkeypatch.setattr(backfill, "job_create", real_job_create)
    resp = api.post("/v1/events/map-model", body)
    assert resp.status_code == 201 and resp.json()["backfill"]["eventsPriced"] == 1, resp.json()
    assert UsageEvent.objects.get(pk=failed["eventId"]).usage_cost == Decimal("0.003")


def test_an_inline_backfill_that_fails_after_the_commit_goes_on_in_the_background(
        api, llm, monkeypatch, django_capture_on_commit_callbacks):
    """The alias is committed before the waiting events are priced: a failure of that run (PostgreSQL lost
    mid-run) is no 5xx but a job that goes on in the background and prices them."""
    import customers.backfill as backfill
    from django.db import OperationalError

    failed = record(api)["failed"][0]

    def failing_in_the_request(*args):  # the request's run only: the task (customers/tasks.py) runs the real one
        def work(progress):
            raise OperationalError("server closed the connection unexpectedly")
        return work

    monkeypatch.setattr(backfill, "backfill_work", failing_in_the_request)
    with django_capture_on_commit_callbacks(execute=True):  # Celery runs eagerly in the suite, as a worker would
        resp = api.post("/v1/events/map-model", {"model": "house-model-v2", "modelProvider": "inhouse",
                                                   "serviceId": str(llm.id)})
    assert resp.status_code == 201, resp.content
    body = resp.json()
    assert body["backfill"] == {"eventsWaiting": 1, "eventsPriced": 0, "scheduled": True}
    job = api.get(f"/v1/jobs/{body['jobId']}").json()
    assert (job["status"], job["result"]) == ("succeeded", {"eventsPriced": 1}), job
    assert UsageEvent.objects.get(pk=failed["eventId"]).usage_cost == Decimal("0.003")
