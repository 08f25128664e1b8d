"""Per-process caches of a book's identities and prices (accounts/book_generations.py): a batch whose names and
models this process already read runs neither lookup, and whatever changes those records is seen by the next
batch. Transactional: the caches fill only after a commit, as in production."""
import threading
import uuid
from datetime import datetime, timezone
from decimal import Decimal as D

import pytest
from django.db import connection, transaction
from hypothesis import HealthCheck, given, settings, strategies as st
from django.test.utils import CaptureQueriesContext

from accounts import book_generations
from accounts.book_generations import BookCache, Generation
from billing import recording
from catalog.models import PriceOverride, ServiceEntry
from catalog.resolution import resolve_prices, resolved_prices
from customers.models import Customer, Signal, UsageEvent
from customers.provisioning import identities, identities_provision
from matters.models import Matter
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db(transaction=True)

IDENTITY_LOOKUP = "FROM unnest("  # the one statement of `_known`
PRICE_LOOKUP = "catalog_modelalias"  # the one statement of `_resolve`


@pytest.fixture
def llm(db):
    """$3 per million input tokens, $15 per million output."""
    return ServiceEntryFactory(canonical_name="acme-llm-1", provider="acmeai", input_cost=D("0.000003"),
                               output_cost=D("0.000015"))


def record(**fields):
    return {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "answers", "model": "acme-llm-1",
            "modelProvider": "acmeai", "inputTokens": 1_000_000, "outputTokens": 0, **fields}


def send(api, **fields) -> dict:
    resp = api.post("/v1/usage/record", {"records": [record(**fields)]})
    assert resp.status_code == 200, resp.json()
    body = resp.json()["results"]
    return (body["success"] or body["failed"])[0]


