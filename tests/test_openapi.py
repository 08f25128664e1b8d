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

from config.accounts.api import OrgApiView
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
    assert set(paths["/v1/verify"]["get"]["responses"]) == {"200", "401", "429", "503"}  # any key, no input
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
