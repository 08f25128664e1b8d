"""The OpenAPI schema documents every /v1 route, cleanly, and the reference pages serve it locally."""
import contextlib
import io
import json
import re

import pytest
import yaml
from django.contrib.staticfiles import finders
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.generators import SchemaGenerator

from accounts.api import OrgApiView
from tests.routes import DOCUMENTATION_ROUTES, api_routes

ERROR_REF = {"$ref": "#/components/schemas/Error"}


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The schema as `manage.py spectacular --validate` writes it, and what generation complained about."""
    out = tmp_path_factory.mktemp("openapi") / "openapi.json"
    complaints = io.StringIO()
    with contextlib.redirect_stderr(complaints):
        call_command("spectacular", "--validate", "--format", "openapi-json", "--file", str(out))
        has_warnings = bool(GENERATOR_STATS)  # what --fail-on-warn tests
    return json.loads(out.read_text()), has_warnings, complaints.getvalue()


@pytest.fixture(scope="module")
def schema(generated):
    return generated[0]


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_schema_generation_has_no_warnings_or_errors(generated):
    _, has_warnings, complaints = generated
    assert not has_warnings, f"drf-spectacular complained (would fail --fail-on-warn):\n{complaints}"


def test_every_v1_route_and_method_is_in_the_schema(schema):
    routes = list(api_routes())
    assert {"/v1/verify", "/v1/invitations/accept/{token}"} <= {path for path, _, _ in routes}  # the walk works
    missing = [f"{method.upper()} {path}" for path, _, method in routes
               if method not in schema["paths"].get(path, {})]
    assert not missing, f"routes missing from the OpenAPI schema: {missing}"


def test_schema_documents_only_v1_routes(schema):
    assert schema["paths"]
    assert all(path.startswith("/v1/") for path in schema["paths"])
    assert not DOCUMENTATION_ROUTES & set(schema["paths"])


def test_operation_ids_are_unique(schema):
    ids = [operation["operationId"] for _, _, operation in operations(schema)]
    assert len(ids) == len(set(ids))
    assert schema["paths"]["/v1/verify"]["get"]["operationId"] == "get_verify"


def test_api_key_security_scheme_is_the_x_api_key_header(schema):
    scheme = schema["components"]["securitySchemes"]["ApiKeyAuth"]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "x-api-key")


def test_every_api_key_route_requires_the_key_and_documents_its_errors(schema):
    key_routes = [(path, method) for path, view_class, method in api_routes()
                  if view_class is not None and issubclass(view_class, OrgApiView)]
    assert ("/v1/verify", "get") in key_routes
    for path, method in key_routes:
        operation = schema["paths"][path][method]
        assert operation["security"] == [{"ApiKeyAuth": []}], (path, method)
        for status in ("401", "429"):
            assert operation["responses"][status]["content"]["application/json"]["schema"] == ERROR_REF
        assert "**Access:**" in operation["description"]


def test_error_component_is_message_string_or_strings_and_optional_code(schema):
    error = schema["components"]["schemas"]["Error"]
    assert error["required"] == ["message"]
    assert error["properties"]["message"]["oneOf"] == [
        {"type": "string"}, {"type": "array", "items": {"type": "string"}}]
    assert error["properties"]["code"]["type"] == "string"


def test_standard_errors_follow_the_operation_shape(schema):
    paths = schema["paths"]
    assert set(paths["/v1/verify"]["get"]["responses"]) == {"200", "401", "429", "500", "503"}  # any key, no input
    accept = paths["/v1/invitations/accept/{token}"]["post"]["responses"]
    assert {"201", "401", "403", "404"} <= set(accept)  # path parameter: 404
    invite = paths["/v1/invitations"]["post"]
    assert "400" in invite["responses"]  # a body: 400
    assert invite["security"] == [{"cookieAuth": []}]  # a user-session route, not an API-key one
    assert invite["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/InvitationCreateIn"}


def test_field_names_are_camel_case(schema):
    key_info = schema["components"]["schemas"]["KeyInfoOut"]["properties"]
    assert {"userEmail", "createdAt", "lastUsedAt"} <= set(key_info)
    assert not [name for name in key_info if "_" in name]


def test_access_sentence_states_the_key_policy():
    """Probe views of the auth-layer tests: writes limited to roles, legal scope, publishable 401."""
    with contextlib.redirect_stderr(io.StringIO()):  # the probes have no serializers to document
        probe_schema = SchemaGenerator(urlconf="tests.accounts.policy_urls").get_schema(public=True)
    caps, matters = probe_schema["paths"]["/v1/probe/caps"], probe_schema["paths"]["/v1/probe/matters"]
    assert caps["get"]["description"] == "**Access:** Any secret key."
    assert caps["post"]["description"] == (
        "**Access:** A secret key with scope full, of a member with role owner or finance.")
    assert "scope full or legal" in matters["get"]["description"]
    assert "publishable keys get 401" in probe_schema["paths"]["/v1/probe/portal"]["get"]["description"]
    assert "403" in caps["post"]["responses"]
    assert "403" not in probe_schema["paths"]["/v1/verify"]["get"]["responses"]


def test_openapi_json_and_yaml_are_served_without_a_key(client):
    as_json = client.get("/v1/openapi.json")
    assert as_json.status_code == 200
    assert as_json["Content-Type"].startswith("application/vnd.oai.openapi+json")
    assert "/v1/verify" in json.loads(as_json.content)["paths"]
    as_yaml = client.get("/v1/openapi.yaml")
    assert as_yaml.status_code == 200
    assert "/v1/verify" in yaml.safe_load(as_yaml.content)["paths"]


@pytest.mark.parametrize("page, asset", [
    ("/v1/docs", "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js"),
    ("/v1/redoc", "drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"),
])
def test_reference_pages_load_their_assets_locally(client, page, asset):
    resp = client.get(page)
    assert resp.status_code == 200
    html = resp.content.decode()
    assert f"/static/{asset}" in html
    assert finders.find(asset), f"{asset} is not among the static files"
    assert "/v1/openapi.json" in html
    assert not re.findall(r"""(?:src|href)=["']https?://""", html), "the page loads something from another origin"