def statements_of(api, **fields) -> tuple[dict, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        entry = send(api, **fields)
    return entry, [query["sql"] for query in captured.captured_queries]


def generations(book_id) -> Generation:
    return book_generations.generation_now(_Book(book_id))


def test_a_batch_of_names_and_models_already_read_runs_neither_lookup(api, llm):
    first, sql = statements_of(api)
    assert any(IDENTITY_LOOKUP in s for s in sql) and any(PRICE_LOOKUP in s for s in sql)
    second, sql = statements_of(api)
    assert not any(IDENTITY_LOOKUP in s for s in sql), sql
    assert not any(PRICE_LOOKUP in s for s in sql), sql
    assert (first["totalCostUsd"], second["totalCostUsd"]) == ("3", "3")
    events = UsageEvent.objects.order_by("id")
    assert [e.customer_id for e in events] == [Customer.objects.get(external_id="cust-1").pk] * 2
    third, sql = statements_of(api, customerExternalId="cust-2")  # a name not read yet: looked up, created
    assert any(IDENTITY_LOOKUP in s for s in sql)
    assert UsageEvent.objects.get(pk=third["eventId"]).customer_id == Customer.objects.get(external_id="cust-2").pk


def test_a_deleted_customer_is_not_answered_from_the_cache(api, llm):
    send(api)
    old = Customer.objects.get(external_id="cust-1")
    assert api.delete(f"/v1/customers/{old.pk}").status_code in (200, 204)
    entry = send(api)
    customer_id = UsageEvent.objects.get(pk=entry["eventId"]).customer_id
    assert customer_id != old.pk
    assert Customer.objects.get(pk=customer_id, deleted_at__isnull=True).external_id == "cust-1"


def test_a_price_override_created_between_batches_prices_the_next(api, llm):
    assert send(api, usageDate="2026-03-02T10:00:00Z")["totalCostUsd"] == "3"
    resp = api.post("/v1/price-overrides", {"modelProvider": "acmeai", "discountPercent": 20,
                                            "effectiveFrom": "2026-03-01T00:00:00Z"})
    assert resp.status_code == 201, resp.json()
    assert send(api, usageDate="2026-03-03T10:00:00Z")["totalCostUsd"] == "2.4"


def test_a_catalog_price_changed_between_batches_prices_the_next(api, llm):
    assert send(api)["totalCostUsd"] == "3"
    ServiceEntry.objects.filter(pk=llm.pk).update(input_cost=D("0.000004"))  # as a catalog reload does
    assert send(api)["totalCostUsd"] == "4"


# --------------------------------------------------------------------------- a price change racing a batch

OVERRIDE = {"modelProvider": "acmeai", "discountPercent": 20, "effectiveFrom": "2020-01-01T00:00:00Z"}


def pause_storing(monkeypatch, *, before: bool):
    """The next batch stops once priced (`before`: before its statement that stores it; else after it, inside
    its transaction) until `go` is set; `reached` says it got there."""
    reached, go, calls = threading.Event(), threading.Event(), []
    real = recording.events_append

    def append(**kwargs):
        calls.append(kwargs["generation"])
        if before and len(calls) == 1:
            reached.set()
            assert go.wait(30)
        appended = real(**kwargs)
        if not before:
            reached.set()
            assert go.wait(30)
        return appended
    monkeypatch.setattr(recording, "events_append", append)
    return reached, go, calls


def in_thread(call) -> tuple[threading.Thread, list]:
    answers = []

    def run():
        try:
            answers.append(call())
        finally:
            connection.close()
    thread = threading.Thread(target=run)
    thread.start()
    return thread, answers


def test_a_batch_priced_before_an_override_committed_is_priced_again_when_stored(api, client_for, llm, monkeypatch):
    send(api)  # the caches hold the prices before the override
    reached, go, calls = pause_storing(monkeypatch, before=True)
    batch, answers = in_thread(lambda: send(api))
    assert reached.wait(30)
    resp = client_for().post("/v1/price-overrides", OVERRIDE)  # commits and re-prices what is stored
    assert resp.status_code == 201, resp.json()
    go.set()
    batch.join(30)
    assert answers[0]["totalCostUsd"] == "2.4"
    assert UsageEvent.objects.get(pk=answers[0]["eventId"]).usage_cost == D("2.4")
    assert len(calls) == 2 and calls[1].book_prices > calls[0].book_prices


def test_a_batch_that_sorts_its_signal_and_an_override_made_meanwhile_both_go_through(api, client_for, llm,
                                                                                      monkeypatch):
    """Sorting a signal into a cost category and marking a developer internal write the book's generation row,
    which a price change writes after taking its lock: the batch does so only after its own statement took the
    lock shared, so neither waits for the other (the override and the batch would otherwise deadlock)."""
    send(api)
    send(api, customerExternalId="dev@example.com")  # an existing customer, about to be marked internal
    reached, go, _ = pause_storing(monkeypatch, before=True)
    batch, answers = in_thread(lambda: send(api, signalName="fresh", environment="production",
                                            agentCode="svc-coding-agent", customerExternalId="dev@example.com"))
    assert reached.wait(30)
    overrider, created = in_thread(lambda: client_for().post("/v1/price-overrides", OVERRIDE))
    overrider.join(30)
    assert created[0].status_code == 201, created[0].json()
    go.set()
    batch.join(30)
    assert answers[0]["totalCostUsd"] == "2.4"
    assert Signal.objects.get(name="fresh").cost_category == "production"
    assert Customer.objects.get(external_id="dev@example.com").is_internal


def test_an_override_waits_for_a_batch_being_stored_and_prices_it_again(api, client_for, llm, monkeypatch):
    send(api)
    reached, go, _ = pause_storing(monkeypatch, before=False)
    batch, answers = in_thread(lambda: send(api))
    assert reached.wait(30)  # stored at the old price, not committed yet
    overrider, created = in_thread(lambda: client_for().post("/v1/price-overrides", OVERRIDE))
    overrider.join(1)
    assert overrider.is_alive()  # the override's write waits for the batch's transaction
    go.set()
    batch.join(30)
    overrider.join(30)
    assert answers[0]["totalCostUsd"] == "3" and created[0].status_code == 201
    assert UsageEvent.objects.get(pk=answers[0]["eventId"]).usage_cost == D("2.4")  # its re-pricing saw the batch


def test_a_price_change_left_uncommitted_makes_a_batch_answer_503_with_nothing_stored(api, book, llm):
    send(api)
    held, go = threading.Event(), threading.Event()

    def override_left_open():
        with transaction.atomic():
            PriceOverride.objects.create(book=book, model_provider="acmeai", discount_percent=D(20),
                                         effective_from=datetime(2020, 1, 1, tzinfo=timezone.utc))
            held.set()
            assert go.wait(30)
    writer, _ = in_thread(override_left_open)
    assert held.wait(30)
    with connection.cursor() as cursor:  # the migration's 10 s, shortened for the test
        cursor.execute("ALTER FUNCTION accounts_prices_in_force(uuid) SET lock_timeout = '300ms'")
    try:
        resp = api.post("/v1/usage/record", {"records": [record()]})
        assert resp.status_code == 503 and resp.headers["Retry-After"], resp.content
        assert UsageEvent.objects.count() == 1
    finally:
        go.set()
        writer.join(30)
        with connection.cursor() as cursor:
            cursor.execute("ALTER FUNCTION accounts_prices_in_force(uuid) SET lock_timeout = '10s'")
    assert send(api)["totalCostUsd"] == "2.4"


def test_a_signal_renamed_between_batches_is_looked_up_again(api, llm):
    send(api)
    Signal.objects.filter(name="answers").update(name="replies", short_name="replies")
    entry = send(api)  # "answers" no longer names the old signal: a new one
    assert Signal.objects.get(pk=UsageEvent.objects.get(pk=entry["eventId"]).signal_id).name == "answers"


def test_what_moves_a_generation(book, llm):
    start = generations(book.pk)
    Customer.objects.create(book=book, external_id="c-1", name="c-1")
    assert generations(book.pk) == start  # an insert changes nothing a cache holds
    Customer.objects.filter(book=book).update(name="renamed")
    moved = generations(book.pk)
    assert moved.book > start.book and moved[1:] == start[1:]  # identities move no prices
    Customer.objects.filter(book=book, name="nobody").update(name="x")  # no row changed
    assert generations(book.pk) == moved
    ServiceEntry.objects.filter(pk=llm.pk).update(input_cost=D("0.000005"))
    repriced = generations(book.pk)
    assert repriced.catalog > moved.catalog and repriced.catalog_prices == repriced.catalog
    assert (repriced.book, repriced.book_prices) == (moved.book, moved.book_prices)
    PriceOverride.objects.create(book=book, model_provider="acmeai", discount_percent=D(10),
                                 effective_from=datetime(2026, 1, 1, tzinfo=timezone.utc))
    overridden = generations(book.pk)
    assert overridden.book_prices == overridden.book > repriced.book and overridden.catalog == repriced.catalog


def provision(book, name: str, generation=None):
    return identities_provision(book=book, customer_external_ids={name}, agent_codes={"bot"},
                                signal_keys={("bot", "answers")}, internal_external_ids=set(), generation=generation)


def test_a_rolled_back_insert_never_enters_the_cache(book):
    generation = Generation(*generations(book.pk))
    with pytest.raises(RuntimeError), transaction.atomic():
        provision(book, "ghost", generation)
        raise RuntimeError("the batch failed after provisioning")
    assert identities.entries(book, generation) == {}
    assert not Customer.objects.filter(external_id="ghost").exists()
    provision(book, "real", generation)
    assert identities.entries(book, generation)["c", "real"][0] == Customer.objects.get(external_id="real").pk


def test_a_lookup_without_a_generation_is_never_answered_from_a_cache(book, llm):
    generation = Generation(*generations(book.pk))
    provision(book, "c")
    resolve_prices(book=book, pairs={("acme-llm-1", "acmeai")})
    assert identities.entries(book, generation) == {} and resolved_prices.entries(book, generation) == {}


def test_a_request_that_maps_a_model_prices_its_waiting_events_from_the_database(api, llm):
    """The mapping writes an alias and prices the events in the same request: a cache filled at the generation
    its key was read at still says the model is unknown."""
    waiting = send(api, model="house-llm", modelProvider="inhouse")
    assert waiting["code"] == "unknown_model"
    send(api, model="house-llm", modelProvider="inhouse")  # from the cache: still unknown
    resp = api.post("/v1/events/map-model", {"model": "house-llm", "modelProvider": "inhouse", "serviceId": str(llm.pk)})
    assert resp.status_code in (200, 201, 202), resp.json()
    assert {event.usage_cost for event in UsageEvent.objects.all()} == {D(3)}


class _Book:
    def __init__(self, pk):
        self.pk = pk


def test_a_cache_answers_only_at_the_generation_it_read_and_keeps_the_newer_map():
    cache, book = BookCache(), _Book(1)
    cache.remember(book, Generation(5, 1, 0, 0), {"x": 1})
    assert cache.entries(book, Generation(5, 1, 0, 0)) == {"x": 1}
    assert cache.entries(book, Generation(6, 1, 0, 0)) == {}
    assert cache.entries(book, Generation(5, 2, 0, 0)) == {}
    assert cache.entries(book, None) == {}
    cache.remember(book, Generation(6, 1, 0, 0), {"y": 2})
    cache.remember(book, Generation(5, 1, 0, 0), {"x": 1})  # a request that read the older generation, late
    assert cache.entries(book, Generation(6, 1, 0, 0)) == {"y": 2}


def test_a_cache_is_bounded():
    cache, generation = BookCache(max_books=2, max_entries=4), Generation(1, 1, 0, 0)
    cache.remember(_Book(1), generation, {"a": 1, "b": 2})
    cache.remember(_Book(1), generation, {"c": 3})
    assert cache.entries(_Book(1), generation) == {"a": 1, "b": 2, "c": 3}
    cache.remember(_Book(2), generation, {"a": 1, "b": 2})  # 5 entries in all: starts again
    assert cache.entries(_Book(1), generation) == {}
    assert cache.entries(_Book(2), generation) == {"a": 1, "b": 2}
    cache.remember(_Book(3), generation, {"a": 1})
    cache.remember(_Book(4), generation, {"a": 1})  # a third book: starts again
    assert cache.entries(_Book(2), generation) == {} and cache.entries(_Book(3), generation) == {}
    assert cache.entries(_Book(4), generation) == {"a": 1}


# One step of a book's life between batches: record for one of two customers, delete one of them, or change the
# model's price in the catalog.
STEPS = st.lists(st.sampled_from(["record 1", "record 2", "delete 1", "delete 2", "price"]), min_size=1, max_size=12)
RATES = (D("0.000003"), D("0.000004"), D("0.000005"))  # USD per input token: 3, 4 or 5 for a million


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=STEPS)
def test_every_event_is_recorded_for_the_live_customer_at_the_current_price(api, llm, steps):
    """Whatever happens between batches, each event names the customer that holds its external id when it is
    recorded and costs what the catalog says then: the caches never answer with what a change replaced."""
    names = {n: f"cust-{uuid.uuid4().hex[:8]}-{n}" for n in "12"}  # examples share the database
    rates = iter(RATES * 5)
    rate = next(rates)
    ServiceEntry.objects.filter(pk=llm.pk).update(input_cost=rate)
    for step in steps:
        action, _, n = step.partition(" ")
        live = Customer.objects.filter(external_id=names.get(n), deleted_at__isnull=True).first()
        if action == "record":
            entry = send(api, customerExternalId=names[n])
            event = UsageEvent.objects.get(pk=entry["eventId"])
            assert event.customer_id == Customer.objects.get(external_id=names[n], deleted_at__isnull=True).pk
            assert live is None or event.customer_id == live.pk
            assert event.usage_cost == rate * 1_000_000
        elif action == "delete" and live is not None:
            assert api.delete(f"/v1/customers/{live.pk}").status_code in (200, 204)
        elif action == "price":
            rate = next(rates)
            ServiceEntry.objects.filter(pk=llm.pk).update(input_cost=rate)


