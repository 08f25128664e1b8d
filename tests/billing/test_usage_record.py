"""POST /v1/usage/record through HTTP (spec §2, §4; contract.md Decisions)."""
import json
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing.models import PricingPlan, Subscription
from customers.models import Agent, Customer, Signal, UsageEvent
from tests.factories import ServiceEntryFactory, SubscriptionFactory

pytestmark = pytest.mark.django_db

D = Decimal


@pytest.fixture
def llm(db):
    """$3 per million input tokens, $15 per million output, cache read $0.30/M, cache write $3.75/M."""
    return ServiceEntryFactory(canonical_name="acme-llm-1", provider="acmeai", input_cost=D("0.000003"),
                               output_cost=D("0.000015"), cache_read_cost=D("0.0000003"),
                               cache_write_cost=D("0.00000375"))


@pytest.fixture
def search_api(db):
    """$0.005 per request."""
    return ServiceEntryFactory(canonical_name="acme-search", provider="acmesearch", input_cost=D("0.005"),
                               cost_unit="request", service_type="search", is_api=True)


def rec(llm=None, **fields):
    record = {"customerExternalId": "cust-1", "agentCode": "support-bot", "signalName": "tickets_resolved"}
    if llm is not None:
        record.update(model=llm.canonical_name, modelProvider=llm.provider, inputTokens=1000, outputTokens=200)
    record.update(fields)
    return record


def nested(levels: int) -> list:
    value = []
    for _ in range(levels - 1):
        value = [value]
    return value


def post(api, *records):
    return api.post("/v1/usage/record", {"records": list(records)})


# --------------------------------------------------------------------------- shape of the answer


def test_single_record_answers_200_with_counts_and_a_success_entry(api, llm):
    resp = post(api, rec(llm, quantity=3))
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert (body["processed"], body["successful"], body["failed"]) == (1, 1, 0)
    entry = body["results"]["success"][0]
    assert entry["customerExternalId"] == "cust-1" and entry["agentCode"] == "support-bot"
    assert entry["signalName"] == "tickets_resolved"
    assert (entry["model"], entry["modelProvider"]) == ("acme-llm-1", "acmeai")
    assert entry["totalCostUsd"] == "0.006"  # 1000 x 0.000003 + 200 x 0.000015
    event = UsageEvent.objects.get(pk=entry["eventId"])
    assert str(event.raw_event_id) == entry["rawEventId"]
    assert entry["timestamp"] == event.usage_date.isoformat().replace("+00:00", "Z")
    assert body["results"]["failed"] == []


def test_model_and_provider_are_matched_case_insensitively_and_trimmed(api, llm):
    resp = post(api, rec(llm, model="  ACME-LLM-1 ", modelProvider="AcmeAI"))
    entry = resp.json()["results"]["success"][0]
    assert (entry["model"], entry["modelProvider"], entry["totalCostUsd"]) == ("acme-llm-1", "acmeai", "0.006")


@pytest.mark.parametrize("records", [[], [rec()] * 101])
def test_batch_outside_1_to_100_records_is_400(api, records):
    resp = api.post("/v1/usage/record", {"records": records})
    assert resp.status_code == 400
    assert "between 1 and 100" in resp.json()["message"][0]
    assert not UsageEvent.objects.exists()


@pytest.mark.parametrize("body", [{}, {"records": "x"}, {"records": [1]}, []])
def test_malformed_bodies_are_400(api, body):
    assert api.post("/v1/usage/record", body).status_code == 400


