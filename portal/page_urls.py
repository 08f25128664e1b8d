"""Hosted HTML pages, outside /v1 (links in emails and in portal sessions)."""
from django.urls import path

from portal import pages

urlpatterns = [
    path("pay/", pages.pay_without_link, name="pay-without-link"),
    path("pay/<str:token>", pages.pay_page, name="pay"),
    path("portal/", pages.portal_without_link, name="portal-without-link"),
    path("portal/s/", pages.portal_home, name="portal-home"),
    path("portal/s/profile", pages.portal_profile, name="portal-profile"),
    path("portal/s/invoices/<uuid:invoice_id>/pdf", pages.portal_invoice_pdf, name="portal-invoice-pdf"),
    path("portal/s/invoices/<uuid:invoice_id>/pay", pages.portal_invoice_pay, name="portal-invoice-pay"),
    path("portal/s/sign-out", pages.portal_sign_out, name="portal-sign-out"),
    path("portal/<str:token>", pages.portal_open, name="portal-open"),
]
