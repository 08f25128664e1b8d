"""The one authentication and permission layer of /v1.

Every endpoint subclasses `OrgApiView` and states what it needs in class attributes:

    class CapCreateApi(OrgApiView):
        read_scopes = {"full", "ingest", "legal"}   # secret-key scopes allowed to read
        write_roles = {"owner", "finance"}           # member roles allowed to write

The view then has `self.book` (the caller's organization book, test or live), `self.api_key`
and `self.organization`.
"""
import ipaddress
import logging

from django.conf import settings
from django.db import DatabaseError
from rest_framework.permissions import SAFE_METHODS
from rest_framework.views import APIView

from accounts.keys import is_well_formed
from accounts.models import ApiKey, KeyScope, KeyType, Role
from accounts.openapi import ApiKeySchema
from accounts.request_log import LogEntry, buffer, loggable_path
from accounts.services import api_key_find
from accounts.throttling import admit_key, record_auth_failure
from core import clock
from core.database import retry_while_reconnecting
from core.errors import AuthUnavailable, Forbidden, KeyRevoked, Unauthorized

logger = logging.getLogger("billing.auth")

ALL_SCOPES = frozenset(KeyScope.values)
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
MONEY_ROLES = frozenset({Role.OWNER, Role.ADMIN, Role.FINANCE})

PUBLISHABLE_MESSAGE = ("Publishable keys can only call GET /v1/verify and GET /v1/me/key; "
                       "use a secret key for this request.")
SCOPE_MESSAGES = {
    KeyScope.INGEST: ("This ingest-only key can only record usage (POST /v1/usage/record), call /v1/verify, "
                      "read its own key info and read spend controls (caps, spend, coverage); "
                      "use a full secret key for this request."),
    KeyScope.LEGAL: ("This legal key can only reach the matters endpoints, record usage, call /v1/verify, "
                     "read its own key info and read spend controls; use a full secret key for this request."),
}


def client_ip(request) -> str | None:
    """The caller's address, which every per-network limit counts by; None if unparsable.

    REMOTE_ADDR, unless TRUSTED_PROXY_COUNT reverse proxies stand in front: each appends the address it received
    the request from to X-Forwarded-For, so the caller is the entry that many places from the right (the one the
    outermost proxy wrote). Entries further left are whatever the client sent and are never read, so a client
    cannot choose the address it is counted under. A request with fewer entries did not come through the proxies
    and is counted by REMOTE_ADDR."""
    candidate = request.META.get("REMOTE_ADDR", "")
    proxies = settings.TRUSTED_PROXY_COUNT
    if proxies > 0:
        hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
        if len(hops) >= proxies and hops[-1]:
            candidate = hops[-proxies]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return None


def _with_article(phrase: str) -> str:
    return f"{'an' if phrase[0] in 'aeiou' else 'a'} {phrase}"


def _role_phrase(roles) -> str:
    ordered = [role for role in Role.values if role in roles]
    if len(ordered) == 1:
        return ordered[0]
    return ", ".join(ordered[:-1]) + " or " + ordered[-1]


def authenticate_api_key(request) -> ApiKey:
    """The caller's key from `x-api-key`; 401 when missing, malformed, unknown, revoked or of an
    environment this deployment does not accept; 429 after too many failures from one network."""
    raw_key = request.META.get("HTTP_X_API_KEY", "").strip()
    ip = client_ip(request)
    if not raw_key:
        hint = " (the Authorization header is not used for API keys)" if request.META.get("HTTP_AUTHORIZATION") else ""
        raise Unauthorized(f"Missing API key: send it in the x-api-key header{hint}.")
    if not is_well_formed(raw_key):
        record_auth_failure(ip)
        raise Unauthorized("Malformed API key: keys look like svc_sk_test_... or svc_pk_live_....")
    try:
        # Once more on a new connection when the kept one fails: PostgreSQL dropped the process's idle connection
        # (a restart, a failover), which is no reason for a 503; a server still down fails the retry at once.
        key = retry_while_reconnecting(lambda: api_key_find(raw_key), seconds=0)
    except DatabaseError:
        logger.warning("API key lookup failed", exc_info=True)
        raise AuthUnavailable("The API key could not be checked because of a fault on our side; retry later.",
                              headers={"Retry-After": "5"})
    if key is None:
        record_auth_failure(ip)
        raise Unauthorized("Invalid API key.")
    if key.revoked_at is not None:
        record_auth_failure(ip)
        raise KeyRevoked(f"This API key was revoked at {key.revoked_at.isoformat().replace('+00:00', 'Z')}.")
    if key.environment not in settings.API_KEY_ENVIRONMENTS:
        record_auth_failure(ip)
        raise Unauthorized(f"This deployment does not accept {key.environment} keys.")
    return key  # the caller admits it (`admit_key`: rate count, failures cleared)


def effective_role(key: ApiKey) -> str:
    # A legal key acts as the legal role whoever minted it (spec §5: it reaches every matters endpoint).
    return Role.LEGAL if key.scope == KeyScope.LEGAL else key.role


def check_key_policy(view, method: str, key: ApiKey) -> None:
    """Key type, scope and role limits of spec §5 for one request."""
    is_write = method not in SAFE_METHODS
    if key.key_type == KeyType.PUBLISHABLE:
        if view.allow_publishable and not is_write:
            return
        error = Unauthorized if view.publishable_status == 401 else Forbidden
        raise error(PUBLISHABLE_MESSAGE)
    scopes = view.write_scopes if is_write else view.read_scopes
    if key.scope not in scopes:
        raise Forbidden(SCOPE_MESSAGES.get(key.scope, "This key cannot reach this route."))
    roles = view.write_roles if is_write else view.read_roles
    if roles is not None and effective_role(key) not in roles:
        raise Forbidden(f"This request needs a key of {_with_article(_role_phrase(roles))} user; "
                        f"this key belongs to {_with_article(effective_role(key))}.")


class OrgApiView(APIView):
    """Base of every /v1 view that takes an API key."""

    allow_publishable = False  # only /v1/verify and /v1/me/key
    publishable_status = 403  # portal sessions answer 401
    read_scopes = frozenset({KeyScope.FULL})
    write_scopes = frozenset({KeyScope.FULL})
    read_roles = None  # None: any member role
    write_roles = None
    schema = ApiKeySchema()  # the x-api-key security scheme and the key policy's errors in OpenAPI

    api_key: ApiKey | None = None

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        key = authenticate_api_key(request)
        self.api_key = key
        self.book = key.book
        self.organization = key.organization
        admit_key(key.id, client_ip(request))
        check_key_policy(self, request.method, key)
        if request.method in BODY_METHODS:
            # Every body is parsed and checked at the one boundary (core/api_json.py), whether or not the
            # view reads it: a malformed or unstorable body is a 4xx on every write route, never ignored. (A
            # DELETE's body means nothing in HTTP and no DELETE route reads one.)
            request.data  # noqa: B018

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if self.api_key is not None:
            buffer.append(LogEntry(
                organization_id=self.api_key.organization_id, api_key_id=self.api_key.id,
                method=request.method, path=loggable_path(request.path), status=response.status_code,
                ip=client_ip(request), created_at=clock.now(),
            ))
        return response

    @property
    def created_by(self) -> str:
        """Who made a record through the API: `api-key:<key id>`."""
        return f"api-key:{self.api_key.id}"
