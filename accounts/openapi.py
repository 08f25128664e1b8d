"""How the two kinds of /v1 views appear in the OpenAPI schema.

`OrgApiView` (ApiKeySchema): the `x-api-key` security scheme, the errors of the key policy (401, 403,
429; 503 also when the key cannot be checked) and one sentence per operation saying which keys may call
it. `SessionApiView` (SessionSchema): the session cookie, with what its 401 and 403 mean.
"""
from typing import NamedTuple

from drf_spectacular.plumbing import ResolvedComponent
from rest_framework.permissions import SAFE_METHODS

from accounts.models import KeyScope, Role
from core.openapi import ERROR_DESCRIPTIONS, ApiSchema

API_KEY_SCHEME = "ApiKeyAuth"
API_KEY_SECURITY_SCHEME = {
    "type": "apiKey",
    "in": "header",
    "name": "x-api-key",
    "description": ("A secret (`svc_sk_test_…`, `svc_sk_live_…`) or publishable (`svc_pk_…`) key. The key "
                    "identifies the organization and picks its test or live books."),
}

KEY_ERROR_DESCRIPTIONS = {
    **ERROR_DESCRIPTIONS,
    401: ("API key missing, malformed, unknown, of an environment this deployment does not accept, or "
          "revoked (`code: key_revoked`)."),
    403: ("This key may not do this: a publishable key, or a scope or role the route does not allow; "
          "the message says what is needed."),
    429: ("Request rate exceeded, or `code: too_many_auth_failures` after too many failed key attempts "
          "from one network; retry after `Retry-After` seconds."),
    503: ("The database is unavailable (`code: service_unavailable`), or the key could not be checked because "
          "of it (`code: auth_unavailable`); transient, retry after `Retry-After` seconds."),
}


class KeyPolicy(NamedTuple):
    """Which keys a view admits for one method (its OrgApiView policy attributes)."""
    publishable: bool  # publishable keys may call it
    scopes: list[str]  # secret-key scopes allowed, in KeyScope order
    roles: list[str] | None  # member roles allowed, in Role order; None: any
    any_scope: bool


def _phrase(words) -> str:
    words = list(words)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]


class ApiKeySchema(ApiSchema):
    error_descriptions = KEY_ERROR_DESCRIPTIONS

    def key_policy(self) -> KeyPolicy:
        view = self.view
        is_read = self.method in SAFE_METHODS
        scopes = view.read_scopes if is_read else view.write_scopes
        roles = view.read_roles if is_read else view.write_roles
        return KeyPolicy(
            publishable=view.allow_publishable and is_read,
            scopes=[scope for scope in KeyScope.values if scope in scopes],
            roles=None if roles is None else [role for role in Role.values if role in roles],
            any_scope=set(scopes) == set(KeyScope.values),
        )

    def get_auth(self):
        self.registry.register_on_missing(ResolvedComponent(
            name=API_KEY_SCHEME, type=ResolvedComponent.SECURITY_SCHEMA, object=API_KEY_SCHEME,
            schema=API_KEY_SECURITY_SCHEME,
        ))
        return [{API_KEY_SCHEME: []}]

    def auth_error_statuses(self) -> set[int]:
        policy = self.key_policy()
        admits_every_key = policy.publishable and policy.any_scope and policy.roles is None
        return {401, 429} | (set() if admits_every_key else {403})

    def access_sentence(self) -> str:
        policy = self.key_policy()
        if policy.publishable:
            who = "Any key, secret or publishable"
        elif policy.any_scope:
            who = "Any secret key"
        else:
            who = f"A secret key with scope {_phrase(policy.scopes)}"
        if policy.roles is not None:
            who += f", of a member with role {_phrase(policy.roles)}"
        if not policy.publishable and self.view.publishable_status == 401:
            who += "; publishable keys get 401"
        return who + "."

    def get_operation(self, *args, **kwargs):
        operation = super().get_operation(*args, **kwargs)
        if operation is not None:  # after @extend_schema(description=...), which replaces get_description
            access = f"**Access:** {self.access_sentence()}"
            description = operation.get("description")
            operation["description"] = f"{description}\n\n{access}" if description else access
        return operation


class SessionSchema(ApiSchema):
    error_descriptions = {
        **ERROR_DESCRIPTIONS,
        401: "Not signed in: this route needs a dashboard session.",
        403: "An API key was sent (this route takes a signed-in user only), or the user may not do this.",
    }
