"""Input is read as the client meant it, or refused saying why (contract.md "Unknown record fields", "Exact
numbers in", "Booleans"; docs/decisions/usage-recording.md)."""
from decimal import Decimal

import pytest

from customers.models import UsageEvent
from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db

D = Decimal


@pytest.fixture
def llm(db):
    """$3 per million input tokens, $15 per million output."""
    return ServiceEntryFactory(canonical_name="acme-llm-1", provider="acmeai", input_cost=D("0.000003"),
                               output_cost=D("0.000015"))


def rec(llm, **fields):
    record = {"customerExternalId": "cust-1", "agentCode": "support-bot", "signalName": "tickets_resolved",
              "model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 1000, "outputTokens": 200}
    record.update(fields)
    return record


def post(api, *records):
    resp = api.post("/v1/usage/record", {"records": list(records)})
    assert resp.status_code == 200, resp.json()
    return resp.json()


# --------------------------------------------------------------------------- unknown record fields


def test_a_misspelled_token_field_fails_its_record_alone_and_names_the_field_meant(api, llm):
    misspelled = rec(llm)
    del misspelled["inputTokens"]
    misspelled["inputToken"] = 1000
    body = post(api, rec(llm), misspelled)
    assert (body["successful"], body["failed"]) == (1, 1)
    failure = body["results"]["failed"][0]
    assert failure["index"] == 1 and failure["code"] == "unknown_field" and failure["stored"] is False
    assert failure["message"] == ["inputToken: Not a field of a usage record. Did you mean inputTokens? Free-form "
                                  "data belongs in metadata."]
    assert UsageEvent.objects.count() == 1  # only the neighbour, priced 1000 x 0.000003 + 200 x 0.000015
    assert body["results"]["success"][0]["totalCostUsd"] == "0.006"


@pytest.mark.parametrize("sent, meant", [("timestamp", "usageDate"), ("input_tokens", "inputTokens"),
                                         ("promptTokens", "inputTokens"), ("customerId", "customerExternalId"),
                                         ("Quantity", "quantity"), ("volume", "quantity"),
                                         ("idempotencykey", "idempotencyKey")])
def test_an_unknown_field_suggests_the_field_meant(api, llm, sent, meant):
    failure = post(api, rec(llm, **{sent: "2026-01-05T10:00:00Z"}))["results"]["failed"][0]
    assert failure["code"] == "unknown_field"
    assert failure["message"][0].startswith(f"{sent}: Not a field of a usage record. Did you mean {meant}?")
    assert not UsageEvent.objects.exists()  # never stored dated now


def test_a_field_like_no_other_is_named_without_a_guess(api, llm):
    failure = post(api, rec(llm, customerTier="gold"))["results"]["failed"][0]
    assert failure["message"] == ["customerTier: Not a field of a usage record. Free-form data belongs in metadata."]


def test_an_unknown_field_of_a_service_part_fails_the_record_naming_the_part(api, llm):
    record = {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "runs",
              "services": [{"model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 10},
                           {"model": llm.canonical_name, "modelProvider": llm.provider, "outputTokns": 5}]}
    failure = post(api, record)["results"]["failed"][0]
    assert failure["code"] == "unknown_field" and failure["stored"] is False
    assert failure["message"] == ["services[1].outputTokns: Not a field of a service of a usage record. Did you mean "
                                  "outputTokens? Free-form data belongs in metadata."]


def test_unknown_field_is_the_code_even_beside_other_errors(api, llm):
    failure = post(api, rec(llm, quantity=-1, inputTokenz=3))["results"]["failed"][0]
    assert failure["code"] == "unknown_field"
    assert failure["message"] == ["inputTokenz: Not a field of a usage record. Did you mean inputTokens? Free-form "
                                  "data belongs in metadata.", "quantity: Must be zero or more."]


def test_every_field_the_interface_lists_is_accepted(api, llm):
    full = rec(llm, cacheReadTokens=0, cacheWriteTokens=0, cacheWrite1hTokens=0, serviceTier="standard", quantity=2,
               usageDate="2026-01-05T10:00:00Z", metadata={"matterId": "M-1", "anything": {"nested": True}},
               environment="production", idempotencyKey="k-1")
    multi = {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "runs", "quantity": 1,
             "usageDate": "2026-01-05", "metadata": {}, "environment": "staging", "idempotencyKey": "k-2",
             "services": [{"model": llm.canonical_name, "modelProvider": llm.provider, "inputTokens": 1,
                           "outputTokens": 1, "cacheReadTokens": 0, "cacheWriteTokens": 0, "cacheWrite1hTokens": 0,
                           "serviceTier": "standard", "quantity": 1}]}
    body = post(api, full, multi)
    assert body["failed"] == 0, body["results"]["failed"]


def test_free_form_data_in_metadata_is_stored_as_sent(api, llm):
    body = post(api, rec(llm, metadata={"inputToken": 5, "timestamp": "x"}))
    event = UsageEvent.objects.get(pk=body["results"]["success"][0]["eventId"])
    assert event.metadata == {"inputToken": 5, "timestamp": "x"}


# --------------------------------------------------------------------------- booleans

SOME_ID = "00000000-0000-4000-8000-000000000001"
# Every request body that carries a boolean: (method, path, body without the boolean, the boolean's name).
BOOLEAN_BODIES = [
    ("post", "/v1/agents", {"name": "Bot", "agentCode": "bot"}, "isActive"),
    ("patch", f"/v1/agents/{SOME_ID}", {}, "isActive"),
    ("post", "/v1/pricing-plans", {"name": "Pro"}, "isActive"),
    ("patch", f"/v1/pricing-plans/{SOME_ID}", {}, "isActive"),
    ("post", "/v1/subscriptions", {"name": "Main"}, "isForever"),
    ("post", f"/v1/subscriptions/{SOME_ID}/credit-alerts-pause", {}, "paused"),
    ("post", "/v1/control/devices/heartbeat", {"customerExternalId": "dev@example.com", "deviceId": "d-1"}, "armed"),
    ("patch", f"/v1/subscriptions/{SOME_ID}", {}, "isForever"),
    ("post", "/v1/webhook-endpoints", {"url": "https://hooks.example.com/billing"}, "enabled"),
    ("patch", f"/v1/webhook-endpoints/{SOME_ID}", {}, "enabled"),
    ("patch", f"/v1/pricing-plans/{SOME_ID}/pricing-strategies/{SOME_ID}", {}, "active"),
]


def _refused_naming(resp, field) -> str:
    assert resp.status_code == 400, (resp.status_code, resp.content[:400])
    message = resp.json()["message"]
    mine = [line for line in (message if isinstance(message, list) else [message]) if line.startswith(f"{field}:")]
    assert mine, message
    return mine[0]


@pytest.mark.parametrize("method, path, body, field", BOOLEAN_BODIES)
@pytest.mark.parametrize("value", ["yes", "true", 1, 0, "false", None])
def test_a_boolean_in_a_body_takes_json_true_or_false_only(api, method, path, body, field, value):
    resp = getattr(api, method)(path, {**body, field: value})
    line = _refused_naming(resp, field)
    assert line in (f"{field}: Must be true or false (a JSON boolean).", f"{field}: This field may not be null.")


def test_a_strategy_active_flag_takes_json_booleans_only(api):
    resp = api.post(f"/v1/pricing-plans/{SOME_ID}/pricing-strategies", [{"name": "per page", "active": "yes"}])
    assert resp.status_code == 400
    assert "[0].active: Must be true or false (a JSON boolean)." in resp.json()["message"]


def test_a_refused_flag_changes_nothing(api, book):
    from tests.factories import AgentFactory
    agent = AgentFactory(book=book)
    resp = api.post("/v1/agents", {"name": "Bot", "agentCode": "bot-2", "isActive": "no"})
    _refused_naming(resp, "isActive")
    resp = api.patch(f"/v1/agents/{agent.id}", {"isActive": "no"})
    _refused_naming(resp, "isActive")
    agent.refresh_from_db()
    assert agent.is_active is True
    assert api.patch(f"/v1/agents/{agent.id}", {"isActive": False}).json()["isActive"] is False


@pytest.mark.parametrize("path, field", [("/v1/analytics/cost", "includePriorWindow"),
                                         ("/v1/portal-sessions", "includeExpired"), ("/v1/agents", "isActive"),
                                         ("/v1/pricing-plans", "isActive"), ("/v1/services", "isApi")])
@pytest.mark.parametrize("value", ["yes", "1", "0", "on"])
def test_a_boolean_query_parameter_takes_true_or_false_only(api, path, field, value):
    """As a body's boolean takes JSON true or false only, `1` and `0` included (contract.md "Booleans")."""
    assert _refused_naming(api.get(path, {field: value}), field) == f"{field}: Must be true or false."
    assert api.get("/v1/portal-sessions", {"includeExpired": "true"}).status_code == 200
    assert api.get("/v1/services", {"isApi": "False"}).status_code == 200  # the words in any case


def test_every_boolean_a_request_reads_is_strict():
    """No serializer that reads input (`...In`) holds DRF's lenient BooleanField, which reads "yes" as true."""
    from rest_framework import serializers

    from core.fields import Flag, QueryFlag

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    import config.urls  # noqa: F401  (every app's serializers are imported by its views)
    lenient = [f"{cls.__module__}.{cls.__name__}.{name}"
               for cls in subclasses(serializers.Serializer) if cls.__name__.endswith("In")
               and not cls.__module__.startswith(("rest_framework", "drf_spectacular"))
               for name, field in cls().fields.items()
               if isinstance(field, serializers.BooleanField) and not isinstance(field, (Flag, QueryFlag))]
    assert lenient == []



def _input_fields():
    """(where, field) for every field of every serializer that reads input (`...In`), the record shapes of
    POST /v1/usage/record aside: they only document it, record_validation.py reads records."""
    from rest_framework import serializers

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    import config.urls  # noqa: F401  (every app's serializers are imported by its views)
    for cls in subclasses(serializers.Serializer):
        if cls.__name__.endswith("In") and not cls.__module__.startswith(
                ("rest_framework", "drf_spectacular", "billing.serializers.usage")):
            for name, field in cls().fields.items():
                yield f"{cls.__module__}.{cls.__name__}.{name}", field
                if isinstance(field, serializers.ListField):
                    yield f"{cls.__module__}.{cls.__name__}.{name}[]", field.child


def test_every_text_and_id_a_request_reads_is_strict():
    """No serializer that reads input holds DRF's CharField or UUIDField, which read `5` as "5" and an integer as
    a UUID: text is core.fields.Text, an id core.fields.UuidIn (docs/decisions/numbers.md)."""
    from rest_framework import serializers

    lenient = [where for where, field in _input_fields()
               if type(field) in (serializers.CharField, serializers.UUIDField)]
    assert lenient == []


@pytest.mark.parametrize("path, body, field", [
    ("/v1/pricing-plans", {"name": 5}, "name"),
    ("/v1/matters", {"matterNumber": 7, "name": "n", "clientName": "c"}, "matterNumber"),
    ("/v1/webhook-endpoints", {"url": 5}, "url"),
    ("/v1/subscriptions", {"name": 5}, "name"),
    ("/v1/portal-sessions", {"customerExternalId": 12}, "customerExternalId"),
])
def test_a_number_where_text_belongs_is_a_400_naming_the_field(api, path, body, field):
    resp = api.post(path, body)
    assert resp.status_code == 400, resp.content
    assert any(message.startswith(f"{field}: ") for message in resp.json()["message"]), resp.json()


# --------------------------------------------------------------------------- quantity digits

FLOAT_PRINTS = ("0.30000000000000004", "0.016666666666666666", "3.14159265358979")  # what Python prints


def test_a_quantity_keeps_every_digit_a_client_prints_for_a_float_and_invoices_bill_it_exactly(api, book):
    import json

    from tests.billing.test_exact_invoices import JAN, Book
    acme = Book(api, book)
    plan, _ = acme.plan(("tickets", "1000.125"))
    subscription = acme.subscribe(plan)
    records = ",".join(
        f'{{"customerExternalId": "{acme.customer.external_id}", "agentCode": "{acme.agent.agent_code}", '
        f'"signalName": "tickets", "model": "in-house-model", "modelProvider": "in-house", '
        f'"usageDate": "2025-01-{10 + index}T00:00:00Z", "quantity": {quantity}}}'
        for index, quantity in enumerate(FLOAT_PRINTS))
    body = api.post("/v1/usage/record", f'{{"records": [{records}]}}', format=None,
                    content_type="application/json").json()
    assert [f["stored"] for f in body["results"]["failed"]] == [True] * 3  # unpriced model: cost plays no part
    assert sorted(UsageEvent.objects.values_list("quantity", flat=True)) == sorted(D(q) for q in FLOAT_PRINTS)
    assert sorted(row["quantity"] for row in api.get("/v1/events").json()) == sorted(FLOAT_PRINTS)

    invoice = json.loads(api.get(f"/v1/invoices/{acme.generate(subscription, JAN)['id']}").content,
                         parse_float=D)
    line, = [line for line in invoice["lines"] if line["chargeType"] == "usage"]
    # 0.30000000000000004 + 0.016666666666666666 + 3.14159265358979, every digit
    assert line["usedQuantity"] == line["quantity"] == D("3.458259320256456706")
    # 3.458259320256456706 x 1000.125 = 3458.691602671488763088..., rounded once to cents
    assert line["amount"] == D("3458.69")


def test_a_quantity_with_more_places_than_any_float_prints_fails_alone(api, llm):
    failure = post(api, rec(llm, quantity="0." + "0" * 340 + "1"))["results"]["failed"][0]
    assert (failure["code"], failure["stored"]) == ("invalid_record", False)
    assert failure["message"] == ["quantity: Ensure there are no more than 340 decimal places."]


# --------------------------------------------------------------------------- unknown models


@pytest.mark.parametrize("sent, meant", [("gpt4o", "gpt-4o"), ("gpt-4o-mni", "gpt-4o-mini"),
                                         ("GPT_4O", "gpt-4o")])
def test_an_unknown_model_suggests_the_closest_catalog_names(api, sent, meant):
    from catalog.models import ServiceEntry
    for name in ("gpt-4o", "gpt-4o-mini", "o3"):  # in the catalog the suite loads; made here if not
        if not ServiceEntry.objects.filter(provider="openai", canonical_name=name, is_active=True).exists():
            ServiceEntryFactory(canonical_name=name, provider="openai", input_cost=D("0.0000025"),
                                output_cost=D("0.00001"))
    ServiceEntryFactory(canonical_name="gpt-4o-mni-other", provider="elsewhere", input_cost=D("0.1"))
    record = {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "runs", "model": sent,
              "modelProvider": "openai", "inputTokens": 10}
    failure = post(api, record)["results"]["failed"][0]
    assert (failure["code"], failure["stored"]) == ("unknown_model", True)
    message = failure["message"][0]
    assert message.startswith(f"model: '{sent.lower()}' from provider 'openai' is not in the catalog (did you mean "
                              f"{meant}")
    assert "other" not in message  # names of another provider only when the provider has none


def test_an_unknown_model_like_no_catalog_name_gets_no_guess(api, llm):
    record = {"customerExternalId": "cust-1", "agentCode": "bot", "signalName": "runs", "model": "zzzz-house",
              "modelProvider": "acmeai", "inputTokens": 10}
    message = post(api, record)["results"]["failed"][0]["message"][0]
    assert message == ("model: 'zzzz-house' from provider 'acmeai' is not in the catalog; the event is stored with "
                       "cost null until the model is mapped (POST /v1/events/map-model).")


# --------------------------------------------------------------------------- ids in paths


@pytest.mark.parametrize("path", ["/v1/customers/cust-42", "/v1/customers/cust-42/revenue"])
def test_a_customer_path_given_an_external_id_says_it_takes_the_id_and_how_to_find_it(api, book, path):
    from tests.factories import CustomerFactory
    customer = CustomerFactory(book=book, external_id="cust-42")
    resp = api.get(path)
    assert resp.status_code == 404
    assert resp.json()["message"] == (
        "Customer not found: 'cust-42' is not a customer id; this takes the customer's `id` (a UUID). To find a "
        "customer's id from the value you sent, use GET /v1/customers?externalId=cust-42.")
    found, = api.get("/v1/customers", {"externalId": "cust-42"}).json()
    assert found["id"] == str(customer.id)
    assert api.get(f"/v1/customers/{customer.id}").status_code == 200


def test_an_unknown_customer_uuid_is_a_plain_404(api):
    resp = api.get("/v1/customers/00000000-0000-4000-8000-000000000009")
    assert (resp.status_code, resp.json()["message"]) == (404, "Customer not found")


def test_a_record_without_either_shape_names_the_fields_it_carries_instead(api, llm):
    record = rec(llm)
    record["Model"] = record.pop("model")
    record["provider"] = record.pop("modelProvider")
    resp = api.post("/v1/usage/record", {"records": [record]})
    assert resp.status_code == 400
    assert resp.json()["message"] == [
        "records[0]: Send either model and modelProvider (single-service shape) or services (multi-service shape); "
        "neither was given. Fields this record carries that a record does not take: Model (did you mean model?), "
        "provider (did you mean modelProvider?)."]


@pytest.mark.parametrize("field", ["upper", "minimumCommitment"])
def test_a_blank_string_in_a_nullable_number_is_a_400_not_a_null(api, book, field):
    """An open-ended tier and no minimum are JSON null; a blank string read as null made an open tier of a closed
    one, silently."""
    from tests.factories import AgentFactory
    from tests.billing.support import create_plan
    agent = AgentFactory(book=book)
    plan = create_plan(api, agent.id)
    strategy = {"name": "per page", "agentId": str(agent.id), "chargeType": "usage", "pricingModel": "graduated",
                "tiers": [{"lower": 0, "upper": 100, "rate": "1"}, {"lower": 100, "upper": None, "rate": "0.5"}]}
    if field == "upper":
        strategy["tiers"][0]["upper"] = ""
    else:
        strategy["minimumCommitment"] = " "
    resp = api.post(f"/v1/pricing-plans/{plan['id']}/pricing-strategies", [strategy])
    assert resp.status_code == 400, resp.json()
    assert any("A valid number is required." in line for line in resp.json()["message"]), resp.json()