MATTER_ROUTING = "matters_matterrule"  # the one statement of `_routing_inputs`


def test_a_book_without_matters_skips_routing_until_a_matter_is_created(api, llm):
    """Seen without matters at the key's generation, a book's batches skip the routing read; a matter created
    through the API moves the generation, so the very next batch reads the rules and routes by them."""
    _, sql = statements_of(api)
    assert any(MATTER_ROUTING in s for s in sql)
    _, sql = statements_of(api)
    assert not any(MATTER_ROUTING in s for s in sql), sql
    resp = api.post("/v1/matters", {"matterNumber": "M-1", "name": "Acme v. Roe", "clientName": "Acme"})
    assert resp.status_code == 201, resp.json()
    matter_id = resp.json()["id"]
    resp = api.post("/v1/matter-rules", {"matterId": matter_id, "agentCode": "bot"})
    assert resp.status_code == 201, resp.json()
    routed, sql = statements_of(api)
    assert any(MATTER_ROUTING in s for s in sql)
    assert str(UsageEvent.objects.get(pk=routed["eventId"]).matter_attribution.matter_id) == matter_id
    tagged, sql = statements_of(api, metadata={"matterId": "M-1"})
    assert any(MATTER_ROUTING in s for s in sql)  # a book with matters reads them every batch
    assert str(UsageEvent.objects.get(pk=tagged["eventId"]).matter_attribution.matter_id) == matter_id


def test_a_matter_created_in_a_transaction_that_rolled_back_leaves_the_skip_in_place(api, book, llm):
    send(api)
    send(api)  # remembered: this book has no matters
    before = generations(book.pk)
    with transaction.atomic():
        Matter.objects.create(book=book, matter_number="M-9", name="x", client_name="y")
        transaction.set_rollback(True)
    assert generations(book.pk) == before  # the trigger's write rolled back with the matter
    _, sql = statements_of(api)
    assert not any(MATTER_ROUTING in s for s in sql), sql
