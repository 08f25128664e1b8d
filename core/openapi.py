"""The OpenAPI schema of /v1 (drf-spectacular): operation ids, summaries and descriptions, the Error
component and the standard error responses of every operation.

`ApiSchema` is DRF's DEFAULT_SCHEMA_CLASS. Views describe their request and response bodies with
`@extend_schema(request=..., responses=...)`; this class adds, per operation:

- the summary: the summary line of the view method's docstring (its final period dropped), unless the view
  gives `summary=`; the description: the paragraphs after it, else the view class's own docstring, unless
  the view gives `description=`;
- the errors the shared layers produce, each answered with the Error envelope:
  - 400 when the operation takes a body or query parameters (validation, malformed JSON);
  - 413 (a body over REQUEST_BODY_MAX_BYTES, refused by the request middleware) and 415 (a body that
    is not JSON) when it takes a body;
  - 404 when its path has a parameter or its body names records by UUID (missing, malformed and foreign
    ids read alike);
  - 401/403 (and 429) from the view's authentication, see `auth_error_statuses`;
  - 500 (a server fault, spec §7: retry once) and 503 (the database does not answer) on every operation;
  - any other error status a view declares itself: `responses={201: CustomerOut, 409: ErrorOut}`
    (its description is filled in here);
- the `X-Total-Count` header of the bare-array lists (an array answer paged by `offset`).

Authentication by API key is described by `accounts.openapi.ApiKeySchema`, the schema class of
`OrgApiView` (core does not import the accounts app).
"""
import inspect
import re

import inflection
from django.conf import settings
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import (
    build_basic_type, build_parameter_type, force_instance, is_list_serializer, is_serializer,
    resolve_django_path_parameter, resolve_regex_path_parameter,
)
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema_field, extend_schema_serializer
from rest_framework import serializers

ERROR_DESCRIPTIONS = {
    400: "Malformed request: a missing or invalid field, an invalid UUID or ISO 8601 date, a value "
         "outside its allowed list, or malformed JSON. `message` lists the faulty fields.",
    401: "Not authenticated.",
    403: "Authenticated, but not allowed to do this.",
    404: "No such record in your organization (missing, malformed and foreign ids read alike).",
    409: "Conflicts with existing data: a duplicate unique value, a reused idempotency key, or "
         "dependent records.",
    410: "Gone.",
    415: "The body is not JSON: send it with `Content-Type: application/json`.",
    422: "Structurally valid but inconsistent.",
    429: "Request rate exceeded; retry after `Retry-After` seconds.",
    500: "Server fault (`message: Internal server error.`); retry once.",
    503: "The database is unavailable (`code: service_unavailable`); transient, retry after `Retry-After` seconds.",
}

RETRY_AFTER_HEADER = {"Retry-After": {"description": "Seconds to wait before retrying.",
                                      "schema": {"type": "integer"}}}
TOTAL_COUNT_HEADER = {"X-Total-Count": {"description": "Rows matching the filters, across every window.",
                                        "required": True, "schema": {"type": "integer"}}}


def body_too_large_description() -> str | None:
    """What the 413 of an operation with a body says, or None when the deployment sets no limit."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    if limit is None:
        return None
    return (f"The request body is larger than the limit of {limit} bytes ({limit / 1048576:g} MiB) and was not "
            f"read (`code: request_too_large`).")


@extend_schema_field({"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]})
class MessageField(serializers.Field):
    """`message`: one sentence, or a list of "field: problem" strings."""

    def to_representation(self, value):
        return value


@extend_schema_serializer(component_name="Error")
class ErrorOut(serializers.Serializer):
    """The body of every error response (spec §7)."""

    message = MessageField()
    code = serializers.CharField(required=False, help_text="Set on some errors, e.g. `key_revoked`.")


def only_api_routes(endpoints):
    """Preprocessing hook: the schema documents /v1 only (not /healthz, /readyz, the console or the
    hosted pages)."""
    return [endpoint for endpoint in endpoints if endpoint[0].startswith("/v1/")]


def drop_enum_ids(result, **kwargs):
    """Postprocessing hook: enums stay inline in each field (independent serializers reuse names such
    as `status` with different choices, which shared enum components would make collide); drop the
    internal `x-spec-enum-id` marks that only the enum-component hook reads."""
    def clean(node):
        if isinstance(node, dict):
            node.pop("x-spec-enum-id", None)
            for value in node.values():
                clean(value)
        elif isinstance(node, list):
            for value in node:
                clean(value)
    clean(result)
    return result


def names_records(serializer) -> bool:
    """Whether a request body carries record ids (UUID fields, nested ones included): the service resolves
    each in the caller's book, so an unknown one is a 404."""
    serializer = force_instance(serializer)
    if is_list_serializer(serializer):
        serializer = serializer.child
    if not is_serializer(serializer):
        return False
    for field in serializer.fields.values():
        while isinstance(field, serializers.ListField):
            field = field.child
        if isinstance(field, serializers.UUIDField):
            return True
        if is_serializer(field) and names_records(field):
            return True
    return False