# --------------------------------------------------------------------------- the reference a client author reads

def own_description(operation) -> str:
    """The operation's description without the access sentence ApiKeySchema appends."""
    return operation.get("description", "").split("**Access:**")[0].strip()


def test_every_operation_has_a_summary_and_a_description(schema):
    problems = []
    for path, method, operation in operations(schema):
        summary = operation.get("summary", "")
        if not summary or summary == operation["operationId"] or len(summary) > 80 or summary.endswith("."):
            problems.append(f"{method.upper()} {path}: summary {summary!r}")
        if not own_description(operation):
            problems.append(f"{method.upper()} {path}: no description of its own")
    assert not problems, "\n".join(problems)


def test_summaries_tell_operations_apart(schema):
    summaries = [operation["summary"] for _, _, operation in operations(schema)]
    assert len(summaries) == len(set(summaries)), sorted(s for s in summaries if summaries.count(s) > 1)
    assert schema["paths"]["/v1/agents"]["get"]["summary"] == "List agents"


def test_every_operation_declares_server_faults_with_the_error_envelope(schema):
    for path, method, operation in operations(schema):
        for status in ("500", "503"):
            response = operation["responses"].get(status)
            assert response, f"{method.upper()} {path} does not declare {status}"
            assert response["content"]["application/json"]["schema"] == ERROR_REF, (path, method, status)


