"""Every route the URL conf serves under /v1, found by walking it (includes followed recursively)."""
import re

from django.urls import URLResolver, get_resolver

# The reference itself: served under /v1 but not part of the API it describes.
DOCUMENTATION_ROUTES = {"/v1/openapi.json", "/v1/openapi.yaml", "/v1/docs", "/v1/redoc"}


def url_routes(patterns, prefix=""):
    """(OpenAPI-style path, view callback) for every URL pattern, following includes recursively."""
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            yield from url_routes(pattern.url_patterns, route)
        else:
            yield openapi_path(route), pattern.callback


def openapi_path(route: str) -> str:
    route = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)  # path("x/<uuid:id>") -> x/{id}
    route = re.sub(r"\(\?P<(\w+)>[^)]*\)", r"{\1}", route)  # re_path named groups
    return "/" + route.replace("^", "").replace("$", "")


def view_methods(callback) -> list[str]:
    view_class = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if view_class is None:
        return ["(a function view: not a DRF view, so never in the schema)"]
    return [method for method in view_class.http_method_names
            if method not in ("options", "head") and hasattr(view_class, method)]


def api_routes():
    """Every (path, view class, method) that the URL conf serves under /v1, the reference pages aside."""
    for path, callback in url_routes(get_resolver().url_patterns):
        if path.startswith("/v1/") and path not in DOCUMENTATION_ROUTES:
            for method in view_methods(callback):
                yield path, getattr(callback, "cls", None), method