class ApiSchema(AutoSchema):
    error_descriptions = ERROR_DESCRIPTIONS

    def get_operation_id(self) -> str:
        # Method plus the whole path, parameters included: unique per operation by construction
        # (drf-spectacular's default drops parameters, so `GET /matters` and `GET /matters/{id}` collide).
        path = re.sub(self.path_prefix, "", self.path)
        tokens = [inflection.underscore(part.strip("{}")).replace("-", "_") for part in path.split("/") if part]
        return "_".join([self.method.lower(), *tokens])

    def _method_doc(self) -> tuple[str, str]:
        """(summary line, the paragraphs after it) of the view method's own docstring (PEP 257 layout);
        ("", "") without one."""
        method = getattr(self.view, self.method.lower(), None)
        doc = inspect.cleandoc(method.__doc__) if getattr(method, "__doc__", None) else ""
        first, _, rest = doc.partition("\n\n")
        return " ".join(first.split()), rest.strip()

    def get_summary(self) -> str | None:
        # Redoc and Swagger UI head each operation with it (the operation id otherwise).
        return self._method_doc()[0].removesuffix(".") or None

    def get_description(self) -> str:
        # The view's own docstrings only: inspect.getdoc would hand every view its base class's docstring.
        rest = self._method_doc()[1]
        own_doc = rest or type(self.view).__doc__
        return inspect.cleandoc(own_doc) if own_doc else ""

    def _resolve_path_parameters(self, variables):
        # An untyped `<name>` in a Django route is the `str` converter: document it as a string
        # instead of warning that no model could type it (our views have no querysets).
        untyped = [variable for variable in variables
                   if not resolve_django_path_parameter(self.path_regex, variable, self.map_renderers("format"))
                   and not resolve_regex_path_parameter(self.path_regex, variable)]
        typed = super()._resolve_path_parameters([v for v in variables if v not in untyped])
        return typed + [build_parameter_type(name=variable, location=OpenApiParameter.PATH,
                                             schema=build_basic_type(OpenApiTypes.STR))
                        for variable in untyped]

    def auth_error_statuses(self) -> set[int]:
        """Errors of the view's authentication layer; API-key views add theirs in ApiKeySchema."""
        return {401, 403} if self.view.get_authenticators() else set()

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is None:
            return None
        parameters = operation.get("parameters", [])
        has_body = "requestBody" in operation
        statuses = self.auth_error_statuses() | {500, 503}
        descriptions = dict(self.error_descriptions)
        if has_body or any(p["in"] == "query" for p in parameters):
            statuses.add(400)
        if has_body:
            too_large = body_too_large_description()
            if too_large:
                statuses.add(413)
                descriptions[413] = too_large
            if not getattr(self.view, "reads_raw_body", False):  # a body the JSON parser reads
                statuses.add(415)
        if any(p["in"] == "path" for p in parameters) or (
                has_body and names_records(self.get_request_serializer())):
            statuses.add(404)
        responses = operation["responses"]
        error_ref = self.resolve_serializer(ErrorOut, "response").ref
        for status in statuses:
            responses.setdefault(str(status), {"content": {"application/json": {"schema": error_ref}}})
        for code, response in responses.items():
            if code.isdigit() and int(code) >= 400:
                response.setdefault("content", {"application/json": {"schema": error_ref}})  # the envelope
                if not response.get("description"):
                    response["description"] = descriptions.get(int(code), "Error.")
            if code in ("429", "503"):
                response.setdefault("headers", {}).update(RETRY_AFTER_HEADER)
        ok = responses.get("200", {}).get("content", {}).get("application/json", {}).get("schema", {})
        if ok.get("type") == "array" and any(p["in"] == "query" and p["name"] == "offset" for p in parameters):
            responses["200"].setdefault("headers", {}).update(TOTAL_COUNT_HEADER)  # core.pagination
        operation["responses"] = dict(sorted(responses.items()))
        return operation
