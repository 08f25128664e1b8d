"""The composition root of URLs: every app's API under /v1, the hosted pages and the console."""
from django.contrib import admin
from django.urls import include, path, re_path

from config.core import views as core_views

api_patterns = [
    path("", include("config.accounts.urls")),
    path("", include("catalog.urls")),
    path("", include("customers.urls")),
    path("", include("matters.urls")),
    path("", include("billing.urls")),
    path("", include("controls.urls")),
    path("", include("portal.urls")),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", core_views.healthz),
    path("readyz", core_views.readyz),
    path("v1/", include(api_patterns)),
    # Unknown URLs answer JSON 404 even with DEBUG on.
    re_path(r"^(?!admin/|static/).*$", core_views.json_not_found),
]

handler404 = "config.core.views.json_not_found"
handler500 = "config.core.views.json_server_error"
