"""Matter routing skipped for a book without matters (matters/ingestion.py), raced on purpose: two writers record
tagged batches through the per-process cache while a matter and a rule are created mid-way. Every batch that
started after the matter existed is attributed, and the matter's figures equal the ledger afterwards.
Transactional: the batches commit, so the cache fills as in production."""
import threading
import uuid
from decimal import Decimal as D

import pytest
from django.db import connections

from customers.models import UsageEvent
from matters.models import MatterAttribution
from matters.verification import attribution_orphans
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db(transaction=True)

BATCHES = 10


def test_batches_racing_a_new_matter_are_routed_once_it_exists_and_its_figures_equal_the_ledger(client_for, book):
    ServiceEntryFactory(canonical_name="acme-llm-1", provider="acmeai", input_cost=D("0.000003"),
                        output_cost=D("0.000015"))
    writers = [client_for(email=f"writer{n}@example.com") for n in range(2)]
    creator = client_for(email="creator@example.com")
    created = threading.Event()  # set once the matter and its rule are committed
    halfway = threading.Barrier(3)  # both writers have cached "no matters"; the creator may start
    started_after: list[str] = []  # events of batches whose request began after `created`
    failures: list[BaseException] = []

    def batch(client, n: int, number: int) -> list[str]:
        records = [{"customerExternalId": f"cust-{n}", "agentCode": f"bot-{n}", "signalName": "answers",
                    "model": "acme-llm-1", "modelProvider": "acmeai", "inputTokens": 1000 * (number + 1),
                    "outputTokens": 10, "metadata": {"matterId": "M-1"} if number % 2 else {}}]
        resp = client.post("/v1/usage/record", {"records": records})
        assert resp.status_code == 200, resp.json()
        return [entry["eventId"] for entry in resp.json()["results"]["success"]]

    def write(n: int):
        try:
            for number in range(BATCHES):
                if number == 2:
                    halfway.wait(timeout=30)
                if number == BATCHES - 2:  # the last two batches surely start after it; those between race it
                    created.wait(timeout=30)
                after = created.is_set()
                events = batch(writers[n], n, number)
                if after:
                    started_after.extend(events)
        except BaseException as error:  # reported by the main thread
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    halfway.wait(timeout=30)
    resp = creator.post("/v1/matters", {"matterNumber": "M-1", "name": "Acme v. Roe", "clientName": "Acme"})
    assert resp.status_code == 201, resp.json()
    matter_id = resp.json()["id"]
    resp = creator.post("/v1/matter-rules", {"matterId": matter_id, "agentCode": "bot-0"})
    assert resp.status_code == 201, resp.json()
    created.set()
    for thread in threads:
        thread.join()
    assert not failures, failures

    # Every batch that began after the matter and rule existed was routed: tagged events by tag, bot-0's by rule.
    attributed = dict(MatterAttribution.objects.filter(book=book).values_list("event_id", "matter_id"))
    for event in UsageEvent.objects.filter(pk__in=started_after):
        if event.metadata.get("matterId") == "M-1" or event.agent_code == "bot-0":
            assert str(attributed.get(event.pk)) == matter_id, event.pk
    assert any(uuid.UUID(event_id) in attributed for event_id in started_after)

    # The matter's figures are the ledger's, and the verifier finds no attribution without its event.
    matter = creator.get(f"/v1/matters/{matter_id}").json()
    events = UsageEvent.objects.filter(pk__in=attributed)
    assert matter["eventCount"] == events.count() == len(attributed)
    assert D(str(matter["actualCost"])) == sum(event.usage_cost for event in events)
    assert attribution_orphans(book=book) == []


def test_a_batch_routed_to_a_matter_deleted_before_it_commits_is_routed_again_not_a_500(client_for, book,
                                                                                     monkeypatch):
    """The matter is deleted (and committed) after the batch read its routing and before it wrote its
    attributions: the batch locks the matters it attributes to, finds this one gone, and is routed again, so it
    is stored with its event unassigned (a 200), instead of failing the attributions' foreign key at commit (a
    500 that lost the batch)."""
    from matters import ingestion

    ServiceEntryFactory(canonical_name="acme-llm-1", provider="acmeai", input_cost=D("0.000003"),
                        output_cost=D("0.000015"))
    api = client_for(email="writer@example.com")
    matter = api.post("/v1/matters", {"matterNumber": "M-9", "name": "Doe v. Acme", "clientName": "Acme"}).json()
    real_inputs, deleted = ingestion._routing_inputs, []
    other = client_for(email="deleter@example.com")

    def inputs_then_deleted_elsewhere(**kwargs):
        found = real_inputs(**kwargs)
        if not deleted:  # another request deletes the matter now, and commits
            deleted.append(True)
            worker = threading.Thread(target=lambda: (deleted.append(other.delete(f"/v1/matters/{matter['id']}")),
                                                      connections.close_all()))
            worker.start()
            worker.join(timeout=30)
        return found

    monkeypatch.setattr(ingestion, "_routing_inputs", inputs_then_deleted_elsewhere)
    record = {"customerExternalId": "cust-9", "agentCode": "bot", "signalName": "answers", "model": "acme-llm-1",
              "modelProvider": "acmeai", "inputTokens": 1000, "outputTokens": 10, "metadata": {"matterId": "M-9"}}
    resp = api.post("/v1/usage/record", {"records": [record]})
    assert deleted[1].status_code in (200, 204), deleted[1].content
    assert resp.status_code == 200, resp.content
    [entry] = resp.json()["results"]["success"]
    assert UsageEvent.objects.filter(pk=entry["eventId"]).exists()
    assert not MatterAttribution.objects.filter(event_id=entry["eventId"], matter__isnull=False).exists()
