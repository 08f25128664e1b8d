"""The composition root of URLs: every app's API under /v1, the hosted pages and the console."""
from django.contrib import admin
from django.urls import include, path, re_path
from drf_spectacular.views import (
    SpectacularJSONAPIView, SpectacularRedocView, SpectacularSwaggerView, SpectacularYAMLAPIView,
)

from billing.urls import recording_patterns
from core import views as core_views

# The API reference: the OpenAPI schema and two readers of it, open to anyone (no API key).
docs_patterns = [
    path("openapi.json", SpectacularJSONAPIView.as_view(), name="openapi-json"),
    path("openapi.yaml", SpectacularYAMLAPIView.as_view(), name="openapi-yaml"),
    path("docs", SpectacularSwaggerView.as_view(url_name="openapi-json"), name="swagger-ui"),
    path("redoc", SpectacularRedocView.as_view(url_name="openapi-json", template_name="api_docs/redoc.html"),
         name="redoc"),
]

api_patterns = [
    *recording_patterns,
    *docs_patterns,
    path("", include("accounts.urls")),
    path("", include("jobs.urls")),
    path("", include("webhooks.urls")),
    path("", include("catalog.urls")),
    path("", include("customers.urls")),
    path("", include("matters.urls")),
    path("", include("billing.urls")),
    path("", include("analytics.urls")),
    path("", include("controls.urls")),
    path("", include("portal.urls")),
]

# /healthz and /readyz are answered by core.middleware.HealthProbeMiddleware.
urlpatterns = [
    path("v1/", include(api_patterns)),
    path("admin/", admin.site.urls),
    path("", core_views.home, name="home"),
    path("favicon.ico", core_views.favicon, name="favicon"),
    path("", include("portal.page_urls")),
    # Unknown URLs answer JSON 404 even with DEBUG on.
    re_path(r"^(?!admin/|static/).*$", core_views.json_not_found),
]

handler400 = "core.views.json_bad_request"
handler404 = "core.views.json_not_found"
handler500 = "core.views.json_server_error"
