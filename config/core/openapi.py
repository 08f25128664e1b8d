"""The OpenAPI schema of /v1 (drf-spectacular): operation ids, the Error component and the standard
error responses of every operation.

`ApiSchema` is DRF's DEFAULT_SCHEMA_CLASS. Views describe their request and response bodies with
`@extend_schema(request=..., responses=...)`; this class adds, per operation, the errors the shared
layers produce:

- 400 when the operation takes a body or query parameters (validation, malformed JSON);
- 404 when its path has a parameter or its body names records by UUID (missing, malformed and foreign
  ids read alike);
- 401/403 (and 429) from the view's authentication, see `auth_error_statuses`;
- 503 on every operation (the database does not answer);
- any other error status a view declares itself: `responses={201: CustomerOut, 409: ErrorOut}`
  (its description is filled in here).

Authentication by API key is described by `config.accounts.openapi.ApiKeySchema`, the schema class of
`OrgApiView` (core does not import the accounts app).
"""
import inspect
import re

import inflection
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
    422: "Structurally valid but inconsistent.",
    429: "Request rate exceeded; retry after `Retry-After` seconds.",
    503: "The database is unavailable (`code: service_unavailable`); transient, retry after `Retry-After` seconds.",
}

RETRY_AFTER_HEADER = {"Retry-After": {"description": "Seconds to wait before retrying.",
                                      "schema": {"type": "integer"}}}


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

    def get_description(self) -> str:
        # The view's own docstrings only: inspect.getdoc would hand every view its base class's docstring.
        method = getattr(self.view, self.method.lower(), None)
        own_doc = getattr(method, "__doc__", None) or type(self.view).__doc__
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
        statuses = self.auth_error_statuses() | {503}
        if "requestBody" in operation or any(p["in"] == "query" for p in parameters):
            statuses.add(400)
        if any(p["in"] == "path" for p in parameters) or (
                "requestBody" in operation and names_records(self.get_request_serializer())):
            statuses.add(404)
        responses = operation["responses"]
        error_ref = self.resolve_serializer(ErrorOut, "response").ref
        for status in statuses:
            responses.setdefault(str(status), {"content": {"application/json": {"schema": error_ref}}})
        for code, response in responses.items():
            if code.isdigit() and int(code) >= 400:
                response.setdefault("content", {"application/json": {"schema": error_ref}})  # the envelope
                if not response.get("description"):
                    response["description"] = self.error_descriptions.get(int(code), "Error.")
            if code in ("429", "503"):
                response.setdefault("headers", {}).update(RETRY_AFTER_HEADER)
        operation["responses"] = dict(sorted(responses.items()))
        return operation
