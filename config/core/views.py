"""Unauthenticated process endpoints and the JSON answers for unknown URLs."""
from django.conf import settings
from django.core.cache import cache
from django.db import connection
from django.http import JsonResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt

from config.core.logs import redact


def home(request):
    """The root URL: a page for a person who opens the server in a browser, linking the API reference and
    the console."""
    return render(request, "home/index.html", {"redis": bool(settings.REDIS_URL)})


def healthz(request):
    """The process is up (no dependency is checked)."""
    return JsonResponse({"status": "ok"})


def readyz(request):
    """Ready to serve: the database answers and, when configured, Redis answers."""
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
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse({"status": "ok" if ready else "unavailable", "checks": checks}, status=200 if ready else 503)


@csrf_exempt  # an unknown URL is a JSON 404 for every method, never a CSRF page
def json_not_found(request, exception=None):
    # The path may hold a key or a link token (a mistyped link): echoed redacted, like in the logs.
    return JsonResponse({"message": f"Not found: {redact(request.path)}"}, status=404)


def json_server_error(request):
    return JsonResponse({"message": "Internal server error."}, status=500)
