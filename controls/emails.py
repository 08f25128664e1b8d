"""Emails of spend controls and watches: a plain-text body with an HTML alternative, from templates."""
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from config.accounts.models import Membership, Organization, Role

TEMPLATE_DIR = "controls/email"


def send_templated(*, template: str, to: list[str], subject: str, context: dict) -> None:
    """Render `<template>.txt` and `<template>.html` and send them as one message."""
    if not to:
        return
    text = render_to_string(f"{TEMPLATE_DIR}/{template}.txt", context)
    html = render_to_string(f"{TEMPLATE_DIR}/{template}.html", context)
    message = EmailMultiAlternatives(subject=subject, body=text, from_email=settings.DEFAULT_FROM_EMAIL, to=to)
    message.attach_alternative(html, "text/html")
    message.send()


def billing_recipients(organization: Organization) -> list[str]:
    """The organization's billing email when set, otherwise every owner and finance member (spec §6)."""
    if organization.billing_email:
        return [organization.billing_email]
    return sorted(Membership.objects.filter(organization=organization, role__in=[Role.OWNER, Role.FINANCE])
                  .values_list("user__email", flat=True))