def test_every_operation_with_a_body_declares_the_size_limit_and_json_only(schema, settings):
    with_body = [(path, method, operation) for path, method, operation in operations(schema)
                 if "requestBody" in operation]
    assert len(with_body) > 30
    limit = f"{settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes"
    for path, method, operation in with_body:
        too_large = operation["responses"].get("413")
        assert too_large, f"{method.upper()} {path} does not declare 413"
        assert too_large["content"]["application/json"]["schema"] == ERROR_REF
        assert limit in too_large["description"], too_large["description"]
        if path != "/v1/webhooks/stripe":  # the webhook reads the raw bytes its signature covers
            assert "415" in operation["responses"], f"{method.upper()} {path} does not declare 415"
    assert "415" not in schema["paths"]["/v1/webhooks/stripe"]["post"]["responses"]
    assert "413" not in schema["paths"]["/v1/customers"]["get"]["responses"]


def test_pdf_downloads_are_declared_as_pdf_bytes(schema):
    pdf_operations = [(path, operation) for path, method, operation in operations(schema) if path.endswith("/pdf")]
    assert [path for path, _ in pdf_operations] == ["/v1/invoices/{invoice_id}/pdf"]
    for path, operation in pdf_operations:
        assert operation["responses"]["200"]["content"] == {
            "application/pdf": {"schema": {"type": "string", "format": "binary"}}}, path
        assert operation["responses"]["404"]["content"]["application/json"]["schema"] == ERROR_REF


def test_bare_array_lists_declare_their_total_count_header(schema):
    customers = schema["paths"]["/v1/customers"]["get"]["responses"]["200"]
    assert customers["headers"]["X-Total-Count"]["schema"] == {"type": "integer"}
    assert "headers" not in schema["paths"]["/v1/control/caps"]["get"]["responses"]["200"]  # not paged


def test_statuses_the_services_raise_are_declared(schema):
    """Spot checks of errors raised below the view (found by reading the services each view calls)."""
    paths = schema["paths"]
    assert "400" in paths["/v1/control/caps/{cap_id}"]["delete"]["responses"]  # the org cap under dev caps
    assert "422" in paths["/v1/analytics/mrr"]["get"]["responses"]  # a stored strategy that cannot price
    assert {"409", "422"} <= set(paths["/v1/invoices/generate"]["post"]["responses"])
    assert {"400", "409"} <= set(paths["/v1/pricing-plans/{plan_id}/agents/{agent_id}"]["delete"]["responses"])


def component(schema, ref) -> dict:
    return schema["components"]["schemas"][ref["$ref"].rsplit("/", 1)[1]]


def test_usage_record_examples_are_what_the_service_answers(schema, api):
    """The documented request, sent as is, answers the documented shape: the same outcome per record and the
    same fields in each entry, every one of them declared by the entry's schema."""
    operation = schema["paths"]["/v1/usage/record"]["post"]
    request_example = next(iter(operation["requestBody"]["content"]["application/json"]["examples"].values()))
    answer_example = next(iter(operation["responses"]["200"]["content"]["application/json"]["examples"].values()))
    resp = api.post("/v1/usage/record", request_example["value"])
    assert resp.status_code == 200, resp.content
    answer, documented = resp.json(), answer_example["value"]
    assert {key: answer[key] for key in ("processed", "successful", "failed")} == {
        key: documented[key] for key in ("processed", "successful", "failed")}
    declared = {"success": set(schema["components"]["schemas"]["RecordSuccessOut"]["properties"]),
                "failed": set(schema["components"]["schemas"]["RecordFailureOut"]["properties"])}
    for outcome in ("success", "failed"):
        for live, example in zip(answer["results"][outcome], documented["results"][outcome], strict=True):
            assert set(live) == set(example), (outcome, live, example)
            assert set(live) <= declared[outcome], (outcome, set(live) - declared[outcome])
            # Ids are new on every call; costs follow the catalog's rates, which a catalog refresh moves.
            volatile = {"eventId", "rawEventId", "totalCostUsd"}
            assert {k: v for k, v in live.items() if k not in volatile} == {
                k: v for k, v in example.items() if k not in volatile}
            assert (live.get("totalCostUsd") is None) == (example.get("totalCostUsd") is None)