def test_both_shapes_in_one_record_is_400_and_stores_nothing(api, llm):
    both = rec(llm, services=[{"model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 1}])
    resp = post(api, rec(llm), both)
    assert resp.status_code == 400
    assert resp.json()["message"] == ["records[1]: Send either model and modelProvider (single-service shape) or "
                                      "services (multi-service shape), not both."]
    assert not UsageEvent.objects.exists()


@pytest.mark.parametrize("tokens", [{"inputTokens": 5}, {"outputTokens": 0, "cacheReadTokens": 3},
                                    {"cacheWriteTokens": 1}])
def test_top_level_tokens_beside_services_are_the_mixed_shape_400_and_store_nothing(api, llm, tokens):
    mixed = rec(services=[{"model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 1}], **tokens)
    resp = post(api, rec(llm), mixed)
    assert resp.status_code == 400, resp.json()
    message, = resp.json()["message"]
    assert message == (f"records[1]: Send tokens inside each service of services (multi-service shape), not at "
                       f"the top level beside it (got {', '.join(tokens)}).")
    assert not UsageEvent.objects.exists()


def test_neither_shape_is_400(api):
    resp = post(api, rec(quantity=1))
    assert resp.status_code == 400
    assert "neither was given" in resp.json()["message"][0]


# --------------------------------------------------------------------------- per-record failures

NUL = "Must not contain NUL (\\u0000) characters."
SURROGATE = "Must not contain unpaired UTF-16 surrogates (\\ud800-\\udfff)."


@pytest.mark.parametrize("bad, field", [
    ({"inputTokens": -5}, "inputTokens: Must be zero or more."),
    ({"outputTokens": 1.5}, "outputTokens: Must be a whole number of tokens."),
    ({"cacheReadTokens": "12"}, "cacheReadTokens: Must be a whole number of tokens."),
    ({"quantity": -1}, "quantity: Must be zero or more."),
    ({"quantity": "lots"}, "quantity: Must be a number."),
    ({"quantity": "0." + "0" * 340 + "1"}, "quantity: Ensure there are no more than 340 decimal places."),
    ({"usageDate": "yesterday"}, "usageDate: Not a valid ISO 8601 date or timestamp."),
    ({"environment": "prod"}, "environment: Must be one of development, production, staging, testing."),
    ({"idempotencyKey": "k" * 256}, "idempotencyKey: Ensure this field has no more than 255 characters."),
    ({"metadata": ["not", "an", "object"]}, "metadata: Must be an object."),
    ({"customerExternalId": None}, "customerExternalId: This field is required."),
    ({"agentCode": "a" * 256}, "agentCode: Ensure this field has no more than 255 characters."),
    ({"signalName": "   "}, "signalName: May not be blank."),
    ({"modelProvider": None}, "modelProvider: This field is required."),
    ({"customerExternalId": "a\x00b"}, f"customerExternalId: {NUL}"),
    ({"metadata": {"note": "a\x00b"}}, f"metadata.note: {NUL}"),
    # What PostgreSQL cannot store fails its record alone, wherever it is (the parser leaves it to the record).
    ({"customerExternalId": "a\ud800b"}, f"customerExternalId: {SURROGATE}"),
    ({"idempotencyKey": "\udfff"}, f"idempotencyKey: {SURROGATE}"),
    ({"metadata": {"note": "\ud800"}}, f"metadata.note: {SURROGATE}"),
    ({"metadata": {"n": [10**1000]}},
     "metadata.n[0]: Must not hold a number of more than 1000 digits before or after the decimal point."),
    ({"metadata": {"n": nested(64)}}, "metadata.n" + "[0]" * 63 + ": Must not nest arrays and objects more than 64 "
                                                                    "levels deep."),
    ({"environment": ["production"]}, "environment: Must be one of development, production, staging, testing."),
    # Past the fast paths of the usual values: booleans are not numbers, limits hold, nesting is searched.
    ({"inputTokens": True}, "inputTokens: Must be a whole number of tokens."),
    ({"quantity": False}, "quantity: Must be a number."),
    ({"customerExternalId": " " + "c" * 255 + "x"}, "customerExternalId: Ensure this field has no more than 255 characters."),
    ({"metadata": {"deep": [{"deeper": ["ok", "a\x00b"]}]}}, f"metadata.deep[0].deeper[1]: {NUL}"),
    ({"metadata": {"key\x00": 1}}, f"metadata.key\\u0000: {NUL}"),
])
def test_an_invalid_record_fails_alone_and_is_not_stored(api, llm, bad, field):
    # Written by the standard library (unpaired surrogates as JSON escapes, which the test client cannot encode).
    resp = api.generic("POST", "/v1/usage/record", json.dumps({"records": [rec(llm), rec(llm, **bad)]}),
                       content_type="application/json")
    assert resp.status_code == 200
    body = resp.json()
    assert (body["processed"], body["successful"], body["failed"]) == (2, 1, 1)
    failure = body["results"]["failed"][0]
    assert (failure["index"], failure["code"], failure["stored"]) == (1, "invalid_record", False)
    assert field in failure["message"]
    assert "eventId" not in failure
    assert UsageEvent.objects.count() == 1


def test_invalid_service_part_names_its_position(api, llm):
    record = rec(services=[{"model": llm.canonical_name, "modelProvider": llm.provider},
                           {"model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": -1}])
    failure = post(api, record).json()["results"]["failed"][0]
    assert failure["message"] == ["services[1].inputTokens: Must be zero or more."]


def test_unknown_model_is_stored_with_null_cost_and_reported_as_failed(api, llm):
    resp = post(api, rec(llm), rec(model="mystery-model-9", modelProvider="nobody", inputTokens=10))
    body = resp.json()
    assert (body["successful"], body["failed"]) == (1, 1)
    failure = body["results"]["failed"][0]
    assert (failure["code"], failure["stored"], failure["index"]) == ("unknown_model", True, 1)
    assert failure["totalCostUsd"] is None
    event = UsageEvent.objects.get(pk=failure["eventId"])
    assert event.usage_cost is None and event.event_status == "NEEDS_COST_BACKFILL"
    assert (event.model, event.model_provider, event.input_tokens) == ("mystery-model-9", "nobody", 10)


# --------------------------------------------------------------------------- cost


def test_llm_cost_includes_cache_tokens_at_their_rates(api, llm):
    record = rec(llm, inputTokens=2_000_000, outputTokens=1_000_000, cacheReadTokens=500_000,
                 cacheWriteTokens=100_000)
    entry = post(api, record).json()["results"]["success"][0]
    # 6 + 15 + 0.15 + 0.375
    assert D(entry["totalCostUsd"]) == D("21.525")
    assert UsageEvent.objects.get().usage_cost == D("21.525")


def test_non_llm_cost_is_quantity_times_unit_rate_with_fractions_kept(api, search_api):
    record = rec(model="acme-search", modelProvider="acmesearch", quantity=2.75)
    entry = post(api, record).json()["results"]["success"][0]
    assert D(entry["totalCostUsd"]) == D("0.01375")
    assert UsageEvent.objects.get().quantity == D("2.75")


def test_multi_service_cost_is_the_sum_of_its_services(api, llm, search_api):
    record = rec(quantity=1, services=[
        {"model": "acme-llm-1", "modelProvider": "acmeai", "inputTokens": 1_000_000, "outputTokens": 0},
        {"model": "acme-llm-1", "modelProvider": "acmeai", "inputTokens": 0, "outputTokens": 1_000_000},
        {"model": "acme-search", "modelProvider": "acmesearch", "quantity": 4},
    ])
    entry = post(api, record).json()["results"]["success"][0]
    assert D(entry["totalCostUsd"]) == D("18.02")
    assert (entry["model"], entry["modelProvider"]) == (None, None)
    event = UsageEvent.objects.get()
    assert event.model is None and len(event.services) == 3
    assert [D(part["costUsd"]) for part in event.services] == [D("3"), D("15"), D("0.02")]


def test_multi_service_with_an_unknown_part_is_stored_unpriced(api, llm):
    record = rec(services=[{"model": "acme-llm-1", "modelProvider": "acmeai", "inputTokens": 10},
                           {"model": "nope", "modelProvider": "nobody", "quantity": 1}])
    failure = post(api, record).json()["results"]["failed"][0]
    assert (failure["code"], failure["stored"]) == ("unknown_model", True)
    assert UsageEvent.objects.get().usage_cost is None


# --------------------------------------------------------------------------- auto-provisioning


def test_unseen_names_create_customer_agent_and_signal_named_after_them(api, llm):
    post(api, rec(llm, customerExternalId="new-cust", agentCode="new-agent", signalName="pages"))
    customer = Customer.objects.get(external_id="new-cust")
    agent = Agent.objects.get(agent_code="new-agent")
    signal = Signal.objects.get(agent=agent)
    assert (customer.name, agent.name, signal.name, signal.short_name) == ("new-cust", "new-agent", "pages", "pages")
    assert (customer.status, customer.timezone, customer.net_terms, signal.type) == ("active", "UTC", 30, "usage")


def test_existing_identities_are_reused_and_signals_match_by_short_name_or_name(api, llm, book):
    agent = Agent.objects.create(book=book, name="Bot", agent_code="support-bot")
    by_short = Signal.objects.create(book=book, agent=agent, name="Tickets Resolved", short_name="tickets_resolved")
    by_name = Signal.objects.create(book=book, agent=agent, name="Pages", short_name="pg")
    post(api, rec(llm), rec(llm, signalName="Pages"), rec(llm))
    assert Agent.objects.count() == 1 and Signal.objects.count() == 2
    assert UsageEvent.objects.filter(signal=by_short).count() == 2
    assert UsageEvent.objects.filter(signal=by_name).count() == 1


def test_recording_never_creates_plans_or_subscriptions(api, llm):
    post(api, rec(llm))
    assert not PricingPlan.objects.exists() and not Subscription.objects.exists()


def test_coding_agent_usage_marks_its_customer_internal(api, llm):
    post(api, rec(llm, customerExternalId="dev@acme.example", agentCode="svc-coding-agent"),
         rec(llm, customerExternalId="cust-9"))
    assert Customer.objects.get(external_id="dev@acme.example").is_internal is True
    assert Customer.objects.get(external_id="cust-9").is_internal is False


def test_coding_agent_usage_naming_a_billed_customer_fails_alone_and_leaves_it_billed(api, llm, book):
    """A customer with a subscription stays billed: the record under the coding agent would take its invoices out
    of every revenue figure, so it is refused alone and nothing of it is stored."""
    subscribed = SubscriptionFactory(book=book, customer__external_id="ops@acme.example")
    body = post(api, rec(llm, customerExternalId="ops@acme.example", agentCode="svc-coding-agent"),
                rec(llm, customerExternalId="dev@acme.example", agentCode="svc-coding-agent")).json()
    assert (body["successful"], body["failed"]) == (1, 1)
    failure = body["results"]["failed"][0]
    assert (failure["index"], failure["code"], failure["stored"]) == (0, "invalid_record", False)
    assert failure["message"].startswith("customerExternalId: 'ops@acme.example' is a billed customer")
    assert Customer.objects.get(pk=subscribed.customer_id).is_internal is False
    assert not UsageEvent.objects.filter(customer_id=subscribed.customer_id).exists()
    assert Customer.objects.get(external_id="dev@acme.example").is_internal is True


def test_first_event_with_environment_sorts_its_signal_into_a_cost_category(api, llm):
    post(api, rec(llm), rec(llm, environment="staging"), rec(llm, environment="production"))
    assert Signal.objects.get().cost_category == "staging"
    post(api, rec(llm, environment="production"))
    assert Signal.objects.get().cost_category == "staging"  # sorted once, by the first event


# --------------------------------------------------------------------------- idempotency


def test_replaying_an_idempotency_key_returns_the_original_event_and_cost(api, llm):
    first = post(api, rec(llm, idempotencyKey="k-1")).json()["results"]["success"][0]
    again = post(api, rec(llm, idempotencyKey="k-1", inputTokens=999999)).json()["results"]["success"][0]
    assert again["eventId"] == first["eventId"] and again["totalCostUsd"] == first["totalCostUsd"]
    assert again["replayed"] is True and "replayed" not in first
    assert UsageEvent.objects.count() == 1


def test_an_idempotency_key_is_kept_as_sent_and_a_blank_one_fails_its_record_alone(api, llm):
    """Spec §4: the same key a second time is a replay; `run-1 ` is another key than `run-1` (trimmed, it had
    replayed the first record and dropped the second's usage). A blank key keys nothing: the record fails alone."""
    first = post(api, rec(llm, idempotencyKey="run-1")).json()["results"]["success"][0]
    body = post(api, rec(llm, idempotencyKey="run-1 ", inputTokens=2000), rec(llm, idempotencyKey=" run-1"),
                rec(llm, idempotencyKey="   ")).json()["results"]
    spaced_after, spaced_before = body["success"]
    assert "replayed" not in spaced_after and "replayed" not in spaced_before
    assert len({first["eventId"], spaced_after["eventId"], spaced_before["eventId"]}) == 3
    assert spaced_after["totalCostUsd"] == "0.009"  # 2,000 x $3/M + 200 x $15/M
    assert [(f["index"], f["code"], f["message"]) for f in body["failed"]] == [
        (2, "invalid_record", ["idempotencyKey: May not be blank."])]
    assert sorted(UsageEvent.objects.values_list("idempotency_key", flat=True)) == [" run-1", "run-1", "run-1 "]
    again = post(api, rec(llm, idempotencyKey="run-1 ")).json()["results"]["success"][0]
    assert again["replayed"] is True and again["eventId"] == spaced_after["eventId"]


def test_a_key_repeated_inside_one_batch_stores_one_event(api, llm):
    body = post(api, rec(llm, idempotencyKey="dup"), rec(llm, idempotencyKey="dup")).json()
    ids = {entry["eventId"] for entry in body["results"]["success"]}
    assert len(ids) == 1 and UsageEvent.objects.count() == 1


def test_a_batch_mixing_a_replay_with_new_records_stores_only_the_new_ones(api, llm):
    first = post(api, rec(llm, idempotencyKey="m-1")).json()["results"]["success"][0]
    body = post(api, rec(llm, idempotencyKey="m-1"), rec(llm, idempotencyKey="m-2"), rec(llm)).json()
    replay, new_keyed, unkeyed = body["results"]["success"]
    assert replay["eventId"] == first["eventId"] and replay["replayed"] is True
    assert "replayed" not in new_keyed and "replayed" not in unkeyed
    assert UsageEvent.objects.count() == 3
    assert len({first["eventId"], new_keyed["eventId"], unkeyed["eventId"]}) == 3


def test_keys_are_per_book(api, client_for, llm):
    post(api, rec(llm, idempotencyKey="same"))
    post(client_for(environment="live"), rec(llm, idempotencyKey="same"))
    assert UsageEvent.objects.count() == 2


def test_without_a_key_every_request_is_recorded(api, llm):
    post(api, rec(llm))
    post(api, rec(llm))
    assert UsageEvent.objects.count() == 2


# --------------------------------------------------------------------------- keys and scope


@pytest.mark.parametrize("scope", ["full", "ingest", "legal"])
def test_every_secret_scope_may_record(client_for, llm, scope):
    assert post(client_for(scope=scope), rec(llm)).status_code == 200


def test_publishable_key_may_not_record(client_for, llm):
    assert post(client_for(key_type="publishable"), rec(llm)).status_code == 403
    assert not UsageEvent.objects.exists()


# --------------------------------------------------------------------------- hot path


def test_query_count_does_not_grow_with_the_batch(api, llm, search_api):
    def queries_for(count: int, prefix: str) -> int:
        records = [rec(llm, customerExternalId=f"{prefix}-c{i}", agentCode=f"{prefix}-a{i % 7}",
                       signalName=f"s{i % 5}", idempotencyKey=f"{prefix}-{i}") for i in range(count)]
        with CaptureQueriesContext(connection) as captured:
            assert post(api, *records).status_code == 200
        return len(captured)

    assert queries_for(100, "big") == queries_for(1, "one")


def test_a_developers_next_batch_costs_no_more_queries_than_a_customers(api, llm):
    """The check that coding-agent usage names no billed customer reads only customers not internal yet: a developer
    already marked, like any known customer, costs the usual batch's queries."""
    def queries_for(**fields) -> int:
        with CaptureQueriesContext(connection) as captured:
            assert post(api, rec(llm, **fields)).json()["successful"] == 1
        return len(captured)

    post(api, rec(llm, customerExternalId="dev@acme.example", agentCode="svc-coding-agent"), rec(llm))
    assert queries_for(customerExternalId="dev@acme.example", agentCode="svc-coding-agent") == queries_for()


def test_events_are_attributed_to_matters_at_record_time(api, llm, book):
    from matters.models import Matter, MatterAttribution, MatterRule

    tagged = Matter.objects.create(book=book, matter_number="M-7", name="Tagged", client_name="Client")
    routed = Matter.objects.create(book=book, matter_number="M-8", name="Routed", client_name="Client")
    MatterRule.objects.create(book=book, matter=routed, signal_pattern="TICKETS")
    body = post(api, rec(llm, metadata={"matterId": "M-7"}), rec(llm), rec(llm, signalName="other")).json()
    event_ids = [entry["eventId"] for entry in body["results"]["success"]]
    attributions = {str(a.event_id): (a.matter_id, a.source) for a in MatterAttribution.objects.all()}
    assert attributions == {event_ids[0]: (tagged.id, "tag"), event_ids[1]: (routed.id, "rule")}


def test_the_lookups_of_every_batch_are_prepared_once_per_connection(api, llm):
    def prepared() -> dict[str, int]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements")
            return {" ".join(statement.split())[:40]: runs for statement, runs in cursor.fetchall()}

    for batch in range(3):
        assert post(api, *[rec(llm, customerExternalId=f"c{batch}-{i}") for i in range(5)]).status_code == 200
    runs = prepared()
    key = next(runs[s] for s in runs if s.startswith("SELECT k.id"))  # the API key with its book
    identities = next(runs[s] for s in runs if s.startswith("SELECT 'c', c.external_id"))
    catalog = next(runs[s] for s in runs if s.startswith("SELECT s.id"))
    # One server-side statement each, run by every request since (unprepared statements leave no entry).
    assert key >= 3 and identities >= 3 and catalog >= 3


def test_the_identity_lookup_probes_the_unique_index_once_per_name_without_statistics(book):
    """A book's customers are found by probing (book, external id) per name of the batch: comparing every
    customer of the book with the batch's names grew with the book (docs/performance.md). Checked on the
    generic plan the prepared statement runs, on tables with no statistics."""
    import re

    from customers.provisioning import _known_statement

    Customer.objects.bulk_create([Customer(book=book, name=f"c{i}", external_id=f"c{i}") for i in range(300)])
    numbered = iter(range(1, 100))
    statement = re.sub(r"%[sb]", lambda _: f"${next(numbered)}", _known_statement(book, [], [], [])[0])
    types = "text[], uuid, uuid, text[], uuid, uuid, text[], text[], text[]"
    names, book_id = "'{c1,c2,c3}'", f"'{book.pk}'"
    with connection.cursor() as cursor:
        # No statistics, as a new book's tables have none: clear what autovacuum may have gathered from earlier
        # tests' committed rows (with them the planner may rightly scan a table it knows to be tiny).
        for table in ("customers_customer", "customers_agent", "customers_signal"):
            cursor.execute("SELECT pg_clear_relation_stats(current_schema(), %s)", [table])
            cursor.execute("SELECT pg_clear_attribute_stats(schemaname, tablename, attname, inherited) FROM pg_stats "
                           "WHERE schemaname = current_schema() AND tablename = %s", [table])
        cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        cursor.execute(f"PREPARE identities_plan ({types}) AS {statement}")
        try:
            cursor.execute(f"EXPLAIN (FORMAT JSON) EXECUTE identities_plan ({names}, {book_id}, {book_id}, "
                           f"'{{a}}', {book_id}, {book_id}, '{{a}}', '{{s}}', '{{s}}')")
            plan = cursor.fetchone()[0][0]["Plan"]
        finally:
            cursor.execute("DEALLOCATE identities_plan")

    def scans(node):
        yield node
        for child in node.get("Plans", []):
            yield from scans(child)

    customer_scans = [node for node in scans(plan) if node.get("Relation Name") == "customers_customer"]
    assert customer_scans and all(node.get("Index Name") == "customer_external_id_uniq" for node in customer_scans)


def test_fast_insert_writes_every_column():
    from customers.ledger import FAST_COLUMNS
    from customers.models import UsageEvent

    # Recording's rows are keyed by attname and the insert names columns: the two must be the same names.
    assert set(FAST_COLUMNS) == {field.column for field in UsageEvent._meta.concrete_fields}
    assert len(FAST_COLUMNS) == len(set(FAST_COLUMNS))


def test_the_events_recording_hands_on_equal_the_stored_rows(api, llm, search_api, monkeypatch):
    from billing import recording
    from customers.models import UsageEvent

    handed_on = []
    real = recording.matters_attribute_new_events
    monkeypatch.setattr(recording, "matters_attribute_new_events",
                        lambda *, book, events, **rest: handed_on.extend(events) or real(book=book, events=events,
                                                                                         **rest))
    # Text that JSON escapes, a multi-service event (its parts as JSON) beside single-service ones (SQL NULL),
    # an unpriced event (cost NULL) and a fractional quantity: every value crosses the insert's JSON document.
    odd = 'quote " backslash \\ tab \t newline \n café ✓ 𝄞'
    body = post(api, rec(llm, metadata={"matterId": "M-1"}, environment="staging"),
                rec(llm, inputTokens=7, customerExternalId=odd, signalName=odd, idempotencyKey=odd, quantity="2.5"),
                rec(customerExternalId="cust-2", services=[
                    {"model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 10},
                    {"model": search_api.canonical_name, "modelProvider": search_api.provider, "quantity": 3}]),
                rec(llm, model="not-in-the-catalog")).json()
    assert (body["successful"], body["failed"]) == (3, 1), body
    assert len(handed_on) == 4
    for event in handed_on:
        stored = UsageEvent.objects.get(pk=event.pk)
        assert not event._state.adding
        for field in UsageEvent._meta.concrete_fields:
            assert getattr(event, field.attname) == getattr(stored, field.attname), field.attname
        assert event.customer == stored.customer and event.signal == stored.signal
    assert UsageEvent.objects.filter(customer_external_id=odd, signal_name=odd, idempotency_key=odd).count() == 1
    assert UsageEvent.objects.filter(services__isnull=True).count() == 3  # SQL NULL, not a JSON null
    assert UsageEvent.objects.filter(usage_cost__isnull=True).count() == 1


def test_metadata_numbers_beyond_64_bits_and_non_ascii_text_are_stored_as_sent(api, llm):
    from customers.models import UsageEvent

    metadata = {"ticket": 2**70, "note": "café ✓", "nested": {"ratio": 0.1, "items": [1, None, True]}}
    body = post(api, rec(llm, metadata=metadata)).json()
    assert body["successful"] == 1, body
    stored = UsageEvent.objects.get(pk=body["results"]["success"][0]["eventId"]).metadata
    assert stored == {**metadata, "nested": {"ratio": D("0.1"), "items": [1, None, True]}}  # 0.1 exactly
