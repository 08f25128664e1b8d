"""Unauthenticated process endpoints and the JSON answers for unknown URLs and unhandled errors."""
import sys

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.cache import cache
from django.db import InterfaceError, OperationalError, connection
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt

from core.logs import redact


def home(request):
    """The root URL: a page for a person who opens the server in a browser, linking the API reference and
    the console."""
    return render(request, "home/index.html", {"redis": bool(settings.REDIS_URL)})


# The tab icon of the console, the portal and every other page: browsers ask each origin for /favicon.ico, and a
# 404 there is an error on the browser console of every page.
ICON_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" '
            'fill="#417690"/><text x="16" y="23" font-family="sans-serif" font-size="20" font-weight="bold" '
            'text-anchor="middle" fill="#fff">$</text></svg>')


def favicon(request):
    response = HttpResponse(ICON_SVG, content_type="image/svg+xml")
    response["Cache-Control"] = "public, max-age=86400"
    return response


def healthz(request):
    """The process is up (no dependency is checked)."""
    return JsonResponse({"status": "ok"})


def readyz(request):
    """Ready to serve: the database answers. Redis, when configured, is reported but does not decide: without it
    the service still records, bills and answers (its cache misses, its tasks wait for their sweeps,
    docs/decisions/reliability.md), so a Redis outage must not take every instance out of the load balancer at
    once. It answers "degraded" then."""
    checks = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception:
        checks["database"] = "unavailable"
    if settings.REDIS_URL:
        try:
            cache.set("readyz", "1", 5)
            checks["redis"] = "ok" if cache.get("readyz") == "1" else "unavailable"
        except Exception:
            checks["redis"] = "unavailable"
    if checks["database"] != "ok":
        return JsonResponse({"status": "unavailable", "checks": checks}, status=503)
    return JsonResponse({"status": "ok" if all(value == "ok" for value in checks.values()) else "degraded",
                         "checks": checks})


@csrf_exempt  # an unknown URL is a JSON 404 for every method, never a CSRF page
def json_not_found(request, exception=None):
    # The path may hold a key or a link token (a mistyped link): echoed redacted, like in the logs.
    return JsonResponse({"message": f"Not found: {redact(request.path)}"}, status=404)


@csrf_exempt
def json_bad_request(request, exception=None):
    """Django's answer to a request it refuses before any view (handler400): a Host header the deployment does not
    serve (ALLOWED_HOSTS), a malformed multipart body, too many form fields. JSON on every route, like the 404,
    rather than Django's HTML page."""
    if isinstance(exception, DisallowedHost):
        return JsonResponse({"message": "Bad request: this service does not answer to the Host header sent."},
                            status=400)
    return JsonResponse({"message": "Bad request."}, status=400)


def json_server_error(request):
    """Django's answer to an exception no view handled (handler500), called while the exception is handled. A
    database that does not answer is a 503 for every route, not only /v1 (whose DRF handler says the same): a
    hosted page or the console says so in a page, the API in JSON."""
    if database_unavailable(sys.exc_info()[1]):
        return unavailable_response(request)
    return JsonResponse({"message": "Internal server error."}, status=500)


def database_unavailable(error: BaseException | None) -> bool:
    """The database cannot be reached (down, restarting, refusing connections), as opposed to a query's fault."""
    return isinstance(error, (OperationalError, InterfaceError))


UNAVAILABLE_PAGE = ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Temporarily unavailable"
                    "</title></head><body style=\"font-family: sans-serif; max-width: 36rem; margin: 4rem auto\">"
                    "<h1>Temporarily unavailable</h1><p>This page cannot be shown right now because the billing "
                    "database is not answering. Nothing you did caused this; please try again in a minute.</p>"
                    "</body></html>")


def unavailable_response(request) -> HttpResponse:
    if request.path.startswith("/v1/") or "application/json" in request.headers.get("Accept", ""):
        response = JsonResponse({"message": "The database is unavailable; retry later.",
                                 "code": "service_unavailable"}, status=503)
    else:
        response = HttpResponse(UNAVAILABLE_PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = "5"
    return response
