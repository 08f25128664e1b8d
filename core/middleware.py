"""Outermost middleware: request ids with the access log line, the health probes and the body size limit."""
import logging
import re
import time
import uuid

from django.conf import settings
from django.http import JsonResponse

from core import views
from core.chunked_bodies import refusal_error
from core.errors import body_too_large
from core.logs import current_request_id, redact

access_logger = logging.getLogger("billing.access")

# An incoming X-Request-ID is kept when it is a plain token (a UUID, a trace id); anything else, such
# as free text or something shaped like an API key (underscores), is replaced by a fresh id.
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:-]{0,127}")


class RequestIdMiddleware:
    """Gives every request an id (`request.request_id`, on every log record, echoed as `X-Request-ID`)
    and writes one access line per request with method, path, status and duration."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        incoming = request.headers.get("X-Request-ID", "").strip()
        request_id = incoming if SANE_REQUEST_ID.fullmatch(incoming) else uuid.uuid4().hex
        request.request_id = request_id
        token = current_request_id.set(request_id)
        started = time.monotonic()
        try:
            response = self.get_response(request)
            response["X-Request-ID"] = request_id
            duration_ms = round((time.monotonic() - started) * 1000, 1)
            path = redact(request.path)
            access_logger.log(
                logging.ERROR if response.status_code >= 500 else logging.INFO,
                "%s %s %s", request.method, path, response.status_code,
                extra={"method": request.method, "path": path, "status": response.status_code,
                       "duration_ms": duration_ms},
            )
            return response
        finally:
            current_request_id.reset(token)


PROBES = {"/healthz": views.healthz, "/readyz": views.readyz}


class HealthProbeMiddleware:
    """Answers /healthz and /readyz before host validation and the HTTPS redirect: load balancers,
    orchestrators and the container HEALTHCHECK probe by address over plain HTTP."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        probe = PROBES.get(request.path_info)
        return probe(request) if probe else self.get_response(request)


class RequestBodyLimitMiddleware:
    """A body longer than DATA_UPLOAD_MAX_MEMORY_SIZE (REQUEST_BODY_MAX_BYTES) is answered 413 from its
    Content-Length, before any of it is read, on every route (API, pages and admin alike); so is a chunked body
    the WSGI wrapper could not pass on (core/chunked_bodies.py: 413, 411 or 400)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        refused = refusal_error(request.META)
        if refused is not None:
            return JsonResponse(refused.body(), status=refused.status)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0  # Django reads no body then
        if limit is not None and length > limit:
            error = body_too_large()
            return JsonResponse(error.body(), status=error.status)
        return self.get_response(request)


# The Content-Security-Policy of HTML pages (the portal, pay-now, the console and admin, the home page): scripts
# only from this origin (no page has an inline one), nothing from another origin but Stripe Checkout as where a
# pay-now form may lead, never framed. Styles may be inline: the portal's and the console's stylesheets are, and
# so are Django admin's style attributes and the charts' bar widths.
PAGE_POLICY = "; ".join([
    "default-src 'self'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
    "font-src 'self'", "connect-src 'self'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'",
    "form-action 'self' https://checkout.stripe.com",
])
# The API reference (Swagger UI, ReDoc; served locally) starts with an inline script and ReDoc searches in a worker
# made from a blob: URL. Those pages show no customer data and carry no secret of the service's.
REFERENCE_POLICY = PAGE_POLICY.replace("script-src 'self'", "script-src 'self' 'unsafe-inline'") + \
    "; worker-src 'self' blob:"
REFERENCE_PATHS = frozenset({"/v1/docs", "/v1/redoc"})


class ContentSecurityPolicyMiddleware:
    """Sends PAGE_POLICY (REFERENCE_POLICY on the API reference) with every HTML answer that has no policy of its
    own; JSON, CSV and PDF answers run nothing and get none."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.get("Content-Type", "").startswith("text/html") and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = (REFERENCE_POLICY if request.path_info in REFERENCE_PATHS
                                                   else PAGE_POLICY)
        return response


class KeptConnectionCheckMiddleware:
    """A kept database connection that the server dropped (a restart, a failover) fails the first query that uses
    it. A request with an API key runs its key's lookup again on a new connection (accounts/api.py); every other
    request (hosted pages, the console, Stripe's webhooks) checks a kept connection first and replaces a dropped
    one, instead of answering 503 once in each web process after every restart. Django's CONN_HEALTH_CHECKS does
    the same check for every request, usage batches included: a round trip each on the hot path."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if "HTTP_X_API_KEY" not in request.META:
            from django.db import connection

            if connection.connection is not None and not connection.in_atomic_block and not connection.is_usable():
                connection.close()  # the request's first query opens a new one
        return self.get_response(request)


class DatabaseUnavailableMiddleware:
    """A view that fails because the database does not answer (down, restarting) answers 503, JSON for the API
    and a short page for hosted pages and the console, never a 500 or Django's debug page: the API's own handler
    (core/errors.py) says the same for /v1, and `handler500` (core/views.py) for errors outside
    views."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        from core.views import database_unavailable, unavailable_response

        if database_unavailable(exception):
            logging.getLogger("billing.errors").warning("database unavailable: %s on %s", exception.__class__.__name__,
                                                        request.path)
            return unavailable_response(request)
        return None
