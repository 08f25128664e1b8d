"""Templated emails: a plain-text body with an HTML alternative, rendered from `<template>.txt` and `.html`."""
from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string


def send_templated(*, template: str, to: list[str], subject: str, context: dict) -> None:
    """Render `<template>.txt` and `<template>.html` (paths under an app's templates/) and send them as one
    message; nothing is sent without recipients."""
    if not to:
        return
    text = render_to_string(f"{template}.txt", context)
    html = render_to_string(f"{template}.html", context)
    message = EmailMultiAlternatives(subject=subject, body=text, from_email=settings.DEFAULT_FROM_EMAIL, to=to)
    message.attach_alternative(html, "text/html")
    message.send()
