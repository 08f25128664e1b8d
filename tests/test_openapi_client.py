"""A client generated from the live schema works: `openapi-python-client` builds it without a warning, and a
billing scenario runs through it against a live server (create a customer and its billing chain, record usage,
list the events, generate an invoice and download its PDF).

Every answer the client parses must fit the schema: a status it does not declare raises
(`raise_on_unexpected_status`), and a field the live answer carries that the schema does not declare lands in
a model's `additional_properties`, which must stay empty.

The one option a client author sets: the invoice PDF is `application/pdf`, which the generator reads as bytes
only when told (`content_type_overrides`, docs/architecture.md "OpenAPI").
"""
import importlib
import json
import subprocess
import sys
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import attrs
import pytest

from tests.factories import ServiceEntryFactory

pytestmark = pytest.mark.django_db(transaction=True)

PACKAGE = "billing_api_client"
GENERATOR_CONFIG = f"""\
package_name_override: {PACKAGE}
content_type_overrides:
  application/pdf: application/octet-stream
"""


def generate_client(schema: dict, workdir: Path) -> str:
    """Generate the client package under `workdir`; returns what the generator printed."""
    (workdir / "schema.json").write_text(json.dumps(schema))
    (workdir / "config.yml").write_text(GENERATOR_CONFIG)
    bin_dir = str(Path(sys.executable).parent)  # its post-hooks run ruff from the virtualenv
    result = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", "schema.json",
         "--config", "config.yml", "--meta", "none", "--output-path", str(workdir / PACKAGE)],
        cwd=workdir, capture_output=True, text=True, timeout=120, env={"PATH": bin_dir, "HOME": str(workdir)})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    return output


@pytest.fixture
def generated(client, tmp_path):
    """The generated package, importable for the test's duration."""
    schema = json.loads(client.get("/v1/openapi.json").content)
    output = generate_client(schema, tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        yield importlib.import_module(PACKAGE), output
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name == PACKAGE or name.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def undeclared_fields(value, where="answer") -> list[str]:
    """Fields of a parsed answer that its schema does not declare (a model with declared fields and leftovers in
    `additional_properties`); free-form objects (`metadata`, `context`) declare none and may hold anything."""
    found = []
    if attrs.has(type(value)) and hasattr(value, "additional_properties"):  # a model (not the PDF's `File`)
        declared = [field.name for field in attrs.fields(type(value)) if field.name != "additional_properties"]
        if declared and value.additional_properties:
            found.append(f"{where} ({type(value).__name__}): {sorted(value.additional_properties)}")
        for name in declared:
            found += undeclared_fields(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += undeclared_fields(item, f"{where}[{index}]")
    return found


class GeneratedApi:
    """The generated client bound to one API key: `call` an operation by tag and name, build a `model`."""

    def __init__(self, package, base_url: str, raw_key: str):
        self.package = package
        self.client = package.AuthenticatedClient(base_url=base_url, token=raw_key, prefix="",
                                                  auth_header_name="x-api-key", raise_on_unexpected_status=True)

    def model(self, name: str):
        return getattr(importlib.import_module(f"{PACKAGE}.models"), name)

    def call(self, tag: str, name: str, status: int, **kwargs):
        """The parsed answer of one operation, after checking its status and that it fits the schema."""
        response = importlib.import_module(f"{PACKAGE}.api.{tag}.{name}").sync_detailed(client=self.client, **kwargs)
        assert response.status_code == status, (name, response.status_code, response.content[:600])
        assert not undeclared_fields(response.parsed), undeclared_fields(response.parsed)
        return response.parsed


def test_a_generated_client_runs_the_billing_scenario(generated, live_server, client_for):
    package, output = generated
    assert "warning" not in output.lower(), output
    api = GeneratedApi(package, live_server.url, client_for().raw_key)
    with api.client:  # closes its keep-alive connection, so the live server's thread lets go of the database
        run_billing_scenario(api)


def run_billing_scenario(api: GeneratedApi):
    call, model = api.call, api.model
    ServiceEntryFactory(canonical_name="scenario-llm", provider="scenarioai", input_cost=Decimal("0.000002"),
                        output_cost=Decimal("0.00001"))

    customer = call("customers", "post_customers", 201,
                    body=model("CustomerWriteIn").from_dict({"name": "Acme Corp", "externalId": "acme-corp"}))
    agent = call("agents", "post_agents", 201,
                 body=model("AgentWriteIn").from_dict({"name": "Support bot", "agentCode": "support-bot"}))
    signal = call("signals", "post_signals", 201, body=model("SignalCreateIn").from_dict(
        {"name": "ticket_resolved", "agentId": str(agent.id)}))
    plan = call("pricing_plans", "post_pricing_plans", 201,
                body=model("PlanCreateIn").from_dict({"name": "Pro", "agentId": str(agent.id)}))
    call("pricing_plans", "post_pricing_plans_plan_id_pricing_strategies", 201, plan_id=str(plan.id), body=[
        model("StrategyIn").from_dict({"name": "per ticket", "agentId": str(agent.id), "chargeType": "usage",
                                       "signalId": str(signal.id), "pricingModel": "flat", "rate": "0.50"})])
    month_start = datetime.now(UTC).replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    subscription = call("subscriptions", "post_subscriptions", 201, body=model("SubscriptionCreateIn").from_dict(
        {"name": "Main", "planId": str(plan.id), "agentId": str(agent.id), "customerId": str(customer.id),
         "startDate": month_start.isoformat()}))

    chain = {"customerExternalId": "acme-corp", "agentCode": "support-bot", "signalName": "ticket_resolved"}
    recorded = call("usage", "usage_record", 200, body=model("UsageRecordBatchIn").from_dict({"records": [
        {**chain, "model": "scenario-llm", "modelProvider": "scenarioai", "inputTokens": 1000, "outputTokens": 100,
         "idempotencyKey": "scenario-1", "metadata": {"ticketId": "T-1"}},
        {**chain, "model": "scenario-llm", "modelProvider": "scenarioai", "inputTokens": 500, "quantity": "2"},
        {**chain, "model": "unknown-llm", "modelProvider": "scenarioai", "inputTokens": 10},
    ]}))
    assert (recorded.processed, recorded.successful, recorded.failed) == (3, 2, 1)
    assert recorded.results.success[0].total_cost_usd == "0.003"
    [stored] = recorded.results.failed
    assert (stored.code, stored.stored, stored.total_cost_usd) == ("unknown_model", True, None)
    assert stored.timestamp and stored.raw_event_id  # a stored failure carries the event's fields

    events = call("events", "events_list", 200, customer_id=str(customer.id))
    assert len(events) == 3
    assert {event.usage_cost for event in events} == {"0.003", "0.001", None}

    invoice = call("invoices", "post_invoices_generate", 201, body=model("InvoiceGenerateIn").from_dict(
        {"customerId": str(customer.id), "subscriptionId": str(subscription.id)}))
    assert invoice.status == "draft"
    pdf = call("invoices", "get_invoices_invoice_id_pdf", 200, invoice_id=str(invoice.id))
    assert pdf.payload.read().startswith(b"%PDF")

    missing = call("customers", "get_customers_customer_id", 404, customer_id=str(subscription.id))
    assert missing.message == "Customer not found"
