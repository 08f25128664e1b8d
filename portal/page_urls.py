"""Hosted HTML pages, outside /v1 (links in emails)."""
from django.urls import path

from portal import views

urlpatterns = [
    path("pay/<str:token>", views.pay_page, name="pay"),
]
